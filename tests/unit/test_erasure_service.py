"""The RecordErasure service against an in-memory Kafka: the phases one step per run,
tombstones only where compaction can erase, the receipt, refusals, and privacy."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import kopf
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kafka_retention.adapters.ledger_store import KubeLedger
from kafka_retention.config import OperatorConfig
from kafka_retention.core.bindings import Grant
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.conditions import EventReason, Reason
from kafka_retention.core.erasure import ErasureRequest, parse_erasure_spec
from kafka_retention.core.erasure_scan import (
    DigestHits,
    PartitionScan,
    TombstoneWrite,
    WrittenTombstone,
)
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import (
    KafkaFailure,
    KafkaUnavailable,
    OffsetKind,
    SecretUnavailable,
    WriteRefused,
)
from kafka_retention.core.receipts import verify
from kafka_retention.core.specs import SpecError
from kafka_retention.handlers import erasure as handler
from kafka_retention.handlers import erasure_logs
from kafka_retention.handlers.common import Created
from kafka_retention.services import erasure as service
from kafka_retention.services import tenancy
from kafka_retention.services.erasure import evidence as ev
from kafka_retention.services.erasure import pipeline
from tests.helpers.fakes import MemoryBlobs as Blobs

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
KEY = b"user-4711@example.com"  # the key to erase; it must never appear in any output
DIGEST = hashlib.sha256(KEY).hexdigest()
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "1000",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "1000",
    "delete.retention.ms": "1000",
}
DELETE = {"cleanup.policy": "delete", "retention.ms": "3600000", "segment.ms": "60000"}
TIERED = {**DELETE, "remote.storage.enable": "true"}
SIGNING = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


@dataclass
class Record:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


class FakeErasureKafka:
    """Topics and their logs in memory, answering as Kafka does: a tombstone is a record
    with a null value on any topic (Kafka accepts one on a delete topic too, and erases
    nothing with it); the writer refuses a key whose bytes do not hash to the digest and
    a partition that does not exist. `compact` and `expire` play the cleaner and
    retention."""

    def __init__(self, clock: list[datetime]) -> None:
        self.clock = clock
        self.configs: dict[str, dict[str, str]] = {}
        self.logs: dict[TopicPartition, list[Record]] = {}
        self.starts: dict[TopicPartition, int] = {}
        self.ends: dict[TopicPartition, int] = {}
        self.calls: list[str] = []
        self.written: list[tuple[TopicPartition, str]] = []
        self.deleted: list[tuple[TopicPartition, int]] = []  # DeleteRecords that deleted
        # group -> committed offset per partition (consumer groups the cluster lists)
        self.groups: dict[str, dict[TopicPartition, int]] = {}
        self.unavailable = False

    # --- test side
    def topic(self, name: str, partitions: int, config: Mapping[str, str]) -> None:
        self.configs[name] = dict(config)
        for p in range(partitions):
            tp = TopicPartition(name, p)
            self.logs[tp], self.starts[tp], self.ends[tp] = [], 0, 0

    def produce(self, tp: TopicPartition, key: bytes | None, value: bytes | None) -> int:
        offset = self.ends[tp]
        ts = int(self.clock[0].timestamp() * 1000)
        self.logs[tp].append(Record(offset, key, value, ts))
        self.ends[tp] = offset + 1
        return offset

    def compact(self, topic: str, drop_tombstones: bool = False) -> None:
        """The cleaner: only the latest record of each key stays; past the delete horizon
        (drop_tombstones) a tombstone goes too. Offsets and the high watermark stay."""
        assert "compact" in self.configs[topic]["cleanup.policy"]
        for tp, records in self.logs.items():
            if tp.topic != topic:
                continue
            latest = {r.key: r.offset for r in records}
            kept = [r for r in records if latest[r.key] == r.offset]
            if drop_tombstones:
                kept = [r for r in kept if r.value is not None]
            self.logs[tp] = kept

    def expire(self, topic: str) -> None:
        """Retention removed every segment: the log start moves to the high watermark."""
        for tp in self.logs:
            if tp.topic == topic:
                self.logs[tp] = []
                self.starts[tp] = self.ends[tp]

    def commit(self, group: str, tp: TopicPartition, offset: int) -> None:
        self.groups.setdefault(group, {})[tp] = offset

    def keys_present(self, key: bytes) -> list[Record]:
        return [r for records in self.logs.values() for r in records if r.key == key]

    # --- ports.ErasureKafka
    def _check(self, what: str) -> None:
        self.calls.append(what)
        if self.unavailable:
            raise KafkaUnavailable("_TRANSPORT: all brokers down")

    def cluster_id(self) -> str:
        return "fake-cluster-id"

    def topic_names(self) -> list[str]:
        self._check("topic_names")
        return sorted(self.configs)

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        self._check("topic_partitions")
        out: dict[str, list[int] | KafkaFailure] = {}
        for t in topics:
            parts = sorted(tp.partition for tp in self.logs if tp.topic == t)
            out[t] = parts or KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", t, False)
        return out

    def topic_configs(self, topics: Iterable[str]) -> dict[str, Mapping[str, str] | KafkaFailure]:
        self._check("topic_configs")
        return {
            t: self.configs.get(t) or KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", t, False)
            for t in topics
        }

    def log_bounds(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, int | KafkaFailure], dict[TopicPartition, int | KafkaFailure]]:
        wanted = list(tps)
        self._check("log_bounds")
        return {tp: self.starts[tp] for tp in wanted}, {tp: self.ends[tp] for tp in wanted}

    def scan_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], digests: AbstractSet[str]
    ) -> dict[TopicPartition, PartitionScan | KafkaFailure]:
        self._check("scan:" + ",".join(sorted(str(tp) for tp in ranges)))
        out: dict[TopicPartition, PartitionScan | KafkaFailure] = {}
        for tp, (start, end) in ranges.items():
            found = PartitionScan(tp, start, end)
            records = [r for r in self.logs[tp] if start <= r.offset < end]
            for r in records:
                found.examined += 1
                digest = hashlib.sha256(r.key).hexdigest() if r.key is not None else None
                if digest is None or digest not in digests:
                    continue
                hits = found.hits.setdefault(digest, DigestHits())
                hits.records += 1
                if hits.first_offset < 0:
                    hits.first_offset = r.offset
                hits.last_offset, hits.last_timestamp_ms = r.offset, r.timestamp_ms
                if r.value is None:
                    hits.tombstones += 1
                    hits.last_tombstone_offset = r.offset
                else:
                    hits.values += 1
                    hits.last_value_offset = r.offset
            last = max((h.last_offset for h in found.hits.values()), default=-1)
            collateral = [
                r
                for r in records
                if r.offset <= last
                and (r.key is None or hashlib.sha256(r.key).hexdigest() not in digests)
            ]
            found.collateral_records = len(collateral)
            found.collateral_bytes = sum(_size(r) for r in collateral)
            out[tp] = found
        return out

    def group_ids(self) -> list[str]:
        self._check("group_ids")
        return sorted(self.groups)

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        self._check("group_positions")
        return {
            g: GroupRead(
                GroupType.CONSUMER if g in self.groups else GroupType.NONE,
                {tp: self.groups.get(g, {}).get(tp) for tp in tps},
            )
            for g, tps in wanted.items()
        }

    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self._check("offsets")
        return {tp: (self.starts if kind == "earliest" else self.ends)[tp] for tp in tps}

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        """As the broker answers DeleteRecords: POLICY_VIOLATION on a topic that is only
        compacted, OFFSET_OUT_OF_RANGE above the high watermark, nothing below the log
        start; else the new low watermark."""
        self._check("delete_records")
        out: dict[TopicPartition, int | KafkaFailure] = {}
        for tp, offset in cuts.items():
            policy = self.configs[tp.topic].get("cleanup.policy", "delete")
            if tp not in self.logs:
                out[tp] = KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", str(tp), False)
            elif "delete" not in policy.split(","):
                out[tp] = KafkaFailure("POLICY_VIOLATION", "compacted topic", False)
            elif offset < 0 or offset > self.ends[tp]:
                out[tp] = KafkaFailure("OFFSET_OUT_OF_RANGE", str(offset), False)
            else:
                if offset > self.starts[tp]:
                    self.logs[tp] = [r for r in self.logs[tp] if r.offset >= offset]
                    self.starts[tp] = offset
                    self.deleted.append((tp, offset))
                out[tp] = self.starts[tp]
        return out

    def write_tombstones(
        self, writes: Iterable[TombstoneWrite]
    ) -> dict[tuple[TopicPartition, str], WrittenTombstone | KafkaFailure]:
        self._check("write_tombstones")
        out: dict[tuple[TopicPartition, str], WrittenTombstone | KafkaFailure] = {}
        # Each partition's keyed records by digest, hashed once per call (10,000 writes
        # over 10,000 records would otherwise hash 10^8 keys).
        by_digest: dict[TopicPartition, dict[str, list[Record]]] = {}
        for w in writes:
            if w.tp not in self.logs:
                out[(w.tp, w.digest)] = KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", "", False)
                continue
            if w.tp not in by_digest:
                index: dict[str, list[Record]] = {}
                for r in self.logs[w.tp]:
                    if r.key:
                        index.setdefault(hashlib.sha256(r.key).hexdigest(), []).append(r)
                by_digest[w.tp] = index
            # The key bytes are read back from the log at key_offset (or the first match
            # after it, if the cleaner moved it), and checked against the digest.
            key = next(
                (r.key for r in by_digest[w.tp].get(w.digest, []) if r.offset >= w.key_offset),
                None,
            )
            if key is None:
                out[(w.tp, w.digest)] = KafkaFailure("KEY_NOT_FOUND", "no such key", False)
                continue
            offset = self.produce(w.tp, key, None)
            self.written.append((w.tp, self.configs[w.tp.topic]["cleanup.policy"]))
            ts = self.logs[w.tp][-1].timestamp_ms
            out[(w.tp, w.digest)] = WrittenTombstone(offset, ts)
        return out


def _size(record: Record) -> int:
    return len(record.key or b"") + len(record.value or b"")


class Store:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}
        self.patches: list[dict[str, Any]] = []

    def patch(self, status: Mapping[str, Any]) -> None:
        self.patches.append(dict(status))
        self.status.update(status)
        self.status = {k: v for k, v in self.status.items() if v is not None}


@dataclass
class World:
    spec: dict[str, Any]
    clock: list[datetime] = field(default_factory=lambda: [NOW])
    store: Store = field(default_factory=Store)
    blobs: Blobs = field(default_factory=Blobs)
    key_available: bool = True
    admitted: Grant | None = None
    connects: int = 0
    events: list[tuple[str, str]] = field(default_factory=list)
    retries: list[service.Retry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.kafka = FakeErasureKafka(self.clock)

    def signing_key(self) -> Ed25519PrivateKey:
        if not self.key_available:
            raise SecretUnavailable("Secret ops/kafka-retention-erasure-signing: not found")
        return SIGNING

    def connect(self, request: ErasureRequest) -> FakeErasureKafka:
        self.connects += 1
        return self.kafka

    def admit(self, spec: Mapping[str, Any], request: ErasureRequest) -> Grant | None:
        """Stand-in for Tenancy.admit_erasure (package A): the grant's word on each topic."""
        if self.admitted is None:
            return None
        for path, topic in request.named_topics():
            why = self.admitted.topic_refusal(topic)
            if why is not None:
                raise tenancy.Refused(path, Reason.NOT_PERMITTED, why)
        return self.admitted

    def run(self) -> service.Outcome | service.Retry:
        """One handler run, from the status the last one left."""
        erasure = service.Erasure(
            spec=self.spec,
            status=json.loads(json.dumps(self.store.status)),
            generation=1,
            uid="uid-1",
            name="e",
            namespace="tenant",
            store=self.store,
            blobs=self.blobs,
            connect=self.connect,
            signing_key=self.signing_key,
            now=lambda: self.clock[0],
            admit=self.admit,
            created=NOW,
        )
        try:
            outcome = service.reconcile(erasure)
        except service.Retry as retry:
            self.retries.append(retry)
            self.events += [(str(r), m) for r, m in retry.events]
            return retry
        self.events += [(str(r), m) for r, m in outcome.events]
        return outcome

    def later(self, seconds: float) -> None:
        self.clock[0] += timedelta(seconds=seconds)

    def condition(self, type_: str) -> dict[str, Any]:
        return next(c for c in self.store.status["conditions"] if c["type"] == type_)


