"""Signed receipts of a RecordErasure: what was found where, and when it was gone.

A receipt is a JSON document signed with Ed25519. It is signed over its canonical JSON
(sorted keys, no spaces, UTF-8), which holds only strings, integers, booleans, null,
lists and objects: no floats, whose text form differs between languages, so any verifier
re-deriving the bytes gets the same ones. The signature carries its public key and that
key's id; `verify` checks against that embedded key, or against a key the caller trusts.

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


class ReceiptError(ValueError):
    """A document that cannot be a receipt, or a signing key that cannot sign one. The
    message never holds key material."""


def canonical_json(doc: Mapping[str, Any]) -> bytes:
    """The bytes a receipt is signed over. Refuses floats (and any other type JSON has no
    single spelling for) rather than sign bytes another verifier would spell otherwise."""
    _check(doc, "receipt")
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _check(value: Any, where: str) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ReceiptError(f"{where}: a key is a {type(key).__name__}, not a string")
            _check(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check(item, f"{where}[{i}]")
    elif isinstance(value, float):
        raise ReceiptError(f"{where}: a float has no canonical JSON form; use an integer")
    elif value is not None and not isinstance(value, str | int | bool):
        raise ReceiptError(f"{where}: a {type(value).__name__} is not JSON")


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
        return f"the receipt's SHA-256 is {digest}, not the {signed.get('sha256')} it states"
    if signature.get("algorithm") != ALGORITHM:
        return f"the signature's algorithm is {signature.get('algorithm')!r}, not {ALGORITHM}"
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
