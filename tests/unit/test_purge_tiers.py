"""A RecordPurge on tiered topics against an in-memory Kafka whose remote log manager
deletes remote segments below the log start as Kafka's does: later, one step at a time
(COPY_FINISHED -> DELETE_STARTED -> DELETE_FINISHED), and only when it runs."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kopf._core.intents import registries
from prometheus_client import CollectorRegistry

from kafka_retention import metrics
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.conditions import Reason
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.core.purge import PurgeRequest, parse_spec
from kafka_retention.core.purge_states import Phase
from kafka_retention.core.tiers import (
    BelowCuts,
    MetadataRecord,
    RemoteLog,
    RemoteSegment,
    SegmentId,
    SegmentState,
    SegmentUpdate,
    TierOffsets,
)
from kafka_retention.handlers import purge as purge_handler
from kafka_retention.handlers import remote_deletion
from kafka_retention.services import purge as service
from kafka_retention.services.purge import tiers
from tests.helpers.fakes import FakeLogs

TOPIC, PLAIN = "tiered", "plain"
T0, T1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
START = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
TIERED = {"cleanup.policy": "delete", "remote.storage.enable": "true"}


class Clock:
    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at

    def ms(self) -> int:
        return int(self.at.timestamp() * 1000)

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class TieredFakeKafka(FakeLogs):
    """Partitions with [log start, high watermark] and remote segments of 100 offsets and
    1000 bytes each. DeleteRecords moves the log start only; `remote_log_manager_run`
    moves each remote segment wholly below the log start one state on, as one run of the
    brokers' remote log manager would, recording each event in the metadata stream."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.logs: dict[TopicPartition, list[int]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        self.earliest_local: dict[TopicPartition, int] = {}
        self.segments: dict[TopicPartition, list[RemoteSegment]] = {}
        self.records: list[MetadataRecord] = []
        self.remote_unavailable: str | None = None
        self.deletes = 0
        self.remote_reads = 0
        self.topic_id = "topicid"  # every topic's, until a test makes one again

    def add(self, tp: TopicPartition, high: int, copied_segments: int) -> None:
        """A partition of `high` records whose first segments are copied to remote
        storage and gone from the brokers' disks (local retention)."""
        self.logs[tp] = [0, high]
        self.configs.setdefault(tp.topic, TIERED if tp.topic == TOPIC else {})
        for i in range(copied_segments):
            sid = SegmentId(tp.topic, self.topic_id, tp.partition, f"seg-{tp.partition}-{i}")
            started = RemoteSegment(
                sid, i * 100, i * 100 + 99, 1000, 0, SegmentState.COPY_STARTED, self.clock.ms()
            )
            self.records.append(started)
            self.records.append(SegmentUpdate(sid, SegmentState.COPY_FINISHED, self.clock.ms()))
            self.segments.setdefault(tp, []).append(started)
        self.earliest_local[tp] = copied_segments * 100

    def remote_log_manager_run(self) -> None:
        log = RemoteLog(self.records)
        for tp, (start, _) in self.logs.items():
            for seg in log.segments(tp):
                if seg.end_offset >= start:
                    continue
                if seg.state == SegmentState.COPY_FINISHED:
                    self.records.append(
                        SegmentUpdate(seg.id, SegmentState.DELETE_STARTED, self.clock.ms())
                    )
                elif seg.state == SegmentState.DELETE_STARTED:
                    self.records.append(
                        SegmentUpdate(seg.id, SegmentState.DELETE_FINISHED, self.clock.ms())
                    )

    # --- KafkaPlanner ---

    def _call(self, what: str) -> None:
        pass  # FakeLogs' reads are all answered

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        out: dict[str, list[int] | KafkaFailure] = {}
        for t in topics:
            parts = sorted(tp.partition for tp in self.logs if tp.topic == t)
            out[t] = parts or KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", t, False)
        return out

    def topic_configs(self, topics: Iterable[str]) -> dict[str, Mapping[str, str]]:
        return {t: self.configs.get(t, {}) for t in topics}

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, -1)

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        return {g: GroupRead(GroupType.NONE, dict.fromkeys(tps)) for g, tps in wanted.items()}

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self.deletes += 1
        out: dict[TopicPartition, int | KafkaFailure] = {}
        for tp, offset in cuts.items():
            start, end = self.logs[tp]
            if offset > end or offset < -1:
                out[tp] = KafkaFailure("OFFSET_OUT_OF_RANGE", f"{offset} vs {end}", False)
                continue
            self.logs[tp][0] = max(start, end if offset == -1 else offset)
            self.earliest_local[tp] = max(self.earliest_local[tp], self.logs[tp][0])
            out[tp] = self.logs[tp][0]
        return out

    def average_record_bytes(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, float]:
        return dict.fromkeys(ranges, 10.0)

    # --- TieredKafka ---

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, TierOffsets]:
        out: dict[TopicPartition, TierOffsets] = {}
        log = RemoteLog(self.records)
        for tp in tps:
            copied = [s for s in log.segments(tp) if s.state != SegmentState.COPY_STARTED]
            latest = max((s.end_offset for s in copied), default=None)
            out[tp] = TierOffsets(self.earliest_local[tp], latest, None)
        return out

    def local_bytes(self, topics: Iterable[str]) -> dict[str, int]:
        return dict.fromkeys(topics, 0)

    def remote_log(self) -> RemoteLog:
        self.remote_reads += 1
        if self.remote_unavailable is not None:
            raise KafkaUnavailable(self.remote_unavailable)
        return RemoteLog(list(self.records))

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        return dict.fromkeys(topics, self.topic_id)


