"""RetentionPolicy runs over tiered topics (KIP-405) with an in-memory Kafka whose remote
log behaves as the brokers' does: what status says of the retention in force and of the
bytes on disk and in remote storage, and RemoteDeletionPending after a cut."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.tiers import (
    MetadataRecord,
    RemoteLog,
    RemoteSegment,
    SegmentId,
    SegmentState,
    SegmentUpdate,
    TierOffsets,
)
from kafka_retention.handlers import retention as handler
from kafka_retention.services.policy.batches import Due, parse, run_batch
from kafka_retention.services.policy.run import PolicyRun, RunOutcome
from kafka_retention.services.ports import TieredKafka
from kafka_retention.services.watch.watches import Watches
from tests.helpers.policy_runs import NOW, FakeKafka, Store, env, spec_of

TIERED = {
    "cleanup.policy": "delete",
    "remote.storage.enable": "true",
    "retention.ms": "604800000",
    "retention.bytes": "-1",
    "local.retention.ms": "1000",
    "local.retention.bytes": "-2",
}
SEGMENT_BYTES = 1000
REPLICAS = 3


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class TieredFake(FakeKafka):
    """FakeKafka plus tiered storage as the brokers keep it: each partition's remote
    segments (10 offsets each, copied up to `tiered_to`), their metadata records in the
    order the brokers write them, and the remote log manager's task (`expire`), which
    moves a segment wholly below the log start to DELETE_STARTED and, at its next run, to
    DELETE_FINISHED (never straight to deleted, never before the log start moved)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[MetadataRecord] = []
        self.segments: dict[TopicPartition, list[RemoteSegment]] = {}
        self.local: dict[TopicPartition, int] = {}
        self.metadata_down = False
        self.topic_id = "AAAAAAAAAAAAAAAAAAAAAA"

    def tiered_topic(self, topic: str, partitions: int, end: int, tiered_to: int) -> None:
        """A tiered topic: offsets [0, end) in each partition, [0, tiered_to) copied to
        remote storage in segments of 10 offsets, the rest on the brokers' disks only."""
        self.configs[topic] = dict(TIERED)
        for p in range(partitions):
            tp = TopicPartition(topic, p)
            self.logs[tp] = [0, end]
            self.local[tp] = (end - tiered_to) * 10
            for base in range(0, tiered_to, 10):
                seg = RemoteSegment(
                    SegmentId(topic, self.topic_id, p, f"seg-{p}-{base}"),
                    base,
                    base + 9,
                    SEGMENT_BYTES,
                    0,
                    SegmentState.COPY_FINISHED,
                    _ms(NOW) - 60_000,
                )
                self.records.append(seg)
                self.segments.setdefault(tp, []).append(seg)

    def expire(self, at: datetime) -> None:
        """One run of the remote log manager's expiration task at `at`."""
        ms = _ms(at)
        for tp, segs in self.segments.items():
            for i, seg in enumerate(segs):
                if seg.end_offset >= self.logs[tp][0]:
                    continue
                if seg.state == SegmentState.DELETE_STARTED:
                    state = SegmentState.DELETE_FINISHED
                elif seg.state in (SegmentState.COPY_FINISHED, SegmentState.COPY_STARTED):
                    state = SegmentState.DELETE_STARTED
                else:
                    continue
                self.records.append(SegmentUpdate(seg.id, state, ms))
                segs[i] = RemoteSegment(
                    seg.id,
                    seg.start_offset,
                    seg.end_offset,
                    seg.size_bytes,
                    seg.max_timestamp_ms,
                    state,
                    ms,
                )

    def remote_bytes(self, topic: str) -> int:
        """What the remote store holds now: segments whose files are not deleted yet."""
        return sum(
            s.size_bytes
            for tp, segs in self.segments.items()
            if tp.topic == topic
            for s in segs
            if s.state != SegmentState.DELETE_FINISHED
        )

    # TieredKafka
    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, TierOffsets]:
        self._call("tier_offsets")
        out = {}
        for tp in tps:
            tiered = [s.end_offset for s in self.segments.get(tp, [])]
            last = max(tiered) if tiered else None
            start, end = self.logs[tp]
            out[tp] = TierOffsets(max(start, (last or -1) + 1), last, None if last else end)
        return out

    def local_bytes(self, topics: Iterable[str]) -> dict[str, int]:
        self._call("local_bytes")
        wanted = set(topics)
        out = dict.fromkeys(sorted(wanted), 0)
        for tp, size in self.local.items():
            if tp.topic in wanted:
                out[tp.topic] += size * REPLICAS  # DescribeLogDirs: every replica
        return out

    def remote_log(self) -> RemoteLog:
        self._call("remote_log")
        if self.metadata_down:
            raise KafkaUnavailable("reading __remote_log_metadata: TOPIC_AUTHORIZATION_FAILED")
        return RemoteLog(list(self.records))

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        return dict.fromkeys(topics, self.topic_id)