def spec(*topics: str, digest: str = DIGEST, **extra: Any) -> dict[str, Any]:
    return {
        "cluster": {"bootstrapServers": "kafka:9092"},
        "topics": {"names": list(topics)},
        "keys": [{"sha256": digest}],
        **extra,
    }


def refuse_evidence_writes(world: World, times: int, error: WriteRefused) -> None:
    """The API server refuses the next `times` status patches that carry evidence."""
    patch = world.store.patch
    left = [times]

    def refusing(status_: Mapping[str, Any]) -> None:
        if "evidence" in status_ and left[0] > 0:
            left[0] -= 1
            raise error
        patch(status_)

    world.store.patch = refusing  # type: ignore[method-assign,assignment]


def compacted_world(*extra_spec: tuple[str, Any]) -> World:
    """`users` (compacted, 3 partitions): the key in partitions 0 and 1, other keys
    everywhere."""
    world = World(spec("users", **dict(extra_spec)))
    kafka = world.kafka
    kafka.topic("users", 3, COMPACTED)
    for p in range(3):
        kafka.produce(TopicPartition("users", p), b"other-%d" % p, b"v")
    kafka.produce(TopicPartition("users", 0), KEY, b"address-1")
    kafka.produce(TopicPartition("users", 0), KEY, b"address-2")
    kafka.produce(TopicPartition("users", 1), KEY, b"address-3")  # explicit partition=
    for p in range(3):
        kafka.produce(TopicPartition("users", p), b"after-%d" % p, b"v")
    return world


def test_a_compacted_topic_goes_tombstoned_values_erased_key_erased_with_a_signed_receipt() -> None:
    world = compacted_world()
    kafka = world.kafka

    first = world.run()
    assert isinstance(first, service.Retry)
    assert first.quiet
    assert world.store.status["phase"] == Phase.TOMBSTONED
    # One tombstone to each partition the key is in, with its exact bytes.
    assert sorted(tp.partition for tp, _ in kafka.written) == [0, 1]
    tombstones = [r for r in kafka.keys_present(KEY) if r.value is None]
    assert len(tombstones) == 2
    evidence = world.store.status["evidence"]
    assert {(e["partition"], e["digest"]) for e in evidence} == {(0, DIGEST), (1, DIGEST)}
    assert all("tombstone" in e for e in evidence)
    assert world.store.status["summary"]["tombstonesWritten"] == 2
    assert world.store.status["summary"]["matchesRemaining"] == 3
    assert (
        EventReason.TOMBSTONES_WRITTEN,
        f"2 tombstones written to 2 partitions; digests {DIGEST}",
    ) in [(EventReason(r), m) for r, m in world.events]

    # Nothing compacted yet: still Tombstoned, and no second tombstone. The tombstones
    # are the last records of their partitions: their segment cannot roll yet.
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    assert world.condition("Erased")["reason"] == Reason.AWAITING_SEGMENT_ROLL
    for p in range(3):
        kafka.produce(TopicPartition("users", p), b"filler", b"v")
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    assert world.store.status["phase"] == Phase.TOMBSTONED
    assert world.condition("Erased")["reason"] == Reason.AWAITING_COMPACTION
    assert len(kafka.written) == 2

    kafka.compact("users")
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    assert world.store.status["phase"] == Phase.VALUES_ERASED
    assert world.condition("Erased")["reason"] == Reason.VALUES_ERASED
    assert EventReason.VALUES_ERASED in [r for r, _ in world.events]

    kafka.compact("users", drop_tombstones=True)
    world.later(5)
    done = world.run()
    assert isinstance(done, service.Outcome)
    assert done.finished
    assert world.store.status["phase"] == Phase.KEY_ERASED
    assert kafka.keys_present(KEY) == []
    assert world.condition("Erased")["status"] == "True"
    assert world.condition("ReceiptSigned")["status"] == "True"
    assert world.store.status["summary"]["matchesRemaining"] == 0

    signed = json.loads(world.blobs.sets["receipt"])
    assert verify(signed, SIGNING.public_key()) is None
    stored = world.store.status["receipt"]
    assert stored["sha256"] == signed["sha256"]
    assert stored["configMap"] == "recorderasure-e-receipt"
    assert stored["algorithm"] == "Ed25519"
    phases = [s["phase"] for e in signed["receipt"]["evidence"] for s in e["scans"]]
    assert {"Scanning", "ValuesErased", "KeyErased"} <= set(phases)
    receipt_events = [m for r, m in world.events if r == EventReason.ERASURE_RECEIPT]
    assert receipt_events == [
        f"receipt sha256 {signed['sha256']}, key {stored['keyId']}, "
        "ConfigMap recorderasure-e-receipt"
    ]
    assert len(receipt_events[0]) < 1024

    # A tampered receipt does not verify.
    signed["receipt"]["evidence"][0]["partition"] = 2
    assert verify(signed, SIGNING.public_key()) is not None
    # Final: the next run does nothing at all.
    kafka.calls.clear()
    assert isinstance(world.run(), service.Outcome)
    assert kafka.calls == []