class Store:
    """Status and ConfigMap sets in memory."""

    def __init__(self) -> None:
        self.status: dict[str, Any] = {}
        self.blobs: dict[str, str] = {}

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        self.blobs[suffix] = payload
        return {"configMap": f"cm-{suffix}", "chunks": 1, "bytes": len(payload)}

    def load(self, suffix: str) -> str | None:
        return self.blobs.get(suffix)

    def with_blob(self, suffix: str, payload: str) -> Store:
        self.blobs[suffix] = payload
        return self


def spec(*topics: str) -> dict[str, Any]:
    return {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": [{"name": t, "before": {"highWatermark": True}} for t in topics],
    }


def _input(
    kafka: TieredFakeKafka, store: Store, body: dict[str, Any], **more: Any
) -> service.Purge:
    """The purge as the handler hands it in, on the fake cluster and store."""

    def connect(_: PurgeRequest) -> TieredFakeKafka:
        return kafka

    return service.Purge(
        spec=body,
        status=dict(store.status),
        generation=1,
        store=store,
        blobs=store,
        connect=connect,
        now=kafka.clock,
        **more,
    )


def purge(kafka: TieredFakeKafka, store: Store, body: dict[str, Any]) -> service.Outcome:
    return service.reconcile(_input(kafka, store, body))


def follow(
    kafka: TieredFakeKafka, store: Store, body: dict[str, Any], limit_s: float = 3600
) -> service.RemoteReport | None:
    return service.follow_remote(_input(kafka, store, body, remote_watch_s=limit_s))


def remote_condition(store: Store) -> dict[str, Any]:
    (found,) = [c for c in store.status["conditions"] if c["type"] == "RemoteDeletionPending"]
    return dict(found)


@pytest.fixture
def kafka() -> TieredFakeKafka:
    fake = TieredFakeKafka(Clock())
    fake.add(T0, 450, copied_segments=3)  # remote 0-299, local from 300
    fake.add(T1, 250, copied_segments=1)  # remote 0-99, local from 100
    return fake


def test_a_cut_into_the_remote_range_succeeds_and_says_remote_segments_wait(
    kafka: TieredFakeKafka,
) -> None:
    store = Store()
    outcome = purge(kafka, store, spec(TOPIC))
    assert outcome.phase == Phase.SUCCEEDED
    assert kafka.logs[T0][0] == 450
    assert kafka.logs[T1][0] == 250
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("True", Reason.REMOTE_SEGMENTS_PENDING)
    assert found["message"].startswith(
        "4 remote segments (4.0 kB) below the cut in 2 partitions, not deleted yet"
    )
    tiered = store.status["tiered"]
    assert tiered["partitions"] == 2
    assert (tiered["remoteSegmentsPending"], tiered["remoteBytesPending"]) == (4, 4000)
    assert tiered["remoteSegmentsDeleted"] == 0
    assert tiered["since"] == "2026-11-29T10:00:00.000Z"
    assert outcome.remote is not None
    assert outcome.remote.pending == 4


