"""`kafka-retention erase`, `evidence` and `verify-receipt`, called as the integrator
wires them: the printed RecordErasure holds digests and never a key, and a receipt
verifies only as signed."""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kafka_retention.cli import erase
from kafka_retention.cli.common import VERIFY_RECEIPT_DESCRIPTION, UsageError
from kafka_retention.cli.plugin import kube
from kafka_retention.core.erasure import parse_erasure_spec
from kafka_retention.core.receipts import public_key_pem, receipt, sign

EMAIL = "alice.secret@example.com"
DIGEST = hashlib.sha256(EMAIL.encode()).hexdigest()
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def erase_args(**more: Any) -> argparse.Namespace:
    given: dict[str, Any] = {
        "key": [EMAIL],
        "key_base64": [],
        "key_file": None,
        "topic": ["customers"],
        "pattern": None,
        "cluster_ref": "orders-prod",
        "name": "forget-alice",
        "namespace": "team-a",
        "dry_run": False,
        "on_delete_topics": "report",
        "accept_collateral": False,
        "max_collateral_records": None,
        "deadline": None,
        **more,
    }
    return argparse.Namespace(**given)


def trusted_key_file(tmp_path: Path) -> Path:
    """The operator's public key, as a verifier is handed it."""
    pem = tmp_path / "key.pem"
    pem.write_bytes(public_key_pem(KEY.public_key()))
    return pem


def test_the_resource_holds_the_digest_and_never_the_key() -> None:
    resource = erase.erase_resource(
        "forget-alice", "team-a", "orders-prod", ["customers"], [EMAIL.encode()], False
    )
    assert resource["kind"] == "RecordErasure"
    assert resource["metadata"] == {"name": "forget-alice", "namespace": "team-a"}
    assert resource["spec"]["keys"] == [{"sha256": DIGEST}]
    assert EMAIL not in json.dumps(resource)
    assert "alice" not in json.dumps(resource["spec"])
    # What is printed is what the operator parses.
    assert parse_erasure_spec(resource["spec"]).digests() == {DIGEST}


def test_print_erase_writes_yaml_without_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert erase.print_erase(erase_args(key_base64=[base64.b64encode(b"\x00\xff").decode()])) == 0
    out = capsys.readouterr().out
    assert out.startswith("#")
    assert EMAIL not in out
    resource = yaml.safe_load(out)
    assert {k["sha256"] for k in resource["spec"]["keys"]} == {
        DIGEST,
        hashlib.sha256(b"\x00\xff").hexdigest(),
    }


def test_the_options_reach_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    args = erase_args(
        topic=[],
        pattern="customers-.*",
        dry_run=True,
        on_delete_topics="cut",
        max_collateral_records=1200,
        deadline="7d",
        namespace=None,
    )
    assert erase.print_erase(args) == 0
    resource = yaml.safe_load(capsys.readouterr().out)
    spec = resource["spec"]
    assert spec["topics"] == {"pattern": "customers-.*"}
    assert spec["onDeleteTopics"] == "cut"
    assert spec["dryRun"] is True
    assert spec["deadline"] == "7d"
    assert spec["maxCollateralRecords"] == 1200
    assert "namespace" not in resource["metadata"]


def test_cut_without_accepting_the_collateral_is_a_usage_error_naming_the_field(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert erase.print_erase(erase_args(on_delete_topics="cut")) == 2
    captured = capsys.readouterr()
    assert "spec.acceptCollateral" in captured.err
    assert captured.out == ""
    assert erase.print_erase(erase_args(on_delete_topics="cut", accept_collateral=True)) == 0


def test_an_internal_topic_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert erase.print_erase(erase_args(topic=["__consumer_offsets"])) == 2
    assert "spec.topics.names[0]" in capsys.readouterr().err


def test_keys_come_from_text_base64_and_a_file_one_per_line(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.txt"
    keys_file.write_bytes(b"bob@example.com\r\n\ncarol@example.com\n")
    keys = erase.keys_from_args(["alice"], [base64.b64encode(b"\x01").decode()], keys_file)
    assert keys == [b"alice", b"\x01", b"bob@example.com", b"carol@example.com"]


def test_bad_base64_is_refused_by_position_not_by_value() -> None:
    with pytest.raises(UsageError) as refused:
        erase.keys_from_args([], ["YQ==", EMAIL], None)
    assert "number 2" in str(refused.value)
    assert EMAIL not in str(refused.value)


def test_a_name_that_spells_a_key_is_refused_by_position_not_by_value() -> None:
    """The name is kept in events, log lines and ConfigMap names: a user naming the
    erasure after the customer would put the key back where only digests may be."""
    keys = [b"x-1", EMAIL.encode(), b"Customer_4711"]
    with pytest.raises(UsageError) as refused:
        erase.erase_resource("forget-customer-4711", "team-a", "orders-prod", ["c"], keys, False)
    assert "key number 3" in str(refused.value)
    assert "4711" not in str(refused.value)
    assert "customer" not in str(refused.value).lower()
    # A short key is not looked for: a name may hold a number.
    erase.erase_resource("erasure-request-1042", "team-a", "orders-prod", ["c"], [b"10"], False)


def test_no_key_at_all_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert erase.print_erase(erase_args(key=[])) == 2
    assert "at least one key" in capsys.readouterr().err


def _signed() -> dict[str, Any]:
    doc = receipt(
        "forget-alice",
        "team-a",
        "uid-1",
        "cluster-1",
        [{"topic": "customers", "partition": 0, "digest": DIGEST, "scans": []}],
        "2026-11-29T03:00:41Z",
    )
    return sign(doc, KEY)


def test_verify_receipt_is_0_only_for_a_receipt_signed_by_the_trusted_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(_signed()))
    pem = trusted_key_file(tmp_path)
    assert erase.verify_receipt(path, pem) == 0
    out = capsys.readouterr().out
    assert out.startswith("valid:")
    assert "signed by the trusted key" in out


def test_verify_receipt_without_a_trusted_key_is_3_intact_signer_not_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Anyone can sign a receipt with a key of their own: intact is not valid.
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(sign(_signed()["receipt"], Ed25519PrivateKey.generate())))
    assert erase.verify_receipt(path, None) == erase.INTACT_SIGNER_NOT_CHECKED == 3
    out = capsys.readouterr().out
    assert out.startswith("intact, signer not checked:")
    assert "valid" not in out
    assert "--public-key" in out
    assert "exit 3" in VERIFY_RECEIPT_DESCRIPTION