def test_the_key_never_appears_in_status_events_messages_or_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    # The plain form too: its bytes are in the spec, and must go no further.
    world = compacted_world()
    world.spec["keys"] = [{"string": KEY.decode()}]
    outputs: list[str] = []
    for step in range(4):
        result = world.run()
        outputs.append(str(result) + repr(result))
        if step == 1:
            world.kafka.compact("users")
        if step == 2:
            world.kafka.compact("users", drop_tombstones=True)
        world.later(5)
    assert world.store.status["phase"] == Phase.KEY_ERASED
    text = json.dumps(world.store.patches) + json.dumps(world.events) + "".join(outputs)
    text += caplog.text + json.dumps(world.blobs.sets)
    for form in (KEY.decode(), KEY.hex(), "user-4711"):
        assert form not in text
    assert DIGEST in json.dumps(world.store.status)


def test_a_bad_digest_is_refused_naming_the_field_before_any_kafka_contact() -> None:
    world = compacted_world()
    world.spec["keys"] = [{"sha256": "not-a-digest-" + KEY.decode()}]
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.keys[0].sha256"
    assert world.store.status["phase"] == Phase.FAILED
    ready = world.condition("Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.INVALID_SPEC)
    assert "spec.keys[0].sha256" in ready["message"]
    assert KEY.decode() not in json.dumps(world.store.status)
    assert world.connects == 0
    assert world.kafka.calls == []


def test_a_topic_outside_the_binding_is_refused_before_any_kafka_contact() -> None:
    world = compacted_world()
    world.spec["topics"] = {"names": ["own-events", "users"]}
    world.admitted = Grant("team-a", 0, frozenset({"erase"}), ("own-.*",), (), ())
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.topics.names[1]"
    ready = world.condition("Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.NOT_PERMITTED)
    assert ready["message"].startswith("spec.topics.names[1]: ")
    assert world.connects == 0
    assert world.kafka.calls == []
    assert world.kafka.written == []


def delete_world(*extra_spec: tuple[str, Any], config: Mapping[str, str] = DELETE) -> World:
    """`clicks` (delete, 2 partitions), the key among other keys' records:

    clicks-0: other-a, KEY, other-b, KEY, later-0   last match 3: cut at 4
    clicks-1: other-c, KEY, later-1                 last match 1: cut at 2
    """
    world = World(spec("clicks", **dict(extra_spec)))
    kafka = world.kafka
    kafka.topic("clicks", 2, config)
    p0, p1 = TopicPartition("clicks", 0), TopicPartition("clicks", 1)
    for tp, key, value in (
        (p0, b"other-a", b"va"),
        (p0, KEY, b"address-1"),
        (p0, b"other-b", b"vb"),
        (p0, KEY, b"address-2"),
        (p0, b"later-0", b"v"),
        (p1, b"other-c", b"vc"),
        (p1, KEY, b"address-3"),
        (p1, b"later-1", b"v"),
    ):
        kafka.produce(tp, key, value)
    return world


CUT = (("onDeleteTopics", "cut"), ("acceptCollateral", True))
P0, P1 = TopicPartition("clicks", 0), TopicPartition("clicks", 1)
# other-a + va, other-b + vb (clicks-0); other-c + vc (clicks-1)
COLLATERAL_BYTES = 3 * (len(b"other-a") + len(b"va"))


def test_cut_without_accept_collateral_is_refused_naming_the_field_with_nothing_deleted() -> None:
    # The CEL rule refuses it at apply; an object stored before it (or the parser's own
    # caller) still ends Failed here, before anything is read.
    world = delete_world(("onDeleteTopics", "cut"))
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.acceptCollateral"
    assert world.store.status["phase"] == Phase.FAILED
    assert world.condition("Ready")["reason"] == Reason.INVALID_SPEC
    assert "spec.acceptCollateral" in world.condition("Ready")["message"]
    assert world.connects == 0
    assert world.kafka.calls == []
    assert world.kafka.deleted == []


def test_cut_deletes_each_partition_just_past_its_last_match_then_a_scan_grants_key_erased() -> (
    None
):
    world = delete_world(*CUT)
    kafka = world.kafka

    cut = world.run()
    assert isinstance(cut, service.Retry)
    status = world.store.status
    assert status["phase"] == Phase.CUT
    assert world.condition("Erased")["reason"] == Reason.RECORDS_CUT
    assert kafka.deleted == [(P0, 4), (P1, 2)]
    # The other keys' later records are still there.
    assert [r.key for r in kafka.logs[P0]] == [b"later-0"]
    assert [r.key for r in kafka.logs[P1]] == [b"later-1"]
    assert kafka.written == []
    cuts = {e["partition"]: e["cuts"] for e in status["evidence"]}
    assert cuts[0] == [
        {
            "offset": 4,
            "lowWatermark": 4,
            "at": "2026-11-29T12:00:00Z",
            "collateralRecords": 2,
            "collateralBytes": 2 * (len(b"other-a") + len(b"va")),
        }
    ]
    assert (cuts[1][0]["offset"], cuts[1][0]["lowWatermark"]) == (2, 2)
    summary = status["summary"]
    assert (summary["recordsCut"], summary["collateralRecords"]) == (6, 3)
    assert summary["collateralBytes"] == COLLATERAL_BYTES
    cut_events = [m for r, m in world.events if r == EventReason.RECORDS_CUT]
    assert len(cut_events) == 1
    assert "clicks-0 at 4 (low watermark 4)" in cut_events[0]
    assert "3 records (27 bytes) of other keys removed" in cut_events[0]
    assert cut.delay <= 5  # the verification comes next

    world.later(3)
    done = world.run()
    assert isinstance(done, service.Outcome)
    assert world.store.status["phase"] == Phase.KEY_ERASED
    assert kafka.deleted == [(P0, 4), (P1, 2)]  # nothing cut twice
    signed = json.loads(world.blobs.sets["receipt"])
    assert verify(signed, SIGNING.public_key()) is None
    in_receipt = [e for e in signed["receipt"]["evidence"] if e.get("digest")]
    assert {e["partition"]: e["cuts"][0]["offset"] for e in in_receipt} == {0: 4, 1: 2}
    assert "Cut" in signed["receipt"]["phases"]
    # The totals of the cut stay in status after the run that verified it.
    assert world.store.status["summary"]["collateralRecords"] == 3


def test_tiered_topics_are_cut_like_delete_topics() -> None:
    world = delete_world(*CUT, config=TIERED)
    assert isinstance(world.run(), service.Retry)
    assert world.kafka.deleted == [(P0, 4), (P1, 2)]
    assert world.store.status["topics"][0]["kind"] == "tiered"


def test_compacted_topics_get_tombstones_and_never_a_cut() -> None:
    world = delete_world(*CUT)
    world.spec["topics"] = {"names": ["clicks", "users", "both"]}
    kafka = world.kafka
    kafka.topic("users", 1, COMPACTED)
    kafka.topic("both", 1, {**COMPACTED, "cleanup.policy": "compact,delete"})
    for topic in ("users", "both"):
        kafka.produce(TopicPartition(topic, 0), KEY, b"v")
        kafka.produce(TopicPartition(topic, 0), b"other", b"v")
    assert isinstance(world.run(), service.Retry)
    # The fake answers POLICY_VIOLATION on compact alone, as Kafka does; compact,delete
    # would take the cut, and gets its tombstone instead.
    assert {tp.topic for tp, _ in kafka.deleted} == {"clicks"}
    assert sorted(tp.topic for tp, _ in kafka.written) == ["both", "users"]
    stages = {t["name"]: t["stage"] for t in world.store.status["topics"]}
    assert stages == {"both": Phase.TOMBSTONED, "clicks": Phase.CUT, "users": Phase.TOMBSTONED}


def test_a_protected_group_below_the_last_match_holds_its_partition_and_names_itself() -> None:
    world = delete_world(*CUT, ("protectGroups", ["auditor"]))
    kafka = world.kafka
    kafka.commit("auditor", P0, 3)  # has not read the match at 3
    kafka.commit("auditor", P1, 2)  # past the match at 1

    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P1, 2)]
    assert kafka.starts[P0] == 0  # nothing deleted there
    status = world.store.status
    assert status["phase"] == Phase.CUT_HELD
    erased = world.condition("Erased")
    assert erased["reason"] == Reason.CUT_HELD
    assert "protected group auditor committed 3 on clicks-0" in erased["message"]
    assert "clicks-1" not in erased["message"]
    assert "auditor" in status["topics"][0]["note"]
    assert (EventReason.CUT_HELD, erased["message"]) in [
        (EventReason(r), m) for r, m in world.events
    ]
    assert "cuts" not in next(e for e in status["evidence"] if e["partition"] == 0)

    # Still held: nothing more is cut, and the held partition is not scanned again.
    world.later(120)
    kafka.calls.clear()
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P1, 2)]
    assert not any(c.startswith("scan:") for c in kafka.calls)
    assert world.condition("Erased")["message"] == erased["message"]

    # The group reads past the match: the partition is scanned and cut.
    kafka.commit("auditor", P0, 5)
    world.later(120)
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P1, 2), (P0, 4)]


