"""The ledger tests' shared parts: a signed receipt as the pipeline signs one, an entry,
and a ledger store as strict as the API server (versions, 409s, the 1 MiB limit)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kafka_retention.core import ledger as core
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, TopicPartition
from kafka_retention.core.failures import KafkaFailure, OffsetKind, WriteRefused
from kafka_retention.core.ledger import (
    LedgerConflict,
    LedgerEntry,
    StoredShard,
)
from kafka_retention.core.receipts import receipt, sign

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
CLUSTER = "prod-eu"
NAMESPACE = "tenant-a"  # the namespace signed_receipt's erasures are in


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def signed_receipt(
    digests: Sequence[str],
    found: dict[str, list[str]] | None = None,
    *,
    uid: str = "uid-1",
    name: str = "erase-alice",
    completed: str = "2026-11-29T06:00:00Z",
    cluster_id: str = "cluster-id-A",
    namespace: str = NAMESPACE,
) -> dict[str, Any]:
    """A receipt signed as pipeline._sign signs one: `found` maps a digest to the topics
    its evidence names (a partition scan without a digest is in every receipt too)."""
    evidence: list[dict[str, Any]] = [{"topic": "scanned-only", "partition": 0, "scans": []}]
    for d, topics in (found or {}).items():
        evidence += [{"topic": t, "partition": 1, "digest": d, "scans": []} for t in topics]
    doc = receipt(name, namespace, uid, cluster_id, evidence, completed, digests=digests)
    return sign(doc, KEY)


def entry(
    d: str, uid: str = "u", completed: str = "2026-11-29T06:00:00Z", namespace: str = NAMESPACE
) -> LedgerEntry:
    return LedgerEntry(d, uid, namespace, "n", ("t",), "0" * 64, "k" * 16, "cid", completed)


class StrictStore:
    """ConfigMaps as the API server keeps them, one per (cluster, namespace, shard): a
    resourceVersion per write; a create of an existing shard, or a replace naming another
    version (or a deleted shard), is a 409/404 (LedgerConflict); a payload over 1 MiB is
    refused (422); a read decodes (and checks) the stored JSON as the adapter does.
    `before_write` runs just before a write lands: another writer's turn."""

    LIMIT = 1024 * 1024

    def __init__(self) -> None:
        self.shards: dict[tuple[str, str, str], tuple[str, int]] = {}
        self.version = 100
        self.writes = 0
        self.before_write: Callable[[], object] | None = None
        self.refuse: WriteRefused | None = None

    def read(self, cluster: str, namespace: str, shard: str) -> StoredShard | None:
        found = self.shards.get((cluster, namespace, shard))
        if found is None:
            return None
        entries = core.decode_shard(cluster, namespace, shard, found[0])
        return StoredShard(namespace, shard, tuple(entries), str(found[1]))

    def write(
        self, cluster: str, namespace: str, shard: str, payload: str, version: str | None
    ) -> None:
        hook, self.before_write = self.before_write, None
        if hook is not None:
            hook()
        if self.refuse is not None:
            raise self.refuse
        if len(payload.encode()) > self.LIMIT:
            raise WriteRefused(422, "Unprocessable Entity", "ConfigMap is invalid: Too long")
        current = self.shards.get((cluster, namespace, shard))
        if version is None and current is not None:
            raise LedgerConflict("AlreadyExists")
        if version is not None and (current is None or str(current[1]) != version):
            raise LedgerConflict("Conflict")
        self.version += 1
        self.writes += 1
        self.shards[(cluster, namespace, shard)] = (payload, self.version)

    def read_all(self, cluster: str, namespace: str | None = None) -> list[StoredShard]:
        return [
            s
            for c, ns, n in sorted(self.shards)
            if c == cluster and namespace in (None, ns)
            if (s := self.read(c, ns, n))
        ]

    def digests(self, cluster: str = CLUSTER, namespace: str | None = None) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for stored in self.read_all(cluster, namespace):
            for e in stored.entries:
                out.setdefault(e.digest, set()).add(e.uid)
        return out


def no_pause(_: float) -> None:
    pass


class NeverCuts:
    """The cutting half of ErasureKafka for fakes of clusters nothing may be cut on (a
    ledger check; an erasure of a compacted topic): any call fails the test."""

    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> Mapping[TopicPartition, int | KafkaFailure]:
        raise AssertionError("offsets read for a cut")

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> Mapping[str, GroupRead]:
        raise AssertionError("group positions read for a cut")

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> Mapping[TopicPartition, int | KafkaFailure]:
        raise AssertionError("records deleted")

    def group_ids(self) -> list[str]:
        raise AssertionError("groups listed for a cut")