def _tiered(kafka: TieredFake) -> TieredKafka:
    return kafka  # the fake is a TieredKafka, as KafkaAdmin is (mypy checks it here)


def run_at(kafka: FakeKafka, store: Store, at: datetime, key: str = "ns/p", **fields: Any) -> Any:
    raw = spec_of(**fields)
    item = Due(PolicyRun(key, dict(store.status), 1, store, lambda: at), raw, parse(raw))
    return run_batch([item], {}, env(kafka), lambda: at)[key]


def conditions(store: Store) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in store.status["conditions"]}


def topic_entry(store: Store, name: str = "t") -> dict[str, Any]:
    return next(t for t in store.status["topics"] if t["name"] == name)


def test_a_tiered_topic_shows_the_retention_in_force_and_its_local_and_remote_bytes() -> None:
    kafka = TieredFake()
    _tiered(kafka)
    kafka.tiered_topic("t", partitions=2, end=45, tiered_to=30)
    kafka.commits = {"g": {}}  # a group that read nothing: no cut
    store = Store()
    outcome = run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]})
    assert outcome.ok
    assert topic_entry(store)["tiered"] == {
        "retentionMs": 604800000,
        "retentionBytes": -1,
        "localRetentionMs": 1000,
        "localRetentionBytes": -2,
        "localBytes": 2 * 15 * 10 * REPLICAS,
        "remoteBytes": 2 * 3 * SEGMENT_BYTES,
        "remoteBytesPendingDeletion": 0,
    }
    assert store.status["tiers"] == {
        "topics": 1,
        "localBytes": 900,
        "remoteBytes": 6000,
        "remoteBytesPendingDeletion": 0,
        "remoteSegmentsPendingDeletion": 0,
        "lastCutAt": None,
        "error": None,
    }
    # Nothing was cut: nothing to wait for, and no condition says otherwise.
    assert "RemoteDeletionPending" not in conditions(store)
    assert outcome.remote_pending_bytes == 0


def test_a_topic_that_is_not_tiered_reads_no_tiers_and_gets_no_tier_fields() -> None:
    kafka = TieredFake()
    kafka.logs[TopicPartition("t", 0)] = [0, 100]
    kafka.commits = {"g": {TopicPartition("t", 0): 50}}
    store = Store()
    outcome = run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]})
    assert kafka.logs[TopicPartition("t", 0)][0] == 50
    assert not {"local_bytes", "remote_log", "tier_offsets"} & set(kafka.calls)
    assert "tiered" not in topic_entry(store)
    assert "tiers" not in store.status
    assert "RemoteDeletionPending" not in conditions(store)
    assert outcome.remote_pending_bytes is None