def test_a_protected_group_reset_below_a_match_after_the_plan_holds_the_cut() -> None:
    world = delete_world(*CUT, ("protectGroups", ["auditor"]))
    kafka = world.kafka
    kafka.commit("auditor", P0, 5)  # past the match at 3 when the cut is planned
    kafka.commit("auditor", P1, 2)
    reads = 0
    read = kafka.group_positions

    def reset_after_the_plan(wanted: Mapping[str, Iterable[TopicPartition]]) -> Any:
        nonlocal reads
        reads += 1
        if reads == 2:  # the plan read them; the auditor's offsets are reset before the cut
            kafka.commit("auditor", P0, 0)
        return read(wanted)

    kafka.group_positions = reset_after_the_plan  # type: ignore[method-assign]
    assert isinstance(world.run(), service.Retry)
    assert reads >= 2
    assert kafka.deleted == [(P1, 2)]  # clicks-0 not cut: its match is unread again
    assert kafka.starts[P0] == 0
    assert "moved below the last match on clicks-0" in str(world.store.status)


def test_a_protected_group_without_a_commit_holds_the_whole_partition() -> None:
    world = delete_world(*CUT, ("protectGroups", ["auditor"]))
    world.kafka.commit("auditor", P1, 2)
    assert isinstance(world.run(), service.Retry)
    assert world.kafka.deleted == [(P1, 2)]
    message = world.condition("Erased")["message"]
    assert "protected group auditor has no committed offset on clicks-0" in message


def test_groups_not_read_past_a_match_are_named_per_topic_in_report_mode() -> None:
    world = delete_world()
    kafka = world.kafka
    kafka.commit("slow-reader", P0, 1)  # at the first match: not read
    kafka.commit("mid-reader", P0, 2)  # read the first match, not the last
    kafka.commit("fast-reader", P0, 5)
    kafka.commit("fast-reader", P1, 3)
    kafka.commit("other-topic-reader", TopicPartition("elsewhere", 0), 0)
    assert isinstance(world.run(), service.Retry)
    topic = world.store.status["topics"][0]
    assert topic["unreadBy"] == ["mid-reader", "slow-reader"]
    assert topic["unreadByCount"] == 2
    assert topic["stage"] == Phase.AWAITING_RETENTION
    assert kafka.deleted == []
    assert "delete_records" not in kafka.calls
    # What a cut would cost, shown in report mode too.
    assert world.store.status["summary"]["collateralRecords"] == 3
    assert world.store.status["summary"]["collateralBytes"] == COLLATERAL_BYTES


def test_unread_by_names_at_most_twenty_groups_and_counts_them_all() -> None:
    world = delete_world(("dryRun", True))
    for i in range(25):
        world.kafka.commit(f"reader-{i:02d}", P1, 0)
    world.run()
    topic = world.store.status["topics"][0]
    assert len(topic["unreadBy"]) == 20
    assert topic["unreadByCount"] == 25


def test_a_dry_run_of_a_cut_reports_the_collateral_and_who_it_passes_and_deletes_nothing() -> None:
    world = delete_world(
        ("onDeleteTopics", "cut"), ("dryRun", True), ("protectGroups", ["auditor"])
    )
    kafka = world.kafka
    kafka.commit("auditor", P0, 5)
    kafka.commit("auditor", P1, 0)  # below the match at 1: holds clicks-1
    kafka.commit("slow-reader", P0, 0)
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.finished
    status = world.store.status
    assert status["phase"] == Phase.DRY_RUN
    assert kafka.deleted == []
    assert kafka.written == []
    assert "delete_records" not in kafka.calls
    assert (kafka.starts[P0], kafka.starts[P1]) == (0, 0)
    # Only clicks-0 would be cut (clicks-1 is held): its 2 records of other keys.
    assert status["summary"]["collateralRecords"] == 2
    assert status["summary"]["collateralBytes"] == 2 * (len(b"other-a") + len(b"va"))
    message = world.condition("Erased")["message"]
    assert "would remove 2 records (18 bytes) of other keys (clicks-0 at 4: 2 records" in message
    assert "passing groups slow-reader" in message
    assert "protected groups auditor would hold 1 partitions (clicks-1)" in message
    assert "would remove 2 records" in status["topics"][0]["note"]
    assert "receipt" not in status


def test_a_dry_run_of_a_compacted_topic_reports_no_cut() -> None:
    world = compacted_world(("onDeleteTopics", "cut"), ("dryRun", True))
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    status = world.store.status
    assert status["phase"] == Phase.DRY_RUN
    assert world.kafka.written == []
    assert world.kafka.deleted == []
    assert status["summary"]["collateralRecords"] == 0
    assert "cut" not in status["topics"][0].get("note", "")
    assert "expectedKeyErasedAt" in status["deadline"]


def test_a_key_written_after_the_cut_is_cut_again_then_fails_after_three_rounds() -> None:
    world = delete_world(*CUT)
    kafka = world.kafka
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P0, 4), (P1, 2)]

    kafka.produce(P1, KEY, b"address-4")  # offset 3
    kafka.produce(P1, b"later-2", b"v")
    world.later(3)
    assert isinstance(world.run(), service.Retry)
    assert world.condition("Erased")["reason"] == Reason.KEY_REWRITTEN
    assert kafka.deleted[-1] == (P1, 4)
    entry = next(e for e in world.store.status["evidence"] if e["partition"] == 1)
    assert [c["offset"] for c in entry["cuts"]] == [2, 4]
    assert [s["phase"] for s in entry["scans"]][-1] == ev.KEY_REWRITTEN

    kafka.produce(P1, KEY, b"address-5")  # offset 5
    world.later(3)
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted[-1] == (P1, 6)

    kafka.produce(P1, KEY, b"address-6")
    world.later(3)
    failed = world.run()
    assert isinstance(failed, service.Outcome)
    assert world.store.status["phase"] == Phase.FAILED
    assert world.condition("Erased")["reason"] == Reason.KEY_REWRITTEN
    assert kafka.deleted[-1] == (P1, 6)  # not cut a third time after the rewrites


def test_a_cut_names_offsets_groups_and_digests_never_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    world = delete_world(*CUT, ("protectGroups", ["auditor"]))
    world.spec["keys"] = [{"string": KEY.decode()}]
    world.kafka.commit("auditor", P0, 5)
    world.kafka.commit("auditor", P1, 0)
    outputs = [repr(world.run())]
    world.kafka.commit("auditor", P1, 5)
    for _ in range(3):
        world.later(40)
        outputs.append(repr(world.run()))
    assert world.store.status["phase"] == Phase.KEY_ERASED
    text = json.dumps(world.store.patches) + json.dumps(world.events) + "".join(outputs)
    text += caplog.text + json.dumps(world.blobs.sets)
    for form in (KEY.decode(), KEY.hex(), "user-4711"):
        assert form not in text
    assert "CutHeld" in text
    assert DIGEST in json.dumps(world.store.status)


def test_a_cut_kafka_refuses_is_named_and_tried_again_after_the_next_scan() -> None:
    world = delete_world(*CUT)
    kafka = world.kafka
    refuse = [True]
    delete = kafka.delete_records

    def refusing(cuts: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | KafkaFailure]:
        if refuse[0]:
            refuse[0] = False
            kafka.calls.append("delete_records")
            out: dict[TopicPartition, int | KafkaFailure] = dict(delete({P0: cuts[P0]}))
            out[P1] = KafkaFailure("NOT_LEADER_OR_FOLLOWER", "moving", False)
            return out
        return delete(cuts)

    kafka.delete_records = refusing  # type: ignore[method-assign]
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P0, 4)]
    assert "clicks-1 not cut: NOT_LEADER_OR_FOLLOWER" in world.store.status["topics"][0]["note"]
    assert "cuts" not in next(e for e in world.store.status["evidence"] if e["partition"] == 1)
    world.later(3)
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P0, 4), (P1, 2)]
    # Not a rewrite: the key was below a cut that never took.
    assert world.condition("Erased")["reason"] == Reason.RECORDS_CUT
    world.later(3)
    assert isinstance(world.run(), service.Outcome)
    assert world.store.status["phase"] == Phase.KEY_ERASED


def test_no_tombstone_is_ever_written_to_a_delete_or_tiered_topic() -> None:
    world = World(spec("users", "clicks", "archive"))
    kafka = world.kafka
    kafka.topic("users", 2, COMPACTED)
    kafka.topic("clicks", 2, DELETE)
    kafka.topic("archive", 1, TIERED)
    for topic, parts in (("users", 2), ("clicks", 2), ("archive", 1)):
        for p in range(parts):
            kafka.produce(TopicPartition(topic, p), KEY, b"v")
    for _ in range(3):
        world.run()
        world.later(10)
    assert kafka.written
    assert {policy for _, policy in kafka.written} == {"compact"}
    assert {tp.topic for tp, _ in kafka.written} == {"users"}
    kinds = {t["name"]: (t["kind"], t["stage"]) for t in world.store.status["topics"]}
    assert kinds["clicks"] == ("delete", Phase.AWAITING_RETENTION)
    assert kinds["archive"] == ("tiered", Phase.AWAITING_RETENTION)
    assert world.store.status["phase"] == Phase.TOMBSTONED


