r"""Signed receipts of a RecordErasure: what was found where, and when it was gone.

A receipt is a JSON document signed with Ed25519 over its canonical form, which a
verifier in any language rebuilds from the parsed document by these rules:

- values are objects, arrays, strings, integers, true, false and null only: no floats
  (whose text differs between languages); integers lie within +-(2**53 - 1), so that a
  verifier parsing numbers as doubles reads them exactly, and are written in decimal
  without a plus sign, exponent or leading zero;
- object member names are ASCII, and members are written sorted by name (so code-point
  and UTF-16 order agree), each name once;
- no whitespace: "," between items, ":" after a name;
- strings are written as given, never Unicode-normalized, in UTF-8, escaping only '"'
  and '\' (with a backslash) and U+0000..U+001F (\b \t \n \f \r, the others as
  \u00xx, lowercase hex); everything else, U+007F, U+2028 and non-ASCII included, is
  the character itself. A string holding a lone surrogate has no UTF-8 form and is refused.

For such documents this is RFC 8785 (JSON Canonicalization Scheme) and JavaScript's
JSON.stringify of the members in sorted order. The signature carries its public key and
that key's id; `verify` checks against that embedded key, or against a key the caller
trusts. `parse_signed` reads a receipt file refusing a member named twice, which a
lenient JSON reader would silently resolve to one of its values.

Receipts name keys by their SHA-256 digests only, like everything else an erasure writes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KIND = "RecordErasureReceipt"
VERSION = 1
ALGORITHM = "Ed25519"
# The signing Secret's data keys: a PKCS#8 PEM private key, or the 32-byte seed.
PEM_KEY = "ed25519.pem"
SEED_KEY = "ed25519.seed"
SEED_BYTES = 32
# The integers a double holds exactly (JavaScript's Number.MAX_SAFE_INTEGER).
MAX_INTEGER = 2**53 - 1


class ReceiptError(ValueError):
    """A document that cannot be a receipt, or a signing key that cannot sign one. The
    message never holds key material."""


def canonical_json(doc: Mapping[str, Any]) -> bytes:
    """The bytes a receipt is signed over: its canonical form (the module docstring's
    rules). Refuses what those rules cannot spell one way (a float, an integer beyond
    +-(2**53 - 1), a member name that is not ASCII, a lone surrogate) rather than sign
    bytes another verifier would spell otherwise."""
    if not _plainly_canonical(doc):
        _check(doc, "receipt")
    # ensure_ascii=False: UTF-8 as given, with json's escapes being exactly those above.
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _plainly_canonical(value: Any) -> bool:
    """Whether `value` has a canonical form: _check's rules, without naming where a
    problem is. Why two walks: _check spells each member's path as it goes, and the
    receipt of an erasure of 10,000 digests has 1.6 million members, whose paths took
    most of the time of building, signing and verifying it (each one walks it). When
    this says no, _check walks again to name the problem."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not -MAX_INTEGER <= item <= MAX_INTEGER:
                return False
        elif isinstance(item, dict | Mapping):  # dict first: Mapping's own check is slow
            for key in item:
                if not isinstance(key, str) or not key.isascii():
                    return False
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
        else:
            return False  # a float, or no JSON value at all
    return True


def _check(value: Any, where: str) -> None:
    # `where` quotes member names only once they are known to be ASCII, so that a
    # reason stays printable whatever a tampered file holds.
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ReceiptError(f"{where}: a key is a {type(key).__name__}, not a string")
            if not key.isascii():
                raise ReceiptError(f"{where}: a member name is not ASCII")
            _check(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check(item, f"{where}[{i}]")
    elif isinstance(value, float):
        raise ReceiptError(f"{where}: a float has no canonical JSON form; use an integer")
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int):
        if abs(value) > MAX_INTEGER:
            raise ReceiptError(f"{where}: an integer beyond +-(2**53 - 1) has no exact JSON form")
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ReceiptError(
                f"{where}: a string is not valid Unicode (a lone surrogate)"
            ) from None
    else:
        raise ReceiptError(f"{where}: a {type(value).__name__} is not JSON")


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            shown = name if name.isascii() and name.isprintable() else "a member"
            raise ReceiptError(f"{shown!r} is given twice in one object")
        seen[name] = value
    return seen