def test_after_a_cut_remote_deletion_is_pending_until_the_metadata_shows_it_finished() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("t", partitions=2, end=45, tiered_to=30)
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    # Partition 0 cut at 25: segments [0-9] and [10-19] wholly below it, [20-29] not.
    # Partition 1 cut at 10: segment [0-9] below it.
    kafka.commits = {"g": {tp0: 25, tp1: 10}}
    spec: dict[str, Any] = {"deleteConsumed": {"groups": ["g"]}, "interval": "1m"}
    store = Store()
    first = run_at(kafka, store, NOW, **spec)
    assert [kafka.logs[tp0][0], kafka.logs[tp1][0]] == [25, 10]
    pending = conditions(store)["RemoteDeletionPending"]
    assert (pending["status"], pending["reason"]) == ("True", "RemoteSegmentsPending")
    assert "3 remote segment(s) (3000 bytes)" in pending["message"]
    assert "of 2 partition(s) (t-0, t-1)" in pending["message"]
    assert store.status["tiers"]["remoteBytesPendingDeletion"] == 3000
    assert store.status["tiers"]["remoteSegmentsPendingDeletion"] == 3
    assert store.status["tiers"]["lastCutAt"] == "2026-11-22T12:00:00.000Z"
    assert topic_entry(store)["tiered"]["remoteBytesPendingDeletion"] == 3000
    assert (first.remote_pending_segments, first.remote_pending_bytes) == (3, 3000)
    assert first.remote_deletion_lag_s is None

    # The remote log manager starts deleting: started is not finished.
    kafka.expire(NOW + timedelta(seconds=2))
    second = run_at(kafka, store, NOW + timedelta(minutes=1), **spec)
    assert conditions(store)["RemoteDeletionPending"]["status"] == "True"
    assert second.remote_pending_bytes == 3000
    assert second.remote_deletion_lag_s is None
    assert store.status["tiers"]["remoteBytes"] == 6000  # deletion started: still stored

    kafka.expire(NOW + timedelta(seconds=4, milliseconds=200))
    third = run_at(kafka, store, NOW + timedelta(minutes=2), **spec)
    done = conditions(store)["RemoteDeletionPending"]
    assert (done["status"], done["reason"]) == ("False", "RemoteSegmentsDeleted")
    assert "the last of the 3 deleted since the cut at 2026-11-22T12:00:00Z" in done["message"]
    assert "4.2s after it" in done["message"]
    assert (third.remote_pending_segments, third.remote_pending_bytes) == (0, 0)
    assert third.remote_deletion_lag_s is not None
    assert round(third.remote_deletion_lag_s, 3) == 4.2
    assert store.status["tiers"]["remoteBytes"] == kafka.remote_bytes("t") == 3000
    assert store.status["tiers"]["lastCutAt"] == "2026-11-22T12:00:00.000Z"

    # Later runs that cut nothing keep judging it, from the cut the status remembers.
    fourth = run_at(kafka, store, NOW + timedelta(minutes=3), **spec)
    assert fourth.remote_deletion_lag_s is None  # observed once, at the third run
    again = conditions(store)["RemoteDeletionPending"]
    assert (again["status"], again["message"]) == ("False", done["message"])


def test_a_cut_inside_the_first_remote_segment_waits_for_no_remote_segment() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("t", partitions=1, end=45, tiered_to=30)
    tp0 = TopicPartition("t", 0)
    kafka.commits = {"g": {tp0: 5}}  # below the end of the first remote segment (9)
    store = Store()
    run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]})
    assert kafka.logs[tp0][0] == 5
    judged = conditions(store)["RemoteDeletionPending"]
    assert (judged["status"], judged["reason"]) == ("False", "RemoteSegmentsDeleted")
    assert judged["message"] == "no remote segment below the log start is waiting for deletion"


def test_an_unreadable_remote_log_leaves_the_condition_unknown_and_the_run_succeeds() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("t", partitions=1, end=45, tiered_to=30)
    kafka.commits = {"g": {TopicPartition("t", 0): 25}}
    kafka.metadata_down = True
    store = Store()
    outcome = run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]})
    assert outcome.ok
    assert outcome.records_deleted == 25
    assert conditions(store)["Ready"]["status"] == "True"
    unknown = conditions(store)["RemoteDeletionPending"]
    assert (unknown["status"], unknown["reason"]) == ("Unknown", "RemoteLogUnreadable")
    assert "TOPIC_AUTHORIZATION_FAILED" in unknown["message"]
    tiers = store.status["tiers"]
    assert "TOPIC_AUTHORIZATION_FAILED" in tiers["error"]
    assert tiers["remoteBytes"] is None
    assert tiers["localBytes"] == 15 * 10 * REPLICAS
    assert "remoteBytes" not in topic_entry(store)["tiered"]
    assert outcome.remote_pending_bytes is None
    # The metadata readable again: the error goes, the condition is judged.
    kafka.metadata_down = False
    run_at(kafka, store, NOW + timedelta(minutes=5), deleteConsumed={"groups": ["g"]})
    assert store.status["tiers"]["error"] is None
    assert conditions(store)["RemoteDeletionPending"]["status"] == "True"