def test_every_tiered_partitions_offsets_are_stored_and_the_first_listed_in_status(
    kafka: TieredFakeKafka,
) -> None:
    store = Store()
    purge(kafka, store, spec(TOPIC))
    lines = [json.loads(line) for line in store.blobs["tiers"].splitlines()]
    assert lines == [
        {
            "topic": TOPIC,
            "partition": 0,
            "cut": 450,
            "logStart": 450,
            "highWatermark": 450,
            "earliestLocal": 450,
            "latestTiered": 299,
            "topicId": "topicid",
        },
        {
            "topic": TOPIC,
            "partition": 1,
            "cut": 250,
            "logStart": 250,
            "highWatermark": 250,
            "earliestLocal": 250,
            "latestTiered": 99,
            "topicId": "topicid",
        },
    ]
    assert store.status["tiered"]["offsets"] == lines
    assert store.status["tiered"]["offsetsRef"]["configMap"] == "cm-tiers"


def test_the_condition_clears_once_each_segment_is_deleted_and_nothing_is_deleted_again(
    kafka: TieredFakeKafka,
) -> None:
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    kafka.clock.advance(3)
    kafka.remote_log_manager_run()  # DELETE_STARTED: still taking space
    report = follow(kafka, store, body)
    assert report is not None
    assert report.pending == 4
    found = remote_condition(store)
    assert found["status"] == "True"
    assert "4 of them being deleted" in found["message"]
    kafka.clock.advance(1.2)
    kafka.remote_log_manager_run()  # DELETE_FINISHED
    kafka.clock.advance(5)
    report = follow(kafka, store, body)
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("False", Reason.REMOTE_SEGMENTS_DELETED)
    assert found["message"] == "deleted 4 remote segments (4.0 kB) in 4.20s"
    assert report is not None
    assert report.lag_s == pytest.approx(4.2)
    assert report.changed
    assert store.status["tiered"]["remoteSegmentsPending"] == 0
    assert store.status["tiered"]["remoteDeletionSeconds"] == pytest.approx(4.2)
    assert kafka.deletes == 1
    # Cleared: the timer's filter lets go, and a further call checks nothing.
    assert not service.watched(store.status)
    reads = kafka.remote_reads
    kafka.clock.advance(60)
    assert follow(kafka, store, body) is None
    assert kafka.remote_reads == reads


def test_segments_of_a_former_topic_of_the_same_name_are_not_this_purges(
    kafka: TieredFakeKafka,
) -> None:
    # The topic was deleted and made again under its name: a segment of the old one is
    # stuck being deleted (KAFKA-16511), below this purge's cut by its offsets.
    old = SegmentId(TOPIC, "old-topic-id", 0, "old-seg")
    kafka.records.append(
        RemoteSegment(old, 0, 99, 1000, 0, SegmentState.DELETE_STARTED, kafka.clock.ms())
    )
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    assert store.status["tiered"]["remoteSegmentsPending"] == 4  # not 5
    kafka.clock.advance(3)
    kafka.remote_log_manager_run()
    kafka.clock.advance(1.2)
    kafka.remote_log_manager_run()
    kafka.clock.advance(5)
    follow(kafka, store, body)
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("False", Reason.REMOTE_SEGMENTS_DELETED)


def test_a_segment_the_cut_passes_only_partly_is_not_pending(kafka: TieredFakeKafka) -> None:
    store = Store()
    body = {
        "cluster": {"bootstrapServers": "k:9092"},
        "partitions": [{"topic": TOPIC, "partition": 0, "offset": 150}],
    }
    purge(kafka, store, body)
    found = remote_condition(store)
    # Segment 0-99 is below 150; segment 100-199 holds 150 and later: it stays.
    assert found["message"].startswith(
        "1 remote segment (1.0 kB) below the cut in 1 partition, not deleted yet"
    )
    assert store.status["tiered"]["partitions"] == 1


