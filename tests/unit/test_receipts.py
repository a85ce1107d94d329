"""Erasure receipts: canonical JSON, Ed25519 signing and verifying, and the signing key
as a Secret holds it."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kafka_retention.core import receipts
from kafka_retention.core.receipts import (
    ReceiptError,
    canonical_json,
    key_id,
    load_public_key,
    load_signing_key,
    public_key_pem,
    receipt,
    sign,
    verify,
)

SEED = bytes(range(32))
KEY = Ed25519PrivateKey.from_private_bytes(SEED)
DIGEST = hashlib.sha256(b"customer-42").hexdigest()


def evidence() -> list[dict[str, Any]]:
    return [
        {
            "topic": "customers",
            "partition": 2,
            "digest": DIGEST,
            "tombstone": {"offset": 41, "timestamp": "2026-11-29T03:00:01Z"},
            "scans": [
                {"phase": "Scanning", "at": "2026-11-29T03:00:00Z", "matches": 3},
                {"phase": "KeyErased", "at": "2026-11-29T03:00:40Z", "matches": 0},
            ],
        },
        {"topic": "customers", "partition": 0, "digest": DIGEST, "scans": []},
    ]


def document() -> dict[str, Any]:
    return receipt(
        "forget-42",
        "team-a",
        "0b7c-uid",
        "abcDEF123_-xyz",
        evidence(),
        "2026-11-29T03:00:41Z",
        phases={"Tombstoned": "2026-11-29T03:00:01Z", "KeyErased": "2026-11-29T03:00:40Z"},
    )


def test_canonical_json_is_the_same_whatever_the_key_order() -> None:
    a = {"b": 1, "a": {"y": "é", "x": [1, 2]}}
    b = {"a": {"x": [1, 2], "y": "é"}, "b": 1}
    assert canonical_json(a) == canonical_json(b) == '{"a":{"x":[1,2],"y":"é"},"b":1}'.encode()


@pytest.mark.parametrize("doc", [{"ratio": 0.5}, {"list": [1, 2.0]}, {"deep": {"x": 1e3}}])
def test_canonical_json_refuses_floats(doc: dict[str, Any]) -> None:
    with pytest.raises(ReceiptError, match="float"):
        canonical_json(doc)


def test_the_receipt_document_names_the_resource_cluster_digests_and_phases() -> None:
    doc = document()
    assert doc["kind"] == "RecordErasureReceipt"
    assert doc["version"] == 1
    assert doc["resource"] == {
        "kind": "RecordErasure",
        "namespace": "team-a",
        "name": "forget-42",
        "uid": "0b7c-uid",
    }
    assert doc["clusterId"] == "abcDEF123_-xyz"
    assert doc["digests"] == [DIGEST]
    # In partition order, whatever order status held them in.
    assert [e["partition"] for e in doc["evidence"]] == [0, 2]
    assert doc["phases"]["KeyErased"] == "2026-11-29T03:00:40Z"
    assert doc["completedAt"] == "2026-11-29T03:00:41Z"


def test_a_digest_found_nowhere_is_still_in_the_receipt() -> None:
    other = hashlib.sha256(b"nowhere").hexdigest()
    doc = receipt("e", "ns", "u", "c", [], "2026-11-29T03:00:41Z", digests=[other])
    assert doc["digests"] == [other]
    assert doc["evidence"] == []


def test_a_receipt_with_a_float_is_refused_when_built() -> None:
    with pytest.raises(ReceiptError):
        receipt("e", "ns", "u", "c", [{"topic": "t", "partition": 0, "took": 1.5}], "now")


def test_a_signed_receipt_verifies_against_its_key_and_the_trusted_one() -> None:
    signed = sign(document(), KEY)
    assert verify(signed) is None
    assert verify(signed, trusted=KEY.public_key()) is None
    assert signed["signature"]["algorithm"] == "Ed25519"
    assert signed["signature"]["keyId"] == key_id(KEY.public_key())
    assert signed["sha256"] == hashlib.sha256(canonical_json(document())).hexdigest()


def test_a_signed_receipt_survives_a_json_round_trip() -> None:
    signed = sign(document(), KEY)
    assert verify(json.loads(json.dumps(signed, indent=2))) is None


def test_one_changed_evidence_field_fails_verification() -> None:
    signed = sign(document(), KEY)
    tampered = copy.deepcopy(signed)
    tampered["receipt"]["evidence"][1]["scans"][1]["matches"] = 1
    why = verify(tampered)
    assert why is not None
    assert "SHA-256" in why
    # Even with the stated SHA-256 made to match, the signature does not.
    tampered["sha256"] = hashlib.sha256(canonical_json(tampered["receipt"])).hexdigest()
    why = verify(tampered)
    assert why is not None
    assert "signature" in why


def test_a_receipt_signed_by_another_key_fails_against_the_trusted_key() -> None:
    other = Ed25519PrivateKey.from_private_bytes(bytes(32))
    forged = sign(document(), other)
    assert verify(forged) is None  # intact, but by whom?
    why = verify(forged, trusted=KEY.public_key())
    assert why is not None
    assert key_id(KEY.public_key()) in why


def test_a_swapped_public_key_fails() -> None:
    signed = sign(document(), KEY)
    other = sign(document(), Ed25519PrivateKey.from_private_bytes(bytes(32)))
    signed["signature"]["publicKey"] = other["signature"]["publicKey"]
    signed["signature"]["keyId"] = other["signature"]["keyId"]
    assert verify(signed) is not None


@pytest.mark.parametrize("broken", [{}, {"receipt": {}, "signature": {}}, {"receipt": "x"}])
def test_what_is_not_a_signed_receipt_is_said_so(broken: dict[str, Any]) -> None:
    assert verify(broken) is not None


def test_a_pem_secret_and_a_seed_secret_load_the_same_key() -> None:
    pem = KEY.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    from_pem = load_signing_key({receipts.PEM_KEY: pem})
    from_seed = load_signing_key({receipts.SEED_KEY: SEED})
    assert (
        key_id(from_pem.public_key()) == key_id(from_seed.public_key()) == key_id(KEY.public_key())
    )


@pytest.mark.parametrize(
    "data",
    [
        {},
        {receipts.SEED_KEY: SEED[:31]},
        {receipts.PEM_KEY: b"-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"},
        {
            receipts.PEM_KEY: generate_private_key(SECP256R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        },
    ],
    ids=["empty", "short-seed", "bad-pem", "ec-key"],
)
def test_a_secret_without_a_usable_ed25519_key_is_refused_without_its_bytes(
    data: dict[str, bytes],
) -> None:
    with pytest.raises(ReceiptError) as refused:
        load_signing_key(data)
    assert SEED[:31].hex() not in str(refused.value)


def test_a_public_key_round_trips_through_pem() -> None:
    pem = public_key_pem(KEY.public_key())
    assert key_id(load_public_key(pem)) == key_id(KEY.public_key())
    with pytest.raises(ReceiptError):
        load_public_key(b"not pem")


# --- a receipt file as an auditor receives it: tampered, possibly hostile ----------------


def _tampered_text(old: str, new: str) -> str:
    text = json.dumps(sign(document(), KEY))
    assert old in text
    return text.replace(old, new, 1)


def test_a_lone_surrogate_in_a_tampered_receipt_is_a_reason_not_a_crash() -> None:
    # "\udc80" is valid JSON text that no UTF-8 encoder accepts.
    tampered = json.loads(_tampered_text('"clusterId": "abcDEF123_-xyz"', '"clusterId": "\\udc80"'))
    why = verify(tampered)
    assert why is not None
    assert "Unicode" in why
    why.encode("ascii")  # the reason itself is printable anywhere


def test_a_lone_surrogate_in_a_member_name_is_not_quoted_back() -> None:
    tampered = json.loads(_tampered_text('"uid": "0b7c-uid"', '"\\udc80": "0b7c-uid"'))
    why = verify(tampered)
    assert why is not None
    why.encode("utf-8")


def test_duplicate_members_are_refused_when_a_receipt_is_read() -> None:
    text = _tampered_text(
        '"clusterId": "abcDEF123_-xyz"', '"clusterId": "evil", "clusterId": "abcDEF123_-xyz"'
    )
    assert verify(json.loads(text)) is None  # what json.loads makes of it: the last one wins
    with pytest.raises(ReceiptError, match=r"clusterId.*twice"):
        receipts.parse_signed(text)
    # Anywhere in the document, the signature's members too.
    text = _tampered_text('"algorithm": "Ed25519"', '"algorithm": "x", "algorithm": "Ed25519"')
    with pytest.raises(ReceiptError, match="twice"):
        receipts.parse_signed(text)


def test_a_receipt_file_reads_back_as_it_was_signed() -> None:
    signed = sign(document(), KEY)
    assert receipts.parse_signed(json.dumps(signed, indent=2)) == signed
    assert receipts.parse_signed(json.dumps(signed).encode()) == signed
    not_json: list[str | bytes] = ["nope", b"\xff\xfe", "NaN"]
    for text in not_json:
        with pytest.raises(ReceiptError):
            receipts.parse_signed(text)


def _rebuilt(value: Any) -> str:
    """The canonical form rebuilt from the module docstring's rules alone, as a verifier in
    another language would: members sorted by name, ',' and ':' with no spaces, strings with
    only '"', '\\' and U+0000..U+001F escaped (\\b \\t \\n \\f \\r short, others \\u00xx)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        short = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
        out = []
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch in short:
                out.append(short[ch])
            elif ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(value, list):
        return "[" + ",".join(_rebuilt(v) for v in value) + "]"
    members = sorted(value.items())
    return "{" + ",".join(_rebuilt(k) + ":" + _rebuilt(v) for k, v in members) + "}"


def test_the_canonical_form_is_what_the_docstring_states() -> None:
    doc = document()
    doc["resource"]["name"] = 'é "quoted" \\ tab\t nl\n bell\x07 del\x7f \u2028 𝄞 ﬁ'
    doc["evidence"][0]["flags"] = [True, False, None, -(2**53 - 1), 2**53 - 1]
    assert canonical_json(doc) == _rebuilt(doc).encode("utf-8")
    # UTF-8 as given, never normalized: U+00E9 and "e" + U+0301 stay different receipts.
    assert canonical_json({"a": "\u00e9"}) != canonical_json({"a": "e\u0301"})


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ({"n": 2**53}, "integer"),
        ({"n": -(2**53)}, "integer"),
        ({"nämlich": 1}, "ASCII"),
        ({"a": "\ud800"}, "Unicode"),
    ],
    ids=["int-above-2**53", "int-below", "non-ascii-name", "lone-surrogate"],
)
def test_what_a_verifier_elsewhere_could_not_rebuild_is_refused(
    doc: dict[str, Any], why: str
) -> None:
    with pytest.raises(ReceiptError, match=why):
        canonical_json(doc)