def test_a_delete_topic_awaits_retention_then_reaches_key_erased_without_a_write() -> None:
    world = World(spec("clicks"))
    kafka = world.kafka
    kafka.topic("clicks", 2, DELETE)
    kafka.produce(TopicPartition("clicks", 1), KEY, b"v")
    kafka.produce(TopicPartition("clicks", 1), b"other", b"v")

    waiting = world.run()
    assert isinstance(waiting, service.Retry)
    assert waiting.quiet
    status = world.store.status
    assert status["phase"] == Phase.AWAITING_RETENTION
    assert world.condition("Erased")["reason"] == Reason.AWAITING_RETENTION
    # At least retention.ms (1 h) and segment.ms (1 min) after the match's timestamp
    # (core.erasure_deadlines may add the broker's retention check interval).
    expected_by = status["topics"][0]["expectedBy"]
    assert "2026-11-29T13:01:00Z" <= expected_by < "2026-11-29T13:10:00Z"
    assert status["deadline"]["expectedKeyErasedAt"] == expected_by
    assert world.condition("DeadlineAtRisk")["status"] == "False"
    assert 300 >= waiting.delay >= 2

    # Before the expected time nothing is scanned again.
    world.later(600)
    kafka.calls.clear()
    assert isinstance(world.run(), service.Retry)
    assert not any(c.startswith("scan:") for c in kafka.calls)

    world.later(3700)
    kafka.expire("clicks")
    done = world.run()
    assert isinstance(done, service.Outcome)
    assert done.finished
    assert world.store.status["phase"] == Phase.KEY_ERASED
    assert kafka.written == []
    assert "write_tombstones" not in kafka.calls
    assert verify(json.loads(world.blobs.sets["receipt"]), SIGNING.public_key()) is None


def test_a_key_written_again_after_its_tombstone_gets_a_new_one_then_fails_after_three() -> None:
    world = compacted_world()
    kafka = world.kafka
    world.run()
    assert len(kafka.written) == 2
    tp0 = TopicPartition("users", 0)
    for round_ in (2, 3):
        kafka.produce(tp0, KEY, b"written again")
        world.later(5)
        result = world.run()
        assert isinstance(result, service.Retry)
        assert world.condition("Erased")["reason"] == Reason.KEY_REWRITTEN
        assert len(kafka.written) == round_ + 1  # one more, to partition 0 only
        assert kafka.written[-1][0] == tp0
    entry = next(e for e in world.store.status["evidence"] if e["partition"] == 0)
    assert ev.rewrites(entry) == 2
    # A third rewrite: no fourth tombstone, the erasure fails loudly.
    kafka.produce(tp0, KEY, b"and again")
    world.later(5)
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert world.store.status["phase"] == Phase.FAILED
    assert world.condition("Erased")["reason"] == Reason.KEY_REWRITTEN
    assert len(kafka.written) == 4


def test_a_tombstone_as_the_last_record_waits_for_a_segment_roll() -> None:
    world = World(spec("users"))
    world.kafka.topic("users", 1, COMPACTED)
    world.kafka.produce(TopicPartition("users", 0), KEY, b"v")
    world.run()
    world.later(5)
    world.run()
    assert world.condition("Erased")["reason"] == Reason.AWAITING_SEGMENT_ROLL


def test_without_the_signing_key_the_erasure_waits_unsigned_then_signs_after_a_fresh_scan() -> None:
    world = compacted_world()
    world.run()
    world.kafka.compact("users", drop_tombstones=True)
    world.key_available = False
    world.later(5)
    retry = world.run()
    assert isinstance(retry, service.Retry)
    assert not retry.quiet
    assert world.store.status["phase"] == Phase.KEY_ERASED
    assert not pipeline.finished(world.store.status)
    signed = world.condition("ReceiptSigned")
    assert (signed["status"], signed["reason"]) == ("False", Reason.SIGNING_KEY_UNAVAILABLE)
    assert world.condition("Ready")["status"] == "False"
    assert "receipt" not in world.blobs.sets

    world.key_available = True
    world.kafka.calls.clear()
    world.later(3600)
    done = world.run()
    assert isinstance(done, service.Outcome)
    assert done.finished
    assert world.condition("ReceiptSigned")["status"] == "True"
    assert pipeline.finished(world.store.status)
    # Signed an hour later: from a fresh scan of every partition, and stating its time.
    assert [c for c in world.kafka.calls if c.startswith("scan:")] == [
        "scan:users-0,users-1,users-2"
    ]
    assert "write_tombstones" not in world.kafka.calls
    receipt = json.loads(world.blobs.sets["receipt"])["receipt"]
    assert receipt["completedAt"] == receipt["phases"]["KeyErased"] == "2026-11-29T13:00:05Z"


def test_nothing_found_anywhere_is_key_erased_with_the_scan_as_evidence() -> None:
    world = World(spec("users"))
    world.kafka.topic("users", 2, COMPACTED)
    world.kafka.produce(TopicPartition("users", 0), b"someone-else", b"v")
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.finished
    assert world.store.status["phase"] == Phase.KEY_ERASED
    assert world.condition("Erased")["reason"] == Reason.NOTHING_FOUND
    assert world.kafka.written == []
    signed = json.loads(world.blobs.sets["receipt"])
    assert verify(signed) is None
    scanned = {(e["topic"], e["partition"]) for e in signed["receipt"]["evidence"]}
    assert scanned == {("users", 0), ("users", 1)}


def test_kafka_unreachable_keeps_the_phase_and_retries_with_ready_false() -> None:
    world = compacted_world()
    world.run()
    world.kafka.unavailable = True
    retry = world.run()
    assert isinstance(retry, service.Retry)
    assert not retry.quiet
    assert world.store.status["phase"] == Phase.TOMBSTONED
    assert world.condition("Ready")["reason"] == Reason.KAFKA_UNAVAILABLE


def test_evidence_beyond_the_status_limit_goes_to_configmaps_and_is_read_back() -> None:
    world = World(spec("users"))
    world.kafka.topic("users", 1, COMPACTED)
    keys = [b"k-%d" % i for i in range(ev.EVIDENCE_LIMIT + 5)]
    world.spec["keys"] = [{"sha256": hashlib.sha256(k).hexdigest()} for k in keys]
    # One partition per key would need many topics; spread them over two instead.
    world.kafka.topic("more", 2, COMPACTED)
    world.spec["topics"]["names"].append("more")
    for i, k in enumerate(keys):
        world.kafka.produce(TopicPartition("more", i % 2), k, b"v")
        world.kafka.produce(TopicPartition("users", 0), k, b"v")
    world.run()
    status = world.store.status
    assert len(status["evidence"]) == ev.EVIDENCE_LIMIT
    assert status["evidenceRef"]["configMap"] == "recorderasure-e-evidence"
    stored = json.loads(world.blobs.sets["evidence"])
    assert len(stored) == 2 * len(keys)
    for topic in ("users", "more"):
        world.kafka.compact(topic, drop_tombstones=True)
    world.later(5)
    world.run()
    assert world.store.status["phase"] == Phase.KEY_ERASED
    signed = json.loads(world.blobs.sets["receipt"])
    # Each (partition, digest), and the final scan of each of the 3 partitions.
    assert len(signed["receipt"]["evidence"]) == 2 * len(keys) + 3


@pytest.mark.parametrize(
    ("expected_in_s", "delay"),
    [(None, 60.0), (40, 10.0), (4, 2.0), (4000, 300.0), (-20, 10.0), (-2, 2.0)],
)
def test_the_next_look_is_a_quarter_of_the_time_left_and_grows_once_overdue(
    expected_in_s: int | None, delay: float
) -> None:
    now_ms = 1_000_000
    expected = None if expected_in_s is None else now_ms + expected_in_s * 1000
    assert pipeline.next_delay(expected, now_ms) == delay


def test_the_fake_refuses_a_tombstone_whose_key_does_not_hash_to_the_digest() -> None:
    kafka = FakeErasureKafka([NOW])
    kafka.topic("users", 1, COMPACTED)
    tp = TopicPartition("users", 0)
    kafka.produce(tp, b"other", b"v")
    answers = kafka.write_tombstones([TombstoneWrite(tp, DIGEST, 0)])
    assert isinstance(answers[(tp, DIGEST)], KafkaFailure)
    missing = TopicPartition("users", 7)
    answers = kafka.write_tombstones([TombstoneWrite(missing, DIGEST, 0)])
    assert isinstance(answers[(missing, DIGEST)], KafkaFailure)
    assert kafka.written == []
    assert cast(Any, kafka).logs[tp][-1].key == b"other"


