"""The issue's story on the real stack, without the operator process: a RecordErasure's
run (services.erasure.reconcile with the real Kafka adapter, the erasure's ConfigMaps and
the ledger in the API server, wired as handlers/erasure.py wires them) signs its receipt
and records the digest in the cluster's ledger; a backup replayed later brings the key
back, and `kafka-retention ledger check` finds it.

Needs pipeline._sign to call services.erasure.ledger.record (the integrator's hunk)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from devstack.stack import Stack
from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.adapters.kube import ConfigMapStore
from kafka_retention.adapters.ledger_store import KubeLedger
from kafka_retention.cli import main
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.services import erasure as service
from tests.helpers.kafka import Kafka
from tests.helpers.records import produce

pytestmark = pytest.mark.stack

ERASED = b"customer-4711@example.com"
DIGEST = hashlib.sha256(ERASED).hexdigest()
BINDING = "prod-eu"


class Status:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}

    def patch(self, status: Any) -> None:
        self.status.update(status)


def test_an_erased_digest_reaches_the_ledger_and_a_replayed_backup_is_caught(
    stack: Stack,
    namespace: str,
    kafka: Kafka,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The operator's own client (adapters.kube.api_client) reads $KUBECONFIG.
    monkeypatch.setenv("KUBECONFIG", str(stack.kube.kubeconfig))
    customers = kafka.topic(
        {0: 5, 1: 5}, {"cleanup.policy": "compact"}, key=lambda p, i: b"c%d%d" % (p, i)
    )
    status = Status()

    def connect(_: ErasureRequest) -> ErasureAdmin:
        return ErasureAdmin(kafka.bootstrap)

    erasure = service.Erasure(
        spec={
            "cluster": {"clusterRef": BINDING},
            "topics": {"names": [customers]},
            "keys": [{"sha256": DIGEST}],
        },
        status={},
        generation=1,
        uid="uid-4711",
        name="forget-4711",
        namespace=namespace,
        store=status,
        blobs=ConfigMapStore(namespace, "recorderasure-forget-4711", None),
        connect=connect,
        signing_key=lambda: Ed25519PrivateKey.from_private_bytes(bytes(range(32))),
        now=lambda: datetime.now(UTC),
        ledger=KubeLedger(namespace),  # the operator's namespace, here the test's
    )
    # The key is in no partition: the first scan is the final one, and the run signs.
    outcome = service.reconcile(erasure)
    assert outcome.finished
    (shard,) = KubeLedger(namespace).read_all(BINDING)
    (entry,) = shard.entries
    assert (entry.digest, entry.name, entry.uid) == (DIGEST, "forget-4711", "uid-4711")
    assert entry.receipt_sha256 == status.status["receipt"]["sha256"]

    # A month later, a backup is replayed into the topic: the key is back.
    produce(kafka.bootstrap, customers, {1: 1}, key=lambda _p, _i: ERASED)
    code = main(
        [
            "ledger",
            "check",
            "--cluster",
            BINDING,
            "--operator-namespace",
            namespace,
            "--kubeconfig",
            str(stack.kube.kubeconfig),
            "--bootstrap-server",
            kafka.bootstrap,
            "--topic",
            customers,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1, err
    assert f"found {customers} partition 1 offsets 5..5" in out
    assert f"erased before by {namespace}/forget-4711" in out
    assert ERASED.decode() not in out + err