def parse_signed(text: str | bytes) -> Any:
    """A receipt file's JSON, refusing what a lenient reader would resolve silently: a
    member named twice (json.loads keeps the last one, so `"clusterId":"evil",
    "clusterId":"c"` would verify), NaN and Infinity, bytes that are not UTF-8."""

    def constant(name: str) -> Any:
        raise ReceiptError(f"{name} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=_unique_members, parse_constant=constant)
    except UnicodeDecodeError:
        raise ReceiptError("not UTF-8 text") from None
    except ReceiptError:
        raise
    except ValueError as err:  # json.JSONDecodeError: its message names a position only
        raise ReceiptError(f"not JSON ({err})") from None


def receipt(
    erasure: str,
    namespace: str,
    uid: str,
    cluster_id: str,
    evidence: Sequence[Mapping[str, Any]],
    completed_at: str,
    *,
    digests: Iterable[str] | None = None,
    phases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The receipt document of one erasure. `evidence`: status.evidence's entries (per
    topic, partition and digest: the tombstone and each scan), all of them, not only
    those status keeps. `digests`: every digest the spec lists (default: those in the
    evidence; a key found nowhere is still a key the receipt vouches for). `phases`: each
    phase reached and when (RFC 3339)."""
    entries = [dict(e) for e in evidence]
    listed = {str(e["digest"]) for e in entries if "digest" in e}
    doc: dict[str, Any] = {
        "kind": KIND,
        "version": VERSION,
        "resource": {
            "kind": "RecordErasure",
            "namespace": namespace,
            "name": erasure,
            "uid": uid,
        },
        "clusterId": cluster_id,
        "digests": sorted(listed if digests is None else set(digests)),
        "evidence": sorted(entries, key=_evidence_order),
        "phases": dict(phases or {}),
        "completedAt": completed_at,
    }
    canonical_json(doc)  # refused now, where it is built, not when it is signed
    return doc


def _evidence_order(entry: Mapping[str, Any]) -> tuple[str, int, str]:
    return (str(entry.get("topic", "")), int(entry.get("partition", -1)), str(entry.get("digest")))


def load_signing_key(data: Mapping[str, bytes]) -> Ed25519PrivateKey:
    """The private key in a Secret's data (decoded): `ed25519.pem` (PKCS#8 PEM, not
    encrypted) or `ed25519.seed` (the 32 raw bytes)."""
    if PEM_KEY in data:
        try:
            key = serialization.load_pem_private_key(data[PEM_KEY], password=None)
        except (ValueError, TypeError) as err:
            # cryptography's messages name the format problem, never the key bytes.
            raise ReceiptError(f"{PEM_KEY} is not an unencrypted PEM private key: {err}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ReceiptError(f"{PEM_KEY} holds a {type(key).__name__}, not an Ed25519 key")
        return key
    if SEED_KEY in data:
        seed = data[SEED_KEY]
        if len(seed) != SEED_BYTES:
            raise ReceiptError(f"{SEED_KEY} has {len(seed)} bytes, not {SEED_BYTES}")
        return Ed25519PrivateKey.from_private_bytes(seed)
    raise ReceiptError(f"the Secret has neither {PEM_KEY} nor {SEED_KEY}")


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    """The first 16 hex characters of the SHA-256 of the raw public key."""
    return hashlib.sha256(_raw(public)).hexdigest()[:16]


def public_key_pem(public: Ed25519PublicKey) -> bytes:
    """The public key as SubjectPublicKeyInfo PEM, as `verify-receipt --public-key` reads
    it (and `openssl pkey -pubout` writes it)."""
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    """A trusted public key from PEM (SubjectPublicKeyInfo)."""
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as err:
        raise ReceiptError(f"not a PEM public key: {err}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ReceiptError(f"a {type(key).__name__}, not an Ed25519 public key")
    return key


def sign(doc: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The signed receipt: the document, its SHA-256, and the signature over its
    canonical JSON with the public key to check it by."""
    payload = canonical_json(doc)
    public = key.public_key()
    return {
        "receipt": dict(doc),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "signature": {
            "algorithm": ALGORITHM,
            "keyId": key_id(public),
            "publicKey": base64.b64encode(_raw(public)).decode(),
            "value": base64.b64encode(key.sign(payload)).decode(),
        },
    }


def verify(signed: Mapping[str, Any], trusted: Ed25519PublicKey | None = None) -> str | None:
    """None when the receipt is intact and signed by its embedded key (and that key is
    `trusted`, when given); otherwise why not. Without `trusted` this proves integrity
    only: anyone can sign with a key of their own."""
    doc = signed.get("receipt")
    signature = signed.get("signature")
    if not isinstance(doc, Mapping) or not isinstance(signature, Mapping):
        return "not a signed receipt: it needs receipt and signature objects"
    if doc.get("kind") != KIND or doc.get("version") != VERSION:
        return f"not a {KIND} version {VERSION}"
    try:
        payload = canonical_json(doc)
    except ReceiptError as err:
        return f"the receipt cannot be canonical JSON ({err})"
    digest = hashlib.sha256(payload).hexdigest()
    if signed.get("sha256") != digest:
        return f"the receipt's SHA-256 is {digest}, not the {signed.get('sha256')!a} it states"
    if signature.get("algorithm") != ALGORITHM:
        return f"the signature's algorithm is {signature.get('algorithm')!a}, not {ALGORITHM}"
    try:
        raw_key = base64.b64decode(str(signature.get("publicKey")), validate=True)
        value = base64.b64decode(str(signature.get("value")), validate=True)
        public = Ed25519PublicKey.from_public_bytes(raw_key)
    except (binascii.Error, ValueError):
        return "the signature's publicKey or value is not base64 of an Ed25519 key/signature"
    if signature.get("keyId") != key_id(public):
        return f"the signature's keyId is not {key_id(public)}, its public key's id"
    if trusted is not None and _raw(trusted) != raw_key:
        return f"signed by key {key_id(public)}, not by the trusted key {key_id(trusted)}"
    try:
        public.verify(value, payload)
    except InvalidSignature:
        return "the signature does not match the receipt: it was changed after signing"
    return None