class Posted:
    """kopf.info and kopf.warn as the handler calls them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def info(self, body: Any, *, reason: str, message: str) -> None:
        self.events.append(("Normal", str(reason), message))

    def warn(self, body: Any, *, reason: str, message: str) -> None:
        self.events.append(("Warning", str(reason), message))


def handler_run(
    monkeypatch: pytest.MonkeyPatch, answer: Any, cfg: Any = None
) -> tuple[Posted, list[service.Erasure], BaseException | None]:
    """One call of the handler's worker with reconcile answering `answer` (an Outcome to
    return, or an exception to raise); what it posted, what it was given, what it raised."""
    posted, given = Posted(), []

    def reconcile(erasure: service.Erasure) -> service.Outcome:
        given.append(erasure)
        if isinstance(answer, BaseException):
            raise answer
        return cast(service.Outcome, answer)

    monkeypatch.setattr(service, "reconcile", reconcile)
    monkeypatch.setattr(kopf, "info", posted.info)
    monkeypatch.setattr(kopf, "warn", posted.warn)
    memo = kopf.Memo(config=cfg or OperatorConfig(tenancy="open"))
    meta = {"uid": "u-1", "generation": 1, "creationTimestamp": "2026-11-29T12:00:00Z"}
    raised: BaseException | None = None
    try:
        handler._erase(
            Created(
                cast(Any, {}),
                cast(Any, spec("users")),
                cast(Any, {"startedAt": "2026-11-29T12:00:00Z"}),
                cast(Any, meta),
                "tenant",
                "e",
                0,
                memo,
            )
        )
    except BaseException as err:  # the test looks at what it was
        raised = err
    return posted, given, raised


def test_the_handler_waits_on_the_cleaner_quietly_posting_only_what_the_run_did(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    wait = service.Retry(
        "Tombstoned: waiting for the log cleaner",
        7.5,
        quiet=True,
        events=[(EventReason.TOMBSTONES_WRITTEN, f"2 tombstones; digests {DIGEST}")],
    )
    posted, _, raised = handler_run(monkeypatch, wait)
    assert isinstance(raised, kopf.TemporaryError)
    assert raised.delay == 7.5
    assert str(raised).startswith(erasure_logs.WAITING)  # kopf's line then made quiet
    assert posted.events == [("Normal", "TombstonesWritten", f"2 tombstones; digests {DIGEST}")]
    assert DIGEST in caplog.text


def test_the_handler_warns_when_a_run_cannot_proceed(monkeypatch: pytest.MonkeyPatch) -> None:
    posted, _, raised = handler_run(monkeypatch, service.Retry("KafkaUnavailable: down", 10))
    assert isinstance(raised, kopf.TemporaryError)
    assert [(kind, reason) for kind, reason, _ in posted.events] == [("Warning", "ErasurePending")]


def test_the_handler_ends_a_refused_erasure_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = service.Outcome(
        Phase.FAILED,
        "spec.keys[0].sha256: is not 64 hexadecimal characters",
        finished=True,
        reason=Reason.INVALID_SPEC,
        invalid_field="spec.keys[0].sha256",
    )
    posted, _, raised = handler_run(monkeypatch, refused)
    assert isinstance(raised, kopf.PermanentError)
    assert posted.events == [("Warning", "InvalidSpec", refused.message)]


def test_the_handler_signs_with_the_secret_the_operator_is_configured_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[tuple[str, str]] = []

    def read_signing_key(namespace: str, name: str) -> Ed25519PrivateKey:
        read.append((namespace, name))
        return SIGNING

    monkeypatch.setattr(handler, "read_signing_key", read_signing_key)
    cfg = OperatorConfig(operator_namespace="ops", erasure_signing_secret="receipts-key")
    done = service.Outcome(Phase.KEY_ERASED, "erased", finished=True)
    _, given, raised = handler_run(monkeypatch, done, cfg)
    assert raised is None
    assert given[0].signing_key() is SIGNING
    assert read == [("ops", "receipts-key")]
    assert (given[0].uid, given[0].name, given[0].namespace) == ("u-1", "e", "tenant")
    assert given[0].created == NOW
    # The erased digests go to the ledger in the operator's namespace.
    assert isinstance(given[0].ledger, KubeLedger)
    assert given[0].ledger.namespace == "ops"


def test_the_handler_names_a_refusal_by_its_own_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = service.Outcome(
        Phase.FAILED,
        "the cuts would remove 3 records of other keys, more than spec.maxCollateralRecords",
        finished=True,
        reason=Reason.COLLATERAL_ABOVE_LIMIT,
        invalid_field="spec.maxCollateralRecords",
    )
    posted, _, raised = handler_run(monkeypatch, refused)
    assert isinstance(raised, kopf.PermanentError)
    assert posted.events == [("Warning", "CollateralAboveLimit", refused.message)]


def test_a_delete_topic_whose_log_start_passed_every_match_is_verified_before_its_bound() -> None:
    world = World(spec("clicks"))
    world.kafka.topic("clicks", 1, DELETE)
    world.kafka.produce(TopicPartition("clicks", 0), KEY, b"v")
    world.run()
    assert world.store.status["phase"] == Phase.AWAITING_RETENTION
    world.later(60)  # long before retention.ms (1 h) says
    world.kafka.expire("clicks")
    done = world.run()
    assert isinstance(done, service.Outcome)
    assert world.store.status["phase"] == Phase.KEY_ERASED
    scans = world.store.status["evidence"][0]["scans"]
    assert (scans[-1]["phase"], scans[-1]["matches"]) == ("KeyErased", 0)


def test_an_unbounded_cleaner_puts_the_deadline_at_risk_naming_the_config() -> None:
    world = World(spec("users"))
    unbounded = {k: v for k, v in COMPACTED.items() if k != "max.compaction.lag.ms"}
    world.kafka.topic("users", 1, unbounded)
    world.kafka.produce(TopicPartition("users", 0), KEY, b"v")
    world.run()
    at_risk = world.condition("DeadlineAtRisk")
    assert (at_risk["status"], at_risk["reason"]) == ("True", Reason.ERASURE_DEADLINE_AT_RISK)
    assert "max.compaction.lag.ms" in at_risk["message"]
    assert world.store.status["deadline"]["atRisk"] is True
    assert "expectedKeyErasedAt" not in world.store.status["deadline"]
    assert [r for r, _ in world.events].count(EventReason.ERASURE_DEADLINE_AT_RISK) == 1
    world.later(5)
    world.run()  # still at risk: not announced again
    assert [r for r, _ in world.events].count(EventReason.ERASURE_DEADLINE_AT_RISK) == 1


def test_a_bounded_cleaner_meets_the_deadline_and_status_says_when() -> None:
    world = compacted_world()
    world.run()
    met = world.condition("DeadlineAtRisk")
    assert (met["status"], met["reason"]) == ("False", Reason.ERASURE_DEADLINE_MET)
    deadline = world.store.status["deadline"]
    assert deadline["requestedBy"] == "2026-12-29T12:00:00Z"  # 30 days from creation
    assert deadline["expectedValuesErasedAt"] < deadline["expectedKeyErasedAt"]
    # Times in status are RFC 3339, as the CRD's date-time fields take them.
    tombstone = world.store.status["evidence"][0]["tombstone"]
    assert tombstone["timestamp"] == "2026-11-29T12:00:00Z"


def test_the_receipt_vouches_for_every_listed_digest_even_one_found_nowhere() -> None:
    world = compacted_world()
    absent = hashlib.sha256(b"never written").hexdigest()
    world.spec["keys"].append({"sha256": absent})
    world.run()
    world.kafka.compact("users", drop_tombstones=True)
    world.later(5)
    world.run()
    receipt = json.loads(world.blobs.sets["receipt"])["receipt"]
    assert receipt["digests"] == sorted([DIGEST, absent])
    assert {"Scanning", "KeyErased"} <= set(receipt["phases"])


def test_a_pattern_selecting_more_topics_than_status_can_list_is_refused() -> None:
    world = World(spec(digest=DIGEST))
    world.spec["topics"] = {"pattern": "t-.*"}
    for i in range(pipeline.MAX_TOPICS + 1):
        world.kafka.topic(f"t-{i}", 1, COMPACTED)
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.topics"
    assert world.store.status["phase"] == Phase.FAILED
    assert not any(c.startswith(("scan:", "write")) for c in world.kafka.calls)


def test_kopfs_line_for_a_quiet_wait_is_info_and_no_event_and_other_failures_stay_loud() -> None:
    quiet = logging.LogRecord(
        "kopf.objects",
        logging.ERROR,
        __file__,
        1,
        f"Handler 'erasure' failed temporarily: {erasure_logs.WAITING} Tombstoned: waiting",
        None,
        None,
    )
    loud = logging.LogRecord(
        "kopf.objects",
        logging.ERROR,
        __file__,
        1,
        "Handler 'erasure' failed temporarily: KafkaUnavailable: down",
        None,
        None,
    )
    assert erasure_logs.QuietWaits().filter(quiet)
    assert erasure_logs.QuietWaits().filter(loud)
    assert (quiet.levelno, getattr(quiet, "k8s_skip", False)) == (logging.INFO, True)
    assert (loud.levelno, getattr(loud, "k8s_skip", False)) == (logging.ERROR, False)
    assert erasure_logs._QUIET_WAITS in logging.getLogger("kopf.objects").filters


def many_keys_world(count: int) -> tuple[World, list[bytes]]:
    """`users` (1 partition) and `more` (2), compacted: every key once in each topic."""
    world = World(spec("users", "more"))
    world.kafka.topic("users", 1, COMPACTED)
    world.kafka.topic("more", 2, COMPACTED)
    keys = [b"k-%d" % i for i in range(count)]
    world.spec["keys"] = [{"sha256": hashlib.sha256(k).hexdigest()} for k in keys]
    for i, k in enumerate(keys):
        world.kafka.produce(TopicPartition("more", i % 2), k, b"v")
        world.kafka.produce(TopicPartition("users", 0), k, b"v")
    return world, keys


def test_evidence_edited_in_its_configmaps_is_not_trusted_and_every_partition_is_rescanned() -> (
    None
):
    world, _ = many_keys_world(ev.EVIDENCE_LIMIT + 5)
    world.run()
    assert world.store.status["evidenceRef"]
    written = len(world.kafka.written)
    # The tenant drops the entries of `users` from the ConfigMaps; only `more` is cleaned.
    stored = json.loads(world.blobs.sets["evidence"])
    world.blobs.sets["evidence"] = json.dumps([e for e in stored if e["topic"] != "users"])
    world.kafka.compact("more", drop_tombstones=True)
    world.later(5)
    world.run()
    assert world.store.status["phase"] != Phase.KEY_ERASED
    assert "receipt" not in world.blobs.sets
    scans = [c for c in world.kafka.calls if c.startswith("scan:")]
    assert scans[-1] == "scan:more-0,more-1,users-0"  # a full first scan again
    # The tombstones already written are the last records of their keys: none again.
    assert len(world.kafka.written) == written
    users = next(t for t in world.store.status["topics"] if t["name"] == "users")
    assert users["stage"] == Phase.TOMBSTONED


@pytest.mark.parametrize("payload", ["{not json", '{"a": 1}', '[{"topic": 3}]', "[[]]"])
def test_malformed_stored_evidence_is_lost_evidence_never_a_crash(payload: str) -> None:
    world, _ = many_keys_world(ev.EVIDENCE_LIMIT + 5)
    world.run()
    world.blobs.sets["evidence"] = payload
    written = len(world.kafka.written)
    world.later(5)
    assert isinstance(world.run(), service.Retry)  # nothing else is raised
    assert world.store.status["phase"] == Phase.TOMBSTONED
    assert len(ev.load(world.store.status, world.blobs)) == 2 * (ev.EVIDENCE_LIMIT + 5)
    scans = [c for c in world.kafka.calls if c.startswith("scan:")]
    assert scans[-1] == "scan:more-0,more-1,users-0"
    assert len(world.kafka.written) == written


def test_a_key_produced_to_a_new_partition_after_the_first_scan_is_erased_before_the_receipt() -> (
    None
):
    world = compacted_world()
    world.run()
    tp2 = TopicPartition("users", 2)
    world.kafka.produce(tp2, KEY, b"new-address")  # partition 2 had no match
    for step in range(6):
        world.kafka.compact("users", drop_tombstones=step > 0)
        world.later(5)
        world.run()
    assert (tp2, "compact") in world.kafka.written
    assert world.kafka.keys_present(KEY) == []
    assert world.store.status["phase"] == Phase.KEY_ERASED
    receipt = json.loads(world.blobs.sets["receipt"])["receipt"]
    # The scan the receipt vouches for read every partition of the topic.
    final = {
        (e["topic"], e["partition"])
        for e in receipt["evidence"]
        if any(s["phase"] == "KeyErased" for s in e["scans"])
    }
    assert final == {("users", 0), ("users", 1), ("users", 2)}


def test_a_topic_at_key_erased_is_scanned_again_before_the_receipt() -> None:
    world = World(spec("users", "clicks"))
    world.kafka.topic("users", 1, COMPACTED)
    world.kafka.topic("clicks", 1, DELETE)
    world.kafka.produce(TopicPartition("users", 0), KEY, b"v")
    world.kafka.produce(TopicPartition("clicks", 0), KEY, b"v")
    world.run()
    world.kafka.compact("users", drop_tombstones=True)
    world.later(5)
    world.run()  # users at KeyErased; clicks awaits retention
    world.kafka.produce(TopicPartition("users", 0), KEY, b"again")
    world.later(4000)
    world.kafka.expire("clicks")
    world.run()
    assert world.store.status["phase"] != Phase.KEY_ERASED
    assert "receipt" not in world.blobs.sets
    assert world.kafka.written[-1][0] == TopicPartition("users", 0)


class SizedStore(Store):
    """The API server's limit: etcd refuses an object over 1.5 MiB (spec and status)."""

    LIMIT = 1536 * 1024

    def __init__(self, spec_: Mapping[str, Any]) -> None:
        super().__init__()
        self.spec_bytes = len(json.dumps(spec_))

    def patch(self, status: Mapping[str, Any]) -> None:
        merged = {k: v for k, v in {**self.status, **status}.items() if v is not None}
        if self.spec_bytes + len(json.dumps(merged)) > self.LIMIT:
            raise WriteRefused(500, "Internal Server Error", "etcdserver: request is too large")
        super().patch(status)