def test_a_failed_local_size_read_is_said_and_the_remote_figures_still_come() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("t", partitions=1, end=45, tiered_to=30)
    kafka.commits = {"g": {}}

    def refuse(topics: Iterable[str]) -> dict[str, int]:
        raise KafkaUnavailable("local log sizes: group reader exited 1")

    kafka.local_bytes = refuse  # type: ignore[method-assign]
    store = Store()
    assert run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]}).ok
    assert "local log sizes: group reader exited 1" in store.status["tiers"]["error"]
    assert store.status["tiers"]["localBytes"] is None
    assert store.status["tiers"]["remoteBytes"] == 3000


def test_a_connection_that_cannot_read_tiers_says_so_and_the_run_cuts() -> None:
    kafka = FakeKafka()  # the other services' fake: no TieredKafka methods
    tp0 = TopicPartition("t", 0)
    kafka.configs["t"] = dict(TIERED)
    kafka.logs[tp0] = [0, 100]
    kafka.commits = {"g": {tp0: 40}}
    store = Store()
    assert run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]}).ok
    assert kafka.logs[tp0][0] == 40
    assert "cannot read tiered storage" in store.status["tiers"]["error"]
    assert conditions(store)["RemoteDeletionPending"]["status"] == "Unknown"
    assert topic_entry(store)["tiered"]["localRetentionMs"] == 1000


def test_the_batch_reads_tiers_once_for_all_its_policies() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("a", partitions=1, end=45, tiered_to=30)
    kafka.tiered_topic("b", partitions=1, end=45, tiered_to=20)
    kafka.commits = {"g": {TopicPartition("a", 0): 15, TopicPartition("b", 0): 15}}
    stores = {"ns/pa": Store(), "ns/pb": Store()}
    items = []
    for key, topic in (("ns/pa", "a"), ("ns/pb", "b")):
        raw = spec_of(topics={"names": [topic]}, deleteConsumed={"groups": ["g"]})
        store = stores[key]
        items.append(Due(PolicyRun(key, {}, 1, store, lambda: NOW), raw, parse(raw)))
    outcomes = run_batch(items, {}, env(kafka), lambda: NOW)
    assert all(o.ok for o in outcomes.values())
    assert kafka.calls.count("remote_log") == 1
    assert kafka.calls.count("local_bytes") == 1
    # Each policy's figures are its own topics'.
    assert stores["ns/pa"].status["tiers"]["remoteBytes"] == 3000
    assert stores["ns/pb"].status["tiers"]["remoteBytes"] == 2000
    assert stores["ns/pa"].status["tiers"]["remoteSegmentsPendingDeletion"] == 1


def test_a_dry_run_cuts_nothing_and_waits_for_no_remote_deletion() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("t", partitions=1, end=45, tiered_to=30)
    kafka.commits = {"g": {TopicPartition("t", 0): 25}}
    store = Store()
    run_at(kafka, store, NOW, dryRun=True, deleteConsumed={"groups": ["g"]})
    assert kafka.logs[TopicPartition("t", 0)][0] == 0
    assert "RemoteDeletionPending" not in conditions(store)
    assert store.status["tiers"]["lastCutAt"] is None
    assert store.status["tiers"]["remoteBytes"] == 3000


def test_a_topic_no_longer_tiered_clears_the_tier_summary() -> None:
    kafka = TieredFake()
    kafka.tiered_topic("t", partitions=1, end=45, tiered_to=30)
    kafka.commits = {"g": {}}
    store = Store()
    run_at(kafka, store, NOW, deleteConsumed={"groups": ["g"]})
    assert store.status["tiers"]["topics"] == 1
    kafka.configs["t"]["remote.storage.enable"] = "false"
    run_at(kafka, store, NOW + timedelta(minutes=5), deleteConsumed={"groups": ["g"]})
    assert store.status["tiers"] is None  # a merge patch's null removes it
    assert "tiered" not in topic_entry(store)