def test_a_cut_at_a_remote_segments_last_offset_leaves_it_and_says_none_waits(
    kafka: TieredFakeKafka,
) -> None:
    store = Store()
    body = {
        "cluster": {"bootstrapServers": "k:9092"},
        # Offset 99, the last of the remote segment 0-99, stays: so does the segment.
        "partitions": [{"topic": TOPIC, "partition": 1, "offset": 99}],
    }
    outcome = purge(kafka, store, body)
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("False", Reason.NO_REMOTE_SEGMENTS_BELOW_CUT)
    assert not service.watched(store.status)
    assert outcome.remote is not None
    assert outcome.remote.lag_s is None


def test_a_topic_without_remote_storage_gets_no_tiered_status_or_condition() -> None:
    fake = TieredFakeKafka(Clock())
    fake.add(TopicPartition(PLAIN, 0), 100, copied_segments=0)
    store = Store()
    outcome = purge(fake, store, spec(PLAIN))
    assert outcome.phase == Phase.SUCCEEDED
    assert "tiered" not in store.status
    assert all(c["type"] != "RemoteDeletionPending" for c in store.status["conditions"])
    assert outcome.remote is None
    assert fake.remote_reads == 0


def test_an_unreadable_remote_log_leaves_the_purge_succeeded_and_the_condition_unknown(
    kafka: TieredFakeKafka,
) -> None:
    kafka.remote_unavailable = "reading __remote_log_metadata: TOPIC_AUTHORIZATION_FAILED"
    store = Store()
    outcome = purge(kafka, store, spec(TOPIC))
    assert outcome.phase == Phase.SUCCEEDED
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("Unknown", Reason.REMOTE_LOG_UNREADABLE)
    assert "TOPIC_AUTHORIZATION_FAILED" in found["message"]
    assert "remoteSegmentsPending" not in store.status["tiered"]
    # Still watched: readable later, it is judged then.
    assert service.watched(store.status)
    kafka.remote_unavailable = None
    kafka.clock.advance(10)
    follow(kafka, store, spec(TOPIC))
    assert remote_condition(store)["reason"] == Reason.REMOTE_SEGMENTS_PENDING


def test_a_failed_check_keeps_the_condition_and_the_last_counts(kafka: TieredFakeKafka) -> None:
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    kafka.remote_unavailable = "_TRANSPORT: all brokers down"
    kafka.clock.advance(10)
    report = follow(kafka, store, body)
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("True", Reason.REMOTE_SEGMENTS_PENDING)
    assert store.status["tiered"]["remoteSegmentsPending"] == 4
    assert "all brokers down" in store.status["tiered"]["checkError"]
    assert report is not None
    assert report.pending == 4
    assert not report.changed
    # The next check that reads the remote log clears the error.
    kafka.remote_unavailable = None
    kafka.clock.advance(10)
    follow(kafka, store, body)
    assert store.status["tiered"]["checkError"] is None


def test_checks_thin_out_as_time_passes(kafka: TieredFakeKafka) -> None:
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    reads = kafka.remote_reads
    kafka.clock.advance(1)
    assert follow(kafka, store, body) is None  # checked a second ago
    kafka.clock.advance(5)
    assert follow(kafka, store, body) is not None
    kafka.clock.advance(600)
    assert follow(kafka, store, body) is not None  # ten minutes on: due at once
    kafka.clock.advance(30)
    assert follow(kafka, store, body) is None  # now every minute
    kafka.clock.advance(31)
    assert follow(kafka, store, body) is not None
    assert kafka.remote_reads == reads + 3


def test_the_watch_gives_up_after_its_limit(kafka: TieredFakeKafka) -> None:
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    kafka.clock.advance(3601)  # the remote log manager never ran
    report = follow(kafka, store, body)
    found = remote_condition(store)
    assert (found["status"], found["reason"]) == ("Unknown", Reason.REMOTE_DELETION_UNCONFIRMED)
    assert found["message"].startswith("not confirmed within 60m00s of the cut")
    assert "4 remote segments" in found["message"]
    assert not service.watched(store.status)
    assert report is not None
    assert report.changed
    assert remote_deletion.event(report) is not None


