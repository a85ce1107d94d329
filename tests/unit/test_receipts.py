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