def test_status_stays_bounded_with_hundreds_of_tiered_topics() -> None:
    kafka = TieredFake()
    for i in range(700):
        kafka.tiered_topic(f"t{i:03d}", partitions=1, end=45, tiered_to=30)
    kafka.commits = {"g": {}}
    store = Store()
    assert run_at(kafka, store, NOW, topics={"pattern": "t.*"}, deleteConsumed={"groups": ["g"]}).ok
    assert len(store.status["topics"]) == 500
    assert store.status["tiers"]["topics"] == 700
    assert store.status["tiers"]["remoteBytes"] == 700 * 3000
    # A tiered entry adds a few hundred bytes to a listed topic, at most.
    sizes = [len(json.dumps(t["tiered"])) for t in store.status["topics"]]
    assert max(sizes) < 300
    assert kafka.calls.count("remote_log") == 1


def _sample(name: str, policy: str) -> float | None:
    labels = {"kind": "RetentionPolicy", "namespace": "tiers-ns", "name": policy}
    value = REGISTRY.get_sample_value(f"kafka_retention_{name}", labels)
    return None if value is None else float(value)


def _lags() -> float:
    found = REGISTRY.get_sample_value(
        "kafka_retention_remote_deletion_lag_seconds_count", {"kind": "RetentionPolicy"}
    )
    return float(found or 0)


def test_the_handler_sets_the_remote_gauges_while_segments_wait_and_observes_the_lag() -> None:
    body: Mapping[str, Any] = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"namespace": "tiers-ns", "name": "p", "uid": "u"},
    }
    lags = _lags()
    waiting = RunOutcome(True, "ok", 60, remote_pending_segments=3, remote_pending_bytes=3000)
    handler.report(body, waiting)
    assert _sample("remote_segments_pending_deletion", "p") == 3
    assert _sample("remote_bytes_pending_deletion", "p") == 3000
    assert _lags() == lags
    # Deleted: the series go (as a purge's do), and the lag is observed once.
    done = RunOutcome(
        True,
        "ok",
        60,
        remote_pending_segments=0,
        remote_pending_bytes=0,
        remote_deletion_lag_s=4.2,
    )
    handler.report(body, done)
    assert _sample("remote_segments_pending_deletion", "p") is None
    assert _sample("remote_bytes_pending_deletion", "p") is None
    assert _lags() == lags + 1
    # Unknown (metadata unreadable): no series either, never a stale value.
    handler.report(body, waiting)
    handler.report(body, RunOutcome(True, "ok", 60))
    assert _sample("remote_bytes_pending_deletion", "p") is None


@pytest.mark.parametrize("last", ["True", "Unknown"])
def test_a_policy_that_no_longer_selects_a_tiered_topic_clears_its_remote_condition(
    last: str,
) -> None:
    before = [{"type": "RemoteDeletionPending", "status": last, "reason": "RemoteSegmentsPending"}]
    found = Watches(None, None, None, tiers=None, had_tiers=True).conditions(
        before, a_spec(), 2, NOW
    )
    (remote,) = [c for c in found if c["type"] == "RemoteDeletionPending"]
    assert remote["status"] == "False"
    assert "selects no tiered topic" in remote["message"]


def test_a_cleared_remote_condition_is_left_as_it_is_when_no_tiered_topic_remains() -> None:
    before = [
        {"type": "RemoteDeletionPending", "status": "False", "reason": "RemoteSegmentsDeleted"}
    ]
    found = Watches(None, None, None, tiers=None).conditions(before, a_spec(), 2, NOW)
    (remote,) = [c for c in found if c["type"] == "RemoteDeletionPending"]
    assert remote["reason"] == "RemoteSegmentsDeleted"


def a_spec() -> PolicySpec:
    parsed = parse(spec_of(deleteConsumed={"groups": ["g"]}))
    assert isinstance(parsed, PolicySpec)
    return parsed