@pytest.mark.parametrize(
    "forge",
    [
        lambda lines: re.sub(r'"cut":\d+', '"cut":0', lines),  # nothing lies below a cut
        lambda lines: lines + json.dumps({"topic": "other-tenant", "partition": 0, "cut": 300}),
    ],
    ids=["cut-lowered", "other-topic"],
)
def test_stored_cuts_a_tenant_rewrote_end_the_watch_and_never_report_deletion(
    kafka: TieredFakeKafka, forge: Callable[[str], str]
) -> None:
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    assert store.status["tiered"]["remoteSegmentsPending"] == 4
    # A tenant may write the purge's ConfigMaps (their manifest too), not its status: a
    # cut lowered to 0 would have said no remote segment waits while four still do.
    forged = forge(store.blobs["tiers"])
    assert forged != store.blobs["tiers"]
    store.blobs["tiers"] = forged
    kafka.clock.advance(10)
    follow(kafka, store, body)
    found = remote_condition(store)
    assert found["reason"] == Reason.REMOTE_DELETION_UNCONFIRMED
    assert "do not match the checksum" in found["message"]
    assert store.status["tiered"]["remoteSegmentsPending"] == 4  # the last counts stand
    assert not service.watched(store.status)


def test_stored_cuts_read_back_keep_only_the_topics_the_spec_names() -> None:
    lines = tiers.to_lines([tiers.Place(TOPIC, 0, 400), tiers.Place("other-tenant", 0, 300)])
    request = parse_spec(spec(TOPIC))
    assert isinstance(request, PurgeRequest)
    ref = {"sha256": hashlib.sha256(lines.encode()).hexdigest()}
    found = tiers._stored_places(Store().with_blob("tiers", lines), request, ref)
    assert found == [tiers.Place(TOPIC, 0, 400)]


def test_lost_stored_cuts_end_the_watch_with_the_cause(kafka: TieredFakeKafka) -> None:
    store, body = Store(), spec(TOPIC)
    purge(kafka, store, body)
    del store.blobs["tiers"]
    kafka.clock.advance(10)
    follow(kafka, store, body)
    found = remote_condition(store)
    assert found["reason"] == Reason.REMOTE_DELETION_UNCONFIRMED
    assert "tiers ConfigMaps) are gone" in found["message"]


@pytest.mark.parametrize(
    "forged",
    ["[1]\n", "5\n", "null\n", "[" * 100_000 + "\n", '{"topic": "t"\n'],
    ids=["array", "number", "null", "deep", "broken"],
)
def test_stored_lines_that_are_no_partitions_are_refused_never_crashed_on(forged: str) -> None:
    # Behind the checksum, and still: lines that are JSON but no partition, or no JSON at
    # all, end the watch with the cause rather than crash the timer on every tick.
    request = parse_spec(spec(TOPIC))
    assert isinstance(request, PurgeRequest)
    ref = {"sha256": hashlib.sha256(forged.encode()).hexdigest()}
    with pytest.raises(tiers._CutsLost, match="cannot be read"):
        tiers._stored_places(Store().with_blob("tiers", forged), request, ref)


def test_a_resumed_purge_reads_which_topics_are_tiered(kafka: TieredFakeKafka) -> None:
    store, body = Store(), spec(TOPIC)
    lines = "".join(
        json.dumps(
            {
                "topic": TOPIC,
                "partition": p,
                "state": "Planned",
                "requestedOffset": hw,
                "logStartBefore": 0,
                "highWatermark": hw,
                "recordsToDelete": hw,
                "reason": "highWatermark",
            }
        )
        + "\n"
        for p, hw in ((0, 450), (1, 250))
    )
    store.blobs["plan"] = lines
    store.status = {"phase": Phase.PURGING, "planRef": {"configMap": "cm-plan"}}
    purge(kafka, store, body)
    assert store.status["phase"] == Phase.SUCCEEDED
    assert remote_condition(store)["reason"] == Reason.REMOTE_SEGMENTS_PENDING


