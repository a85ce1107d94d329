"""`kafka-retention ledger check` against the real stack: the ledger in ConfigMaps of the
API server, the topics in Kafka. A topic restored (re-produced) with an erased key is
found (exit 1, and a RecordErasure to erase it again); a clean topic exits 0."""

from __future__ import annotations

import hashlib

import kubernetes
import pytest
import yaml

from devstack.stack import Stack
from kafka_retention.adapters.ledger_store import KubeLedger
from kafka_retention.cli import main
from kafka_retention.core.receipts import receipt, sign
from kafka_retention.services.erasure import ledger as service
from tests.helpers.kafka import Kafka
from tests.helpers.ledgers import KEY as SIGNING_KEY
from tests.helpers.records import produce

pytestmark = pytest.mark.stack

CLUSTER = "restored-cluster"
ERASED = b"customer-4711@example.com"
DIGEST = hashlib.sha256(ERASED).hexdigest()


@pytest.fixture
def ledger_ns(stack: Stack, namespace: str) -> str:
    """The namespace holding a ledger with DIGEST (and one digest never seen again)."""
    client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(stack.kube.kubeconfig)
    )
    other = hashlib.sha256(b"someone-erased-too").hexdigest()
    doc = receipt(
        "erase-4711",
        "tenant-a",
        "uid-4711",
        "the-old-cluster-id",
        [{"topic": "customers", "partition": 0, "digest": DIGEST, "scans": []}],
        "2026-11-29T06:00:00Z",
        digests=[DIGEST, other],
    )
    service.record(KubeLedger(namespace, client), sign(doc, SIGNING_KEY), CLUSTER)
    client.close()
    return namespace


def check(stack: Stack, ns: str, bootstrap: str, *extra: str) -> int:
    # --any-topic: the ledger names `customers`, the test's topics have fresh names (a
    # restore under another name); the unit tests show the default's topic scoping.
    return main(
        [
            "ledger",
            "check",
            "--any-topic",
            "--cluster",
            CLUSTER,
            "--operator-namespace",
            ns,
            "--kubeconfig",
            str(stack.kube.kubeconfig),
            "--bootstrap-server",
            bootstrap,
            *extra,
        ]
    )


def test_a_topic_restored_with_an_erased_key_is_found_and_a_clean_one_passes(
    stack: Stack, ledger_ns: str, kafka: Kafka, capsys: pytest.CaptureFixture[str]
) -> None:
    restored = kafka.topic({0: 5, 1: 5, 2: 5}, key=lambda p, i: f"other-{p}-{i}".encode())
    # The backup replayed: the erased key is back, in partition 1 at offsets 5 and 6.
    produce(kafka.bootstrap, restored, {1: 2}, key=lambda _p, _i: ERASED)
    clean = kafka.topic({0: 5, 1: 5}, key=lambda p, i: f"other-{p}-{i}".encode())

    assert check(stack, ledger_ns, kafka.bootstrap, "--topic", restored) == 1
    out, err = capsys.readouterr()
    assert (
        f"found {restored} partition 1 offsets 5..6 (2 records, 2 with a value) digest {DIGEST}"
        in out
    )
    assert "erased before by tenant-a/erase-4711" in out
    assert "1 of 2 erased digests found in 3 partitions of 1 topics (17 records read)" in out
    assert "this cluster's id is" in err  # not the-old-cluster-id: checked by name
    assert ERASED.decode() not in out + err

    assert check(stack, ledger_ns, kafka.bootstrap, "--topic", clean) == 0
    out, _ = capsys.readouterr()
    assert "none of 2 erased digests found in 2 partitions of 1 topics (10 records read)" in out

    code = check(
        stack,
        ledger_ns,
        kafka.bootstrap,
        "--topic",
        restored,
        clean,
        "--print-erasure",
        "tenant-a/erase-4711-again",
    )
    assert code == 1
    out, err = capsys.readouterr()
    (doc,) = list(yaml.safe_load_all(out))
    assert doc["spec"]["keys"] == [{"sha256": DIGEST}]
    assert doc["spec"]["topics"] == {"names": [restored]}
    assert doc["spec"]["cluster"] == {"clusterRef": CLUSTER}
    assert f"found {restored} partition 1" in err


def test_a_cluster_without_a_ledger_is_an_error(
    stack: Stack, namespace: str, bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check(stack, namespace, bootstrap, "--topic", "anything") == 2
    assert "no digest is recorded for cluster" in capsys.readouterr().err