# What one status patch of an erasure of 10,000 digests may take: beside a spec of about
# 780 KB this keeps the object far below etcd's 1.5 MiB.
STATUS_PATCH_BOUND = 560 * 1024


def test_ten_thousand_digests_keep_every_status_patch_under_the_bound_and_finish() -> None:
    world, keys = many_keys_world(10_000)
    world.store = SizedStore(world.spec)
    assert world.store.spec_bytes > 700_000
    for step in range(7):
        if step == 1:
            for p in range(2):
                world.kafka.produce(TopicPartition("more", p), b"filler", b"v")
            world.kafka.produce(TopicPartition("users", 0), b"filler", b"v")
        if step in (2, 3):
            world.kafka.compact("users", drop_tombstones=step == 3)
            world.kafka.compact("more", drop_tombstones=step == 3)
        result = world.run()
        world.later(5)
        if isinstance(result, service.Outcome):
            break
    assert isinstance(result, service.Outcome)
    assert world.store.status["phase"] == Phase.KEY_ERASED
    assert "receipt" in world.store.status
    sizes = [len(json.dumps(p)) for p in world.store.patches]
    assert max(sizes) < STATUS_PATCH_BOUND, sizes
    assert len(world.kafka.written) == 2 * len(keys)


def test_a_refused_status_patch_after_tombstones_does_not_write_them_again() -> None:
    world = compacted_world()
    refuse_evidence_writes(
        world, 2, WriteRefused(500, "Internal Server Error", "etcdserver: request timed out")
    )
    first = world.run()
    assert isinstance(first, service.Retry)
    assert world.condition("Ready")["reason"] == Reason.STATE_NOT_PERSISTED
    assert len(world.kafka.written) == 2
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    assert len(world.kafka.written) == 2
    assert world.store.status["phase"] == Phase.TOMBSTONED
    assert all("tombstone" in e for e in world.store.status["evidence"])


def grant(allow: tuple[str, ...], protect: tuple[str, ...] = ()) -> Grant:
    return Grant("team-a", 0, frozenset({"erase"}), allow, protect, (r".+\.internal",))


def test_a_pattern_under_a_grant_scans_and_writes_only_the_topics_it_allows() -> None:
    world = World(spec(digest=DIGEST))
    world.spec["topics"] = {"pattern": ".*"}
    names = ("own-a", "own-secret", "own-x.internal", "other", "__consumer_offsets")
    for name in names:
        world.kafka.topic(name, 1, COMPACTED)
        world.kafka.produce(TopicPartition(name, 0), KEY, b"v")
    world.admitted = grant(("own-.*",), ("own-secret",))
    world.run()
    assert {tp.topic for tp, _ in world.kafka.written} == {"own-a"}
    assert [c for c in world.kafka.calls if c.startswith("scan:")] == ["scan:own-a-0"]
    assert [t["name"] for t in world.store.status["topics"]] == ["own-a"]