def test_the_series_follow_the_reports() -> None:
    registry = CollectorRegistry()
    series = remote_deletion.RemoteDeletionSeries(*metrics.remote_deletion_series(registry))
    labels = {"kind": "RecordPurge", "namespace": "ns", "name": "p"}
    pending = tiers.judge(BelowCuts(pending=4, pending_bytes=4000), START)
    series.report("ns", "p", tiers.RemoteReport(pending, 4, 4000, None, True))
    assert (
        registry.get_sample_value("kafka_retention_remote_segments_pending_deletion", labels) == 4
    )
    assert (
        registry.get_sample_value("kafka_retention_remote_bytes_pending_deletion", labels) == 4000
    )
    done = tiers.judge(BelowCuts(deleted=4, deleted_bytes=4000, last_deleted_ms=1), START)
    series.report("ns", "p", tiers.RemoteReport(done, 0, 0, 4.2, True))
    assert (
        registry.get_sample_value("kafka_retention_remote_segments_pending_deletion", labels)
        is None
    )
    count = "kafka_retention_remote_deletion_lag_seconds_count"
    assert registry.get_sample_value(count, {"kind": "RecordPurge"}) == 1
    assert registry.get_sample_value(
        "kafka_retention_remote_deletion_lag_seconds_sum", {"kind": "RecordPurge"}
    ) == pytest.approx(4.2)


def test_one_event_when_the_deletion_completes() -> None:
    done = tiers.judge(BelowCuts(deleted=2, deleted_bytes=10, last_deleted_ms=1), START)
    posted: list[tuple[str, str]] = []
    warned: list[tuple[str, str]] = []
    report = tiers.RemoteReport(done, 0, 0, 1.0, True)
    remote_deletion.post(
        report, lambda r, m: posted.append((r, m)), lambda r, m: warned.append((r, m))
    )
    # The same state seen again (a later tick) posts nothing more.
    again = tiers.RemoteReport(done, 0, 0, 1.0, False)
    remote_deletion.post(
        again, lambda r, m: posted.append((r, m)), lambda r, m: warned.append((r, m))
    )
    assert posted == [("RemoteSegmentsDeleted", done.message)]
    assert warned == []


def test_a_kafka_that_cannot_read_tiers_is_never_asked() -> None:
    class Plain(TieredFakeKafka):
        remote_log = None  # type: ignore[assignment]
        tier_offsets = None  # type: ignore[assignment]

    fake = Plain(Clock())
    fake.add(T0, 100, copied_segments=1)
    store = Store()
    outcome = purge(fake, store, spec(TOPIC))
    assert outcome.phase == Phase.SUCCEEDED
    assert "tiered" not in store.status


def test_the_handlers_timer_runs_only_while_the_remote_deletion_is_watched() -> None:
    (timer,) = [
        h
        for h in registries.get_default_registry()._spawning._handlers
        if h.id == "remote-deletion"
    ]
    assert timer.when is not None
    for reason, watched in (
        (Reason.REMOTE_SEGMENTS_PENDING, True),
        (Reason.REMOTE_LOG_UNREADABLE, True),
        (Reason.REMOTE_SEGMENTS_DELETED, False),
        (Reason.REMOTE_DELETION_UNCONFIRMED, False),
    ):
        status = {"conditions": [{"type": "RemoteDeletionPending", "reason": str(reason)}]}
        assert purge_handler._remote_watched(status=status) is watched  # type: ignore[arg-type]
    assert purge_handler._remote_watched(status={"phase": "Succeeded"}) is False  # type: ignore[arg-type]


def test_a_dry_run_says_where_the_cut_falls_and_what_it_would_leave_to_delete_remotely(
    kafka: TieredFakeKafka,
) -> None:
    store = Store()
    body = {
        "cluster": {"bootstrapServers": "k:9092"},
        "partitions": [{"topic": TOPIC, "partition": 0, "offset": 250}],
        "dryRun": True,
    }
    outcome = purge(kafka, store, body)
    assert outcome.phase == Phase.SUCCEEDED
    assert kafka.deletes == 0
    tiered = store.status["tiered"]
    # The planned cut, 250, is below the earliest local offset: a cut into the remote range.
    (where,) = tiered["offsets"]
    assert (where["cut"], where["logStart"], where["earliestLocal"]) == (250, 0, 300)
    assert (tiered["remoteSegmentsBelowCut"], tiered["remoteBytesBelowCut"]) == (2, 2000)
    assert all(c["type"] != "RemoteDeletionPending" for c in store.status["conditions"])
    assert outcome.remote is None
    assert not service.watched(store.status)