def test_the_how_to_gives_every_exit_status_of_verify_receipt() -> None:
    how_to = (Path(__file__).parents[2] / "docs/how-to/erasure.md").read_text()
    section = how_to.split("## The receipt", 1)[1].split("\n## ", 1)[0]
    for code, output in [(0, "valid:"), (3, "intact, signer not checked:"), (1, "invalid:")]:
        assert f"| {code} | `{output} ...`" in section


def test_verify_receipt_is_1_for_a_lone_surrogate_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(_signed()).replace('"cluster-1"', '"\\udc80"'))
    assert erase.verify_receipt(path, None) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid:")
    assert "Unicode" in err


def test_verify_receipt_is_1_for_a_member_given_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # json.loads keeps the last of the two, which is the signed one: this verified.
    text = json.dumps(_signed())
    path = tmp_path / "receipt.json"
    path.write_text(text.replace('"clusterId": ', '"clusterId": "evil", "clusterId": '))
    pem = trusted_key_file(tmp_path)
    assert erase.verify_receipt(path, pem) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid:")
    assert "'clusterId' is given twice" in err


def test_verify_receipt_is_1_for_a_tampered_receipt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signed = _signed()
    signed["receipt"]["evidence"][0]["partition"] = 1
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(signed))
    assert erase.verify_receipt(path, None) == 1
    assert capsys.readouterr().err.startswith("invalid:")


def test_verify_receipt_is_1_for_another_signer_than_the_trusted_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(sign(_signed()["receipt"], Ed25519PrivateKey.generate())))
    pem = trusted_key_file(tmp_path)
    assert erase.verify_receipt(path, pem) == 1
    assert "not by the trusted key" in capsys.readouterr().err


def test_verify_receipt_of_a_file_that_is_not_json_is_1(tmp_path: Path) -> None:
    path = tmp_path / "receipt.json"
    path.write_text("nope")
    assert erase.verify_receipt(path, None) == 1
    assert erase.verify_receipt(tmp_path / "missing.json", None) == 2


class FakeCluster:
    """The API server as `evidence` reads it: one RecordErasure and its receipt set."""

    namespace = "team-a"

    def __init__(self, status: dict[str, Any], payload: str | None) -> None:
        self.status = status
        self.payload = payload
        self.asked: list[tuple[str, str, str]] = []

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert plural == "recorderasures"
        return {"metadata": {"name": name}, "status": self.status} if name == "e" else None

    def configmap_set(self, namespace: str, base: str, suffix: str) -> str | None:
        self.asked.append((namespace, base, suffix))
        return self.payload


def evidence_args(tmp_path: Path, name: str = "e") -> argparse.Namespace:
    return argparse.Namespace(name=name, namespace=None, output=tmp_path / "out.json")


def test_evidence_writes_the_receipt_its_status_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    signed = _signed()
    status = {
        "phase": "KeyErased",
        "receipt": {"configMap": "kr-recorderasure-e-receipt", "sha256": signed["sha256"]},
    }
    fake = FakeCluster(status, json.dumps(signed))
    monkeypatch.setattr(kube, "connect", lambda kubeconfig, context: fake)
    args = evidence_args(tmp_path)
    assert erase.print_evidence(args) == 0
    assert fake.asked == [("team-a", "kr-recorderasure-e", "receipt")]
    written = json.loads(args.output.read_text())
    assert written == signed
    assert erase.verify_receipt(args.output, None) == 3


def test_evidence_refuses_a_receipt_other_than_the_one_status_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status = {"receipt": {"configMap": "kr-recorderasure-e-receipt", "sha256": "0" * 64}}
    fake = FakeCluster(status, json.dumps(_signed()))
    monkeypatch.setattr(kube, "connect", lambda kubeconfig, context: fake)
    args = evidence_args(tmp_path)
    assert erase.print_evidence(args) == 1
    assert "not the one status.receipt states" in capsys.readouterr().err
    assert not args.output.exists()


def test_evidence_before_the_receipt_is_signed_says_the_phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeCluster({"phase": "Tombstoned"}, None)
    monkeypatch.setattr(kube, "connect", lambda kubeconfig, context: fake)
    assert erase.print_evidence(evidence_args(tmp_path)) == 1
    assert "phase Tombstoned" in capsys.readouterr().err
    assert erase.print_evidence(evidence_args(tmp_path, name="other")) == 1
    assert "no RecordErasure other" in capsys.readouterr().err