def test_a_topic_the_grant_no_longer_allows_is_refused_with_nothing_written() -> None:
    world = World(spec(digest=DIGEST))
    world.spec["topics"] = {"pattern": "own-.*"}
    for name in ("own-a", "own-b"):
        world.kafka.topic(name, 1, COMPACTED)
        world.kafka.produce(TopicPartition(name, 0), KEY, b"v")
    world.admitted = grant(("own-.*",))
    world.run()
    assert len(world.kafka.written) == 2
    world.kafka.produce(TopicPartition("own-b", 0), KEY, b"written again")
    world.admitted = grant(("own-.*",), ("own-b",))  # the admin protects own-b
    world.kafka.calls.clear()
    world.later(5)
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.topics"
    assert world.store.status["phase"] == Phase.FAILED
    ready = world.condition("Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.NOT_PERMITTED)
    assert "spec.topics" in ready["message"]
    assert "own-b" in ready["message"]
    assert len(world.kafka.written) == 2
    assert world.kafka.calls == []


def test_a_completed_status_that_never_fits_keeps_the_receipt_and_is_not_signed_again() -> None:
    world = compacted_world()
    world.run()
    world.kafka.compact("users", drop_tombstones=True)
    patch = world.store.patch

    def too_large(status_: Mapping[str, Any]) -> None:
        if "receipt" in status_ and status_.get("evidence") is not None:
            raise WriteRefused(500, "Internal Server Error", "etcdserver: request is too large")
        patch(status_)

    world.store.patch = too_large  # type: ignore[method-assign,assignment]
    world.later(5)
    done = world.run()
    assert isinstance(done, service.Outcome)
    assert pipeline.finished(world.store.status)
    assert world.store.status["receipt"]["sha256"]
    assert "evidence" not in world.store.status
    ready = world.condition("Ready")
    assert (ready["status"], ready["reason"]) == ("True", Reason.STATE_NOT_PERSISTED)
    world.kafka.calls.clear()
    assert isinstance(world.run(), service.Outcome)
    assert world.kafka.calls == []


def test_a_rewrite_answered_by_a_refused_run_counts_once_and_gets_no_second_tombstone() -> None:
    world = compacted_world()
    world.run()
    tp0 = TopicPartition("users", 0)
    world.kafka.produce(tp0, KEY, b"written again")
    refuse_evidence_writes(world, 1, WriteRefused(409, "Conflict", "the object has been modified"))
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    assert len(world.kafka.written) == 3
    world.later(5)
    assert isinstance(world.run(), service.Retry)
    assert len(world.kafka.written) == 3
    entry = next(e for e in world.store.status["evidence"] if e["partition"] == 0)
    assert ev.rewrites(entry) == 1
    assert entry["tombstone"]["offset"] == world.kafka.ends[tp0] - 1


def test_a_named_topic_that_does_not_exist_ends_the_erasure_naming_it_and_writes_nothing() -> None:
    world = compacted_world()
    world.spec["topics"] = {"names": ["users", "user"]}  # a typo beside the real one
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.topics.names[1]"
    assert world.store.status["phase"] == Phase.FAILED
    ready = world.condition("Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.TOPIC_NOT_FOUND)
    assert "topic user does not exist" in ready["message"]
    assert "receipt" not in world.store.status
    assert world.kafka.written == []
    assert not any(c.startswith("scan") for c in world.kafka.calls)


def test_a_pattern_matching_no_topic_ends_the_erasure_without_a_receipt() -> None:
    world = compacted_world()
    world.spec["topics"] = {"pattern": "customers-.*"}
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.topics.pattern"
    assert world.condition("Ready")["reason"] == Reason.TOPIC_NOT_FOUND
    assert "receipt" not in world.store.status
    assert world.kafka.written == []


def test_a_topic_deleted_while_its_erasure_waits_ends_it_unfinished_without_a_receipt() -> None:
    world = compacted_world()
    first = world.run()
    assert isinstance(first, service.Retry)
    assert world.store.status["phase"] == Phase.TOMBSTONED
    # The topic goes (its logs and config with it) before the cleaner was followed.
    for tp in [tp for tp in world.kafka.logs if tp.topic == "users"]:
        del world.kafka.logs[tp]
    del world.kafka.configs["users"]
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert world.store.status["phase"] == Phase.FAILED
    assert world.condition("Ready")["reason"] == Reason.TOPIC_NOT_FOUND
    assert world.condition("Ready")["message"] == (
        "topic users does not exist; the erasure is not complete"
    )
    assert "receipt" not in world.store.status


def test_cuts_beyond_max_collateral_records_end_failed_naming_the_field_with_nothing_cut() -> None:
    """The dry run showed 3 records of other keys; a limit of 2 (a key written again near
    the end since, say) must not be passed by an accepted cut: nothing is cut."""
    world = delete_world(*CUT, ("maxCollateralRecords", 2))
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.maxCollateralRecords"
    assert world.store.status["phase"] == Phase.FAILED
    ready = world.condition("Ready")
    assert ready["reason"] == Reason.COLLATERAL_ABOVE_LIMIT
    assert "would remove 3 records of other keys" in ready["message"]
    assert world.kafka.deleted == []


def test_cuts_over_more_partitions_than_the_binding_allows_in_one_purge_are_refused() -> None:
    """A cut is DeleteRecords, a RecordPurge's power: the binding's partitionsPerPurge
    caps it too (here 1, against the two partitions of clicks); nothing is cut."""
    world = delete_world(*CUT)
    world.admitted = replace(
        Grant("team-a", 0, frozenset({"erase", "purge"}), ("clicks",), (), ()),
        partitions_per_purge=1,
    )
    outcome = world.run()
    assert isinstance(outcome, service.Outcome)
    assert outcome.invalid_field == "spec.topics"
    ready = world.condition("Ready")
    assert ready["reason"] == Reason.QUOTA_EXCEEDED
    assert "cover 2 partitions" in ready["message"]
    assert "allows 1 in one cut (spec.limits.partitionsPerPurge)" in ready["message"]
    assert world.kafka.deleted == []
    assert world.kafka.written == []


def test_cuts_within_max_collateral_records_go_ahead() -> None:
    world = delete_world(*CUT, ("maxCollateralRecords", 3))
    assert isinstance(world.run(), service.Retry)
    assert world.kafka.deleted == [(P0, 4), (P1, 2)]
    assert world.store.status["summary"]["collateralRecords"] == 3


def test_max_collateral_records_must_be_a_whole_number() -> None:
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(SpecError) as refused:
            parse_erasure_spec({**spec("clicks"), "maxCollateralRecords": bad})
        assert refused.value.field == "spec.maxCollateralRecords"


# A compacted topic whose cleaner is days away: its own looks are minutes apart.
SLOW_COMPACTED = {**COMPACTED, "segment.ms": "604800000", "max.compaction.lag.ms": "604800000"}


def test_a_held_cuts_wake_ups_do_not_read_a_slow_compacted_topic_whole_each_time() -> None:
    """A held cut is looked at every 30 s (a position read); a compacted topic of the same
    erasure is scanned at its own pace, not at every one of those wake-ups."""
    world = World(
        spec(
            "clicks",
            "accounts",
            onDeleteTopics="cut",
            acceptCollateral=True,
            protectGroups=["auditor"],
        )
    )
    kafka = world.kafka
    kafka.topic("clicks", 1, DELETE)
    kafka.topic("accounts", 1, SLOW_COMPACTED)
    clicks, accounts = TopicPartition("clicks", 0), TopicPartition("accounts", 0)
    for tp in (clicks, accounts):
        kafka.produce(tp, b"other", b"v")
        kafka.produce(tp, KEY, b"address")
    assert isinstance(world.run(), service.Retry)
    assert world.store.status["phase"] == Phase.CUT_HELD
    assert kafka.deleted == []

    world.later(30)
    kafka.calls.clear()
    assert isinstance(world.run(), service.Retry)
    assert not any(c.startswith("scan:") and "accounts" in c for c in kafka.calls)

    world.later(600)
    kafka.calls.clear()
    assert isinstance(world.run(), service.Retry)
    assert any(c.startswith("scan:") and "accounts" in c for c in kafka.calls)


def test_a_partition_truncated_since_its_scan_is_not_cut_until_scanned_again() -> None:
    """clicks-0 was scanned to 5; the fresh read before the cut finds its high watermark at
    4 (a leader elected without the last record). What lies below the cut may not be what
    the scan read: nothing is cut there in this run; the next scan decides."""
    world = delete_world(*CUT)
    kafka = world.kafka
    bounds = kafka.log_bounds
    reads = [0]

    def after_truncation(
        tps: Iterable[TopicPartition],
    ) -> tuple[dict[TopicPartition, int | KafkaFailure], dict[TopicPartition, int | KafkaFailure]]:
        # The scan's read first, then the fresh read before the cut: truncated there.
        starts, ends = bounds(tps)
        reads[0] += 1
        if reads[0] == 2 and P0 in ends:
            ends = {**ends, P0: 4}
        return starts, ends

    kafka.log_bounds = after_truncation  # type: ignore[method-assign]
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P1, 2)]
    assert (
        "clicks-0 not cut: the high watermark fell to 4, below the 5"
        in (world.store.status["topics"][0]["note"])
    )
    world.later(3)
    assert isinstance(world.run(), service.Retry)
    assert kafka.deleted == [(P1, 2), (P0, 4)]
