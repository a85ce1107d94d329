"""A RecordErasure's receipt reaches the cluster's ledger before the erasure is finished,
and a ledger that cannot be written keeps the erasure unfinished (Ready False), with the
receipt kept in its ConfigMaps, until a later run records it.

Needs pipeline._sign to call services.erasure.ledger.record (the integrator's hunk)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kafka_retention.core.conditions import Reason
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.core.erasure_scan import PartitionScan, TombstoneWrite, WrittenTombstone
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, WriteRefused
from kafka_retention.services import erasure as service
from kafka_retention.services.erasure import pipeline
from tests.helpers.fakes import MemoryBlobs as Blobs
from tests.helpers.ledgers import NeverCuts, StrictStore

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DIGEST = hashlib.sha256(b"user-4711@example.com").hexdigest()
BOOTSTRAP = "kafka-a:9092"


class CleanKafka(NeverCuts):
    """A cluster whose one compacted topic never held the key: the first scan is the
    final one and the erasure is signed in its first run."""

    def __init__(self) -> None:
        self.written: list[TombstoneWrite] = []

    def cluster_id(self) -> str:
        return "cluster-id-A"

    def topic_names(self) -> list[str]:
        return ["users"]

    def topic_partitions(self, topics: Iterable[str]) -> Mapping[str, list[int] | KafkaFailure]:
        return {t: [0, 1] for t in topics}

    def topic_configs(
        self, topics: Iterable[str]
    ) -> Mapping[str, Mapping[str, str] | KafkaFailure]:
        return {t: {"cleanup.policy": "compact"} for t in topics}

    def log_bounds(self, tps: Iterable[TopicPartition]) -> tuple[dict[Any, Any], dict[Any, Any]]:
        wanted = list(tps)
        return dict.fromkeys(wanted, 0), dict.fromkeys(wanted, 3)

    def scan_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], digests: AbstractSet[str]
    ) -> dict[TopicPartition, PartitionScan | KafkaFailure]:
        return {tp: PartitionScan(tp, s, e, examined=e - s) for tp, (s, e) in ranges.items()}

    def write_tombstones(
        self, writes: Iterable[TombstoneWrite]
    ) -> dict[tuple[TopicPartition, str], WrittenTombstone | KafkaFailure]:
        self.written += list(writes)
        return {}


class Store:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)
        self.status = {k: v for k, v in self.status.items() if v is not None}


def run(store: Store, blobs: Blobs, ledger: StrictStore) -> service.Outcome | service.Retry:
    kafka = CleanKafka()

    def connect(_: ErasureRequest) -> CleanKafka:
        return kafka

    erasure = service.Erasure(
        spec={
            "cluster": {"bootstrapServers": BOOTSTRAP},
            "topics": {"names": ["users"]},
            "keys": [{"sha256": DIGEST}],
        },
        status=json.loads(json.dumps(store.status)),
        generation=1,
        uid="uid-1",
        name="e",
        namespace="tenant",
        store=store,
        blobs=blobs,
        connect=connect,
        signing_key=lambda: Ed25519PrivateKey.from_private_bytes(bytes(range(32))),
        now=lambda: NOW,
        created=NOW,
        ledger=ledger,
    )
    try:
        return service.reconcile(erasure)
    except service.Retry as retry:
        return retry


def test_a_signed_receipt_is_in_the_clusters_ledger_when_the_erasure_finishes() -> None:
    store, blobs, ledger = Store(), Blobs(), StrictStore()
    done = run(store, blobs, ledger)
    assert isinstance(done, service.Outcome)
    assert done.finished
    (shard,) = ledger.read_all(f"inline {BOOTSTRAP}")  # an inline cluster's ledger name
    (entry,) = shard.entries
    assert entry.digest == DIGEST
    assert entry.receipt_sha256 == store.status["receipt"]["sha256"]
    assert (entry.namespace, entry.name, entry.uid) == ("tenant", "e", "uid-1")
    assert entry.cluster_id == "cluster-id-A"


def test_a_ledger_that_cannot_be_written_keeps_the_erasure_unfinished_then_a_run_records_it() -> (
    None
):
    store, blobs, ledger = Store(), Blobs(), StrictStore()
    ledger.refuse = WriteRefused(403, "Forbidden", "configmaps is forbidden")
    waiting = run(store, blobs, ledger)
    assert isinstance(waiting, service.Retry)
    assert not pipeline.finished(store.status)
    assert "receipt" not in store.status
    ready = next(c for c in store.status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.LEDGER_BEHIND)
    assert "not recorded in the ledger" in ready["message"]
    signed = next(c for c in store.status["conditions"] if c["type"] == "ReceiptSigned")
    assert (signed["status"], signed["reason"]) == ("False", Reason.LEDGER_BEHIND)
    # Looked at again in minutes, not at the 10 s of a failed status write: each run
    # scans the erasure's partitions again before it signs.
    assert waiting.delay >= 60
    # The signed receipt is kept in the erasure's ConfigMaps meanwhile.
    assert json.loads(blobs.sets["receipt"])["receipt"]["digests"] == [DIGEST]
    assert ledger.read_all(f"inline {BOOTSTRAP}") == []

    ledger.refuse = None
    done = run(store, blobs, ledger)
    assert isinstance(done, service.Outcome)
    assert done.finished
    assert store.status["phase"] == Phase.KEY_ERASED
    (shard,) = ledger.read_all(f"inline {BOOTSTRAP}")
    assert [e.receipt_sha256 for e in shard.entries] == [store.status["receipt"]["sha256"]]
