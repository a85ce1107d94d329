"""The RecordPurge service against an in-memory Kafka: ordering, restarts, retries, safety."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kafka_retention.adapters.kube_clusters import ClusterUnresolved
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import (
    KafkaFailure,
    KafkaUnavailable,
    SecretUnavailable,
    WriteRefused,
)
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_entry import PurgeEntry, from_lines, to_lines
from kafka_retention.core.purge_states import Phase, State
from kafka_retention.core.strimzi import StrimziError
from kafka_retention.handlers import purge as purge_handler
from kafka_retention.kube_objects.chunks import SinkError, assemble, sink_configmaps
from kafka_retention.services import purge as service
from kafka_retention.services.purge import pipeline
from kafka_retention.services.purge import report as purge_report
from kafka_retention.services.tenancy import Tenancy
from tests.helpers.fakes import FakeLogs, broker_refuses_delete

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


class FakeKafka(FakeLogs):
    """Offsets in memory, answering DeleteRecords as Kafka does: -1 means the high
    watermark, an offset past it (or below -1) is OFFSET_OUT_OF_RANGE, and one at or
    below the log start changes nothing."""

    def __init__(self, logs: dict[TopicPartition, list[int]]) -> None:
        self.logs = logs  # tp -> [log_start, high_watermark]
        self.configs: dict[str, dict[str, str]] = {}
        self.committed_offsets: dict[str, dict[TopicPartition, int]] = {}
        self.delete_failures: dict[TopicPartition, KafkaFailure] = {}
        self.unavailable = False
        self.calls: list[str] = []

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        if self.unavailable:
            raise KafkaUnavailable("_TRANSPORT: all brokers down")
        by_topic: dict[str, list[int]] = {}
        for tp in self.logs:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        out: dict[str, list[int] | KafkaFailure] = {}
        for t in topics:
            parts = sorted(by_topic.get(t, []))
            out[t] = parts or KafkaFailure("UNKNOWN_TOPIC_OR_PARTITION", t, False)
        return out

    def topic_configs(self, topics: Iterable[str]) -> dict[str, Mapping[str, str]]:
        return {t: self.configs.get(t, {"cleanup.policy": "delete"}) for t in topics}

    def _call(self, what: str) -> None:
        self.calls.append(what)

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        return dict.fromkeys(tps, -1)

    # What the cluster runs (None: unknown, so groups are read as before).
    features: ClusterFeatures | None = None

    def cluster_features(self) -> ClusterFeatures | None:
        self._call("cluster_features")
        return self.features

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        return {
            group: GroupRead(
                GroupType.CONSUMER if group in self.committed_offsets else GroupType.NONE,
                {tp: self.committed_offsets.get(group, {}).get(tp) for tp in tps},
            )
            for group, tps in wanted.items()
        }

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self.calls.append(f"delete:{sorted((str(tp), o) for tp, o in cuts.items())}")
        out: dict[TopicPartition, int | KafkaFailure] = {}
        for tp, offset in cuts.items():
            if tp in self.delete_failures:
                out[tp] = self.delete_failures[tp]
                continue
            start, end = self.logs[tp]
            policy = self.configs.get(tp.topic, {}).get("cleanup.policy", "delete")
            if broker_refuses_delete(policy, self.features):
                out[tp] = KafkaFailure("POLICY_VIOLATION", policy, False)
                continue
            if offset > end or offset < -1:
                out[tp] = KafkaFailure("OFFSET_OUT_OF_RANGE", f"{offset} vs {end}", False)
                continue
            self.logs[tp][0] = max(start, end if offset == -1 else offset)
            out[tp] = self.logs[tp][0]
        return out

    def average_record_bytes(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, float]:
        return dict.fromkeys(ranges, 100.0)


class Store:
    """Status and the ConfigMap sets, in memory; both record their writes in order."""

    def __init__(self, kafka: FakeKafka | None = None) -> None:
        self.status: dict[str, Any] = {}
        self.kafka = kafka
        self.blobs: dict[str, str] = {}
        self.refusal: WriteRefused | None = None  # what the API server answers a save
        # What the API server answers a status patch (None: stored).
        self.patch_refusal: Callable[[Mapping[str, Any]], WriteRefused | None] = lambda _: None

    def patch(self, status: Mapping[str, Any]) -> None:
        refusal = self.patch_refusal(status)
        if refusal is not None:
            raise refusal
        self.status.update(status)
        if self.kafka is not None:
            self.kafka.calls.append(f"status:{status.get('phase')}")

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        if self.refusal is not None:
            raise self.refusal
        self.blobs[suffix] = payload
        if self.kafka is not None:
            self.kafka.calls.append(f"saved:{suffix}")
        return {"configMap": f"cm-{suffix}", "chunks": 1, "bytes": len(payload)}

    def load(self, suffix: str) -> str | None:
        return self.blobs.get(suffix)


def run(
    spec: dict[str, Any],
    kafka: FakeKafka,
    store: Store,
    limit: int | None = None,
    **options: Any,
) -> service.Outcome:
    """One reconcile; `limit`: the binding's partitionsPerPurge (None: no tenancy);
    `options`: more fields of service.Purge."""

    def connect(_: PurgeRequest) -> FakeKafka:
        return kafka

    options.setdefault("now", lambda: NOW)
    return service.reconcile(
        service.Purge(
            spec=spec,
            status=dict(store.status),
            generation=1,
            store=store,
            blobs=store,
            connect=connect,
            admit=None if limit is None else (lambda _spec, _request: limit),
            **options,
        )
    )


def explicit(*cuts: tuple[int, int], **more: Any) -> dict[str, Any]:
    return {
        "cluster": {"bootstrapServers": "k:9092"},
        "partitions": [{"topic": "t", "partition": p, "offset": o} for p, o in cuts],
        **more,
    }


def test_plan_is_stored_before_anything_is_deleted() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    outcome = run(explicit((0, 40)), kafka, store)
    first_delete = next(i for i, c in enumerate(kafka.calls) if c.startswith("delete"))
    assert "status:Purging" in kafka.calls[:first_delete]
    assert outcome.phase == Phase.SUCCEEDED
    assert outcome.records_deleted == 40
    assert store.status["results"][0]["lowWatermark"] == 40


def test_dry_run_deletes_nothing_and_estimates_bytes() -> None:
    kafka = FakeKafka({T0: [10, 100]})
    store = Store()
    outcome = run(explicit((0, -1), dryRun=True), kafka, store)
    assert not any(c.startswith("delete") for c in kafka.calls)
    assert kafka.logs[T0] == [10, 100]
    assert outcome.phase == Phase.SUCCEEDED
    (entry,) = store.status["results"]
    assert entry["state"] == State.DRY_RUN
    assert entry["recordsToDelete"] == 90
    assert entry["bytesToDeleteEstimate"] == 9000
    assert store.status["summary"]["recordsDeleted"] == 0


def test_resumed_purge_executes_the_stored_plan_not_a_new_one() -> None:
    """`offset: -1` planned at high watermark 40 must not become 100 after a restart."""
    kafka = FakeKafka({T0: [0, 100]})
    store = planned_store(offset=40, high_watermark=40)
    run(explicit((0, -1)), kafka, store)
    assert kafka.logs[T0][0] == 40
    assert store.status["results"][0]["recordsDeleted"] == 40


def test_restart_after_the_delete_counts_records_once_and_deletes_nothing_more() -> None:
    kafka = FakeKafka({T0: [40, 100]})  # the delete happened before the crash
    store = planned_store(offset=40, high_watermark=40)
    outcome = run(explicit((0, -1)), kafka, store)
    assert not any(c.startswith("delete:[('t-0'") for c in kafka.calls)
    assert outcome.records_deleted == 40
    assert outcome.phase == Phase.SUCCEEDED


def test_a_protected_group_that_rewound_lowers_the_cut_at_purge_time() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    kafka.committed_offsets = {"audit": {T0: 50}}
    store = planned_store(offset=70, high_watermark=100)
    run(explicit((0, 70), protectGroups=["audit"]), kafka, store)
    assert kafka.logs[T0][0] == 50
    entry = store.status["results"][0]
    assert entry["requestedOffset"] == 50
    assert "lowered from 70" in entry["note"]


class RewindingGroup(FakeKafka):
    """Group "audit" moves to rewinds[n] right after its n-th read. The second read (the
    re-read while the plan is stored) answers only once the plan is being saved, and the
    save (SavesWhileRereading) only once that read has begun: one after the other, in
    either order, fails."""

    def __init__(self, rewinds: dict[int, int], reread_fails: bool = False) -> None:
        super().__init__({T0: [0, 100]})
        self.committed_offsets = {"audit": {T0: 70}}
        self.rewinds, self.reread_fails, self.reads = rewinds, reread_fails, 0
        self.rereading, self.saving = threading.Event(), threading.Event()

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        self.reads += 1
        if self.reads == 2:
            self.rereading.set()
            assert self.saving.wait(5), "the guard groups were re-read alone"
            if self.reread_fails:
                raise KafkaUnavailable("_TRANSPORT: all brokers down")
        out = super().group_positions(wanted)
        if self.reads in self.rewinds:
            self.committed_offsets["audit"][T0] = self.rewinds[self.reads]
        return out


class SavesWhileRereading(Store):
    def __init__(self, kafka: RewindingGroup) -> None:
        super().__init__(kafka)
        self.group = kafka

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        self.group.saving.set()
        assert self.group.rereading.wait(5), "the plan was stored alone"
        return super().save(suffix, payload)


def deletes(kafka: FakeKafka) -> list[str]:
    return [c for c in kafka.calls if c.startswith("delete")]


def test_the_guard_groups_are_re_read_while_the_plan_is_stored_and_still_lower_the_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plan reads "audit" at 70 and the group rewinds to 50 right after: the re-read
    beside the store sees 50, and 50 is what is cut."""
    monkeypatch.setattr(pipeline, "FRESH_WITHIN_S", 60.0)  # however slow this machine is
    kafka = RewindingGroup({1: 50})
    store = SavesWhileRereading(kafka)
    outcome = run(explicit((0, -1), protectGroups=["audit"]), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert kafka.reads == 2
    assert kafka.logs[T0][0] == 50
    (entry,) = store.status["results"]
    assert entry["requestedOffset"] == 50
    assert "lowered from 70" in entry["note"]
    assert kafka.calls.index("saved:plan") < kafka.calls.index("delete:[('t-0', 50)]")


def test_a_re_read_grown_old_while_the_plan_was_stored_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The group rewinds to 40 after the re-read beside the store answered, and the store
    outlasts FRESH_WITHIN_S: the positions are read once more, and 40 is cut."""
    monkeypatch.setattr(pipeline, "FRESH_WITHIN_S", -1.0)  # every store outlasts it
    kafka = RewindingGroup({1: 50, 2: 40})
    store = SavesWhileRereading(kafka)
    assert run(explicit((0, -1), protectGroups=["audit"]), kafka, store).phase == Phase.SUCCEEDED
    assert kafka.reads == 3
    assert deletes(kafka) == ["delete:[('t-0', 40)]"]


def test_a_re_read_failing_while_the_plan_is_stored_keeps_the_plan_and_deletes_nothing() -> None:
    kafka = RewindingGroup({1: 50}, reread_fails=True)
    store = SavesWhileRereading(kafka)
    with pytest.raises(service.Retry):
        run(explicit((0, -1), protectGroups=["audit"]), kafka, store)
    assert deletes(kafka) == []
    assert store.status["phase"] == "Purging"  # the next run executes the stored plan
    assert "plan" in store.blobs
    kafka.reread_fails = False
    assert run(explicit((0, -1), protectGroups=["audit"]), kafka, store).phase == Phase.SUCCEEDED
    assert deletes(kafka) == ["delete:[('t-0', 50)]"]  # read afresh, not the plan's 70


def test_a_plan_refused_while_the_groups_are_re_read_deletes_nothing() -> None:
    kafka = RewindingGroup({1: 50})
    store = SavesWhileRereading(kafka)
    store.refusal = api_error(403, "Forbidden", 'configmaps "kr-x" is forbidden: exceeded quota')
    outcome = run(explicit((0, -1), protectGroups=["audit"]), kafka, store)
    assert outcome.phase == Phase.FAILED
    assert deletes(kafka) == []
    assert kafka.reads == 2  # the re-read ran to its end, and was not used
    assert store.status["phase"] == "Failed"


def test_a_protected_group_without_commit_keeps_the_whole_partition() -> None:
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    kafka.committed_offsets = {"audit": {T0: 100}}
    store = Store()
    run(explicit((0, -1), (1, -1), protectGroups=["audit"]), kafka, store)
    assert kafka.logs[T0][0] == 100
    assert kafka.logs[T1][0] == 0


def test_status_says_what_each_protecting_group_was_read_as() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    kafka.committed_offsets = {"audit": {T0: 40}}
    store = Store()
    run(explicit((0, -1), protectGroups=["ghost", "audit"]), kafka, store)
    # "ghost" is no group at all: it protects the whole partition.
    assert kafka.logs[T0][0] == 0
    assert store.status["groups"] == [
        {"name": "audit", "type": "consumer"},
        {"name": "ghost", "type": "none"},
    ]


def test_retriable_failure_keeps_the_partition_pending_then_finishes() -> None:
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    kafka.delete_failures[T1] = KafkaFailure("NOT_LEADER_OR_FOLLOWER", "moved", True)
    store = Store()
    with pytest.raises(service.Retry):
        run(explicit((0, 10), (1, 20)), kafka, store)
    states = {e["partition"]: e["state"] for e in store.status["results"]}
    assert states == {0: State.PURGED, 1: State.RETRYING}
    assert store.status["phase"] == Phase.PURGING
    del kafka.delete_failures[T1]
    outcome = run(explicit((0, 10), (1, 20)), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert outcome.records_deleted == 30
    assert kafka.logs[T0][0] == 10
    assert kafka.logs[T1][0] == 20


def test_permanent_failure_on_some_partitions_is_partial_success() -> None:
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    kafka.delete_failures[T1] = KafkaFailure("TOPIC_AUTHORIZATION_FAILED", "denied", False)
    store = Store()
    outcome = run(explicit((0, 10), (1, 20)), kafka, store)
    assert outcome.phase == Phase.PARTIALLY_SUCCEEDED
    assert outcome.failures == ["t-1: TOPIC_AUTHORIZATION_FAILED: denied"]
    cond = {c["type"]: c for c in store.status["conditions"]}
    assert cond["Succeeded"]["reason"] == "PartiallyFailed"


def test_compact_only_topic_fails_before_any_delete_with_plain_words() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    kafka.configs["t"] = {"cleanup.policy": "compact"}
    store = Store()
    outcome = run(explicit((0, 10)), kafka, store)
    assert not any(c.startswith("delete:[('t") for c in kafka.calls)
    assert outcome.phase == Phase.FAILED
    assert "cleanup.policy=compact" in store.status["results"][0]["error"]


def test_compact_and_delete_topic_is_purged() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    kafka.configs["t"] = {"cleanup.policy": "compact,delete"}
    assert run(explicit((0, 10)), kafka, Store()).phase == Phase.SUCCEEDED


def test_invalid_spec_never_reaches_kafka() -> None:
    def connect(_: PurgeRequest) -> FakeKafka:
        raise AssertionError("connected to Kafka for an invalid spec")

    store = Store()
    spec = explicit((0, -5))
    outcome = service.reconcile(
        service.Purge(
            spec=spec,
            status={},
            generation=1,
            store=store,
            blobs=store,
            connect=connect,
            now=lambda: NOW,
        )
    )
    assert outcome.phase == Phase.FAILED
    assert outcome.invalid_field == "spec.partitions[0].offset"
    cond = {c["type"]: c for c in store.status["conditions"]}
    assert cond["Ready"]["reason"] == "InvalidSpec"
    assert "spec.partitions[0].offset" in cond["Ready"]["message"]


def test_unreachable_kafka_deletes_nothing_and_retries() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    kafka.unavailable = True
    store = Store()
    with pytest.raises(service.Retry):
        run(explicit((0, 10)), kafka, store)
    assert kafka.logs[T0] == [0, 100]
    cond = {c["type"]: c for c in store.status["conditions"]}
    assert cond["Ready"]["status"] == "False"
    assert cond["Ready"]["reason"] == "KafkaUnavailable"


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (
            ClusterUnresolved(StrimziError("spec.cluster.strimzi.kafka", "no such Kafka")),
            "ClusterUnresolved",
        ),
        (
            SecretUnavailable("Secret ns/client (spec.cluster.clientConfigSecret): Not Found"),
            "SecretUnavailable",
        ),
    ],
)
def test_a_cluster_that_cannot_be_named_yet_deletes_nothing_and_retries(
    raised: SecretUnavailable, reason: str
) -> None:
    """The handler's connector hands the Kubernetes adapter's lookup failures to the
    service as Unresolved, with the condition's reason (the service imports no Kubernetes
    client, so that `kafka-retention purge` starts fast)."""

    def resolve(*_: Any) -> tuple[str, dict[str, str]]:
        raise raised

    # Open tenancy: the spec names its cluster inline, resolved in its own namespace.
    rules = Tenancy("open", lambda _: None, lambda _: None, lambda _: ("", {}), resolve)
    store = Store()
    with pytest.raises(service.Retry):
        service.reconcile(
            service.Purge(
                spec=explicit((0, 10)),
                status={},
                generation=1,
                store=store,
                blobs=store,
                connect=purge_handler._connector(rules, "ns"),
                now=lambda: NOW,
            )
        )
    cond = {c["type"]: c for c in store.status["conditions"]}
    assert (cond["Ready"]["status"], cond["Ready"]["reason"]) == ("False", reason)
    assert str(raised) in cond["Ready"]["message"]
    assert store.status["phase"] == Phase.PENDING


def test_finished_purge_is_left_alone() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store()
    store.status = {"phase": Phase.SUCCEEDED}
    run(explicit((0, -1)), kafka, store)
    assert kafka.calls == []
    assert kafka.logs[T0] == [0, 100]


def test_results_stay_bounded_but_list_every_failure() -> None:
    entries = [
        {"topic": f"t{i % 3}", "partition": i, "state": State.PURGED, "recordsDeleted": 1}
        for i in range(3000)
    ]
    entries += [{"topic": "t0", "partition": 9999, "state": State.FAILED, "error": "boom"}]
    folded = purge_report.fold_results([PurgeEntry.from_status(e) for e in entries], limit=1000)
    assert len(folded) == 4
    assert folded[0]["error"] == "boom"
    assert sum(e.get("recordsDeleted", 0) for e in folded) == 3000


def test_kafka_lost_after_planning_keeps_the_stored_plan_for_the_next_run() -> None:
    """The plan (-1 at high watermark 100) is stored; Kafka vanishes before the delete;
    records keep arriving; the next run must still cut at 100, not at the new end."""
    kafka = FakeKafka({T0: [0, 100]})
    store = Store()

    class VanishesBeforeDelete(FakeKafka):
        def delete_records(self, cuts: Mapping[TopicPartition, int]) -> Any:
            raise KafkaUnavailable("_TRANSPORT: broker went away")

    flaky = VanishesBeforeDelete(kafka.logs)
    with pytest.raises(service.Retry):
        run(explicit((0, -1)), flaky, store)
    assert store.status["phase"] == Phase.PURGING
    kafka.logs[T0][1] = 250  # more records arrive meanwhile
    outcome = run(explicit((0, -1)), kafka, store)
    assert kafka.logs[T0][0] == 100
    assert outcome.records_deleted == 100


def test_purge_too_large_for_its_stored_plan_fails_before_deleting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "MAX_PLANNED_PARTITIONS", 1)
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    store = Store()
    outcome = run(explicit((0, 10), (1, 10)), kafka, store)
    assert outcome.phase == Phase.FAILED
    assert "split it" in outcome.message
    assert not any(c.startswith("delete") for c in kafka.calls)
    cond = {c["type"]: c for c in store.status["conditions"]}
    assert cond["Succeeded"]["reason"] == "TooManyPartitions"


def test_the_plan_goes_to_its_configmaps_then_status_then_kafka() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    run(explicit((0, 40)), kafka, store)
    order = [c for c in kafka.calls if c.startswith(("saved", "status:Purging", "delete"))]
    assert order[:3] == ["saved:plan", "status:Purging", "delete:[('t-0', 40)]"]
    assert store.status["planRef"]["partitions"] == 1


def big_kafka(topics: int, per_topic: int) -> FakeKafka:
    return FakeKafka(
        {TopicPartition(f"t{t:03d}", p): [0, 5] for t in range(topics) for p in range(per_topic)}
    )


def whole_topics(topics: int) -> dict[str, Any]:
    return {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": [{"name": f"t{t:03d}", "before": {"highWatermark": True}} for t in range(topics)],
    }


def test_status_stays_small_at_a_hundred_thousand_partitions() -> None:
    kafka = big_kafka(500, 200)
    store = Store()
    outcome = run(whole_topics(500), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert outcome.records_deleted == 5 * 100_000
    assert all(log[0] == 5 for log in kafka.logs.values())
    size = len(json.dumps(store.status))
    assert size < 256 * 1024, size
    # Status lists the busiest topics and says how many more there are ...
    assert store.status["results"][-1]["note"].startswith("... and 300 more topics")
    # ... and every partition's outcome is kept beside it.
    results = from_lines(store.blobs["results"])
    assert len(results) == 100_000
    assert {r.state for r in results} == {State.PURGED}


def test_a_restart_runs_the_stored_plan_never_a_new_one() -> None:
    kafka = big_kafka(3, 2000)
    store = Store()

    class DownAtDelete(FakeKafka):
        def delete_records(self, cuts: Mapping[TopicPartition, int]) -> Any:
            raise KafkaUnavailable("_TRANSPORT: broker went away")

    with pytest.raises(service.Retry):
        run(whole_topics(3), DownAtDelete(kafka.logs), store)
    assert store.status["phase"] == Phase.PURGING
    assert len(store.status["results"]) < 6000  # folded: the plan itself is in the blob
    for log in kafka.logs.values():
        log[1] = 50  # more records arrive before the restart
    outcome = run(whole_topics(3), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert {tuple(log) for log in kafka.logs.values()} == {(5, 50)}


def api_error(status: int, reason: str, body: str) -> WriteRefused:
    return WriteRefused(status, reason, body)


def test_a_plan_the_api_server_refuses_fails_the_purge_naming_why_and_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.refusal = api_error(403, "Forbidden", 'configmaps "kr-x" is forbidden: exceeded quota')
    outcome = run(explicit((0, 40)), kafka, store)
    assert outcome.phase == Phase.FAILED
    assert not any(c.startswith("delete") for c in kafka.calls)
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "StateNotPersisted"
    assert "exceeded quota" in ready["message"]
    assert "nothing was deleted" in ready["message"]


def test_a_transient_refusal_retries_with_the_cause_in_a_condition() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.refusal = api_error(503, "Service Unavailable", "etcd leader changed")
    with pytest.raises(service.Retry, match="StateNotPersisted"):
        run(explicit((0, 40)), kafka, store)
    assert not any(c.startswith("delete") for c in kafka.calls)
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "StateNotPersisted")
    assert "etcd leader changed" in ready["message"]


def test_a_lost_stored_plan_ends_the_purge_rather_than_planning_again() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.status = {"phase": Phase.PURGING, "planRef": {"configMap": "kr-recordpurge-x-plan"}}
    outcome = run(explicit((0, -1)), kafka, store)
    assert outcome.phase == Phase.FAILED
    assert not any(c.startswith(("delete", "offsets")) for c in kafka.calls)
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "StateNotPersisted"
    assert "kr-recordpurge-x-plan is gone" in ready["message"]


def planned_store(offset: int, high_watermark: int) -> Store:
    """The status a purge stored once it planned partition t-0 (log start 0) to `offset`
    and stopped before the delete: what a restarted operator finds."""
    store = Store()
    planned = {
        "topic": "t",
        "partition": 0,
        "state": State.PLANNED,
        "requestedOffset": offset,
        "logStartBefore": 0,
        "highWatermark": high_watermark,
        "recordsToDelete": offset,
    }
    store.status = {"phase": Phase.PURGING, "startedAt": "x", "results": [planned]}
    return store


class ChunkedStore(Store):
    """The ConfigMap sets as the adapter writes them: gzipped chunks plus a checksummed
    manifest, read back through the same `assemble` (so a damaged set is refused)."""

    def __init__(self, kafka: FakeKafka | None = None) -> None:
        super().__init__(kafka)
        self.configmaps: dict[str, list[dict[str, Any]]] = {}

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        ref = super().save(suffix, payload)
        self.configmaps[suffix] = sink_configmaps(
            "kr-recordpurge-x", "ns", payload, suffix=suffix, compress=True
        )
        return {**ref, "chunks": len(self.configmaps[suffix]) - 1}

    def load(self, suffix: str) -> str | None:
        objects = self.configmaps.get(suffix)
        return None if objects is None else assemble(objects[-1], objects[:-1])


def test_a_plan_of_a_hundred_thousand_partitions_fits_a_few_configmaps_and_reads_back() -> None:
    entries = [
        {
            "topic": f"orders-{t:03d}",
            "partition": p,
            "state": State.PLANNED,
            "requestedOffset": 1000 + p,
            "logStartBefore": p,
            "highWatermark": 1000 + p,
            "recordsToDelete": 1000,
            "reason": "high watermark (-1)",
        }
        for t in range(100)
        for p in range(1000)
    ]
    payload = to_lines([PurgeEntry.from_status(e) for e in entries])
    objects = sink_configmaps("kr-recordpurge-x", "ns", payload, suffix="plan", compress=True)
    manifest, parts = objects[-1], objects[:-1]
    assert len(payload) > 18 * 1024 * 1024  # ~190 bytes a partition: far over 1 MiB
    assert 1 <= len(parts) <= 3
    read_back = from_lines(assemble(manifest, list(reversed(parts))))
    assert [e.to_status() for e in read_back] == entries
    tampered = [dict(p) for p in parts]
    tampered[0] = {**parts[0], "binaryData": {"part": base64.b64encode(b"x").decode()}}
    with pytest.raises(SinkError, match="checksum"):
        assemble(manifest, tampered)
    with pytest.raises(SinkError, match="parts"):
        assemble(manifest, parts[1:] if len(parts) > 1 else [])


def test_a_restart_resumes_the_stored_plan_exactly_with_minus_one_as_it_was_planned() -> None:
    """20,000 explicit `-1` cuts: the plan (high watermark 5 at plan time) goes to the
    chunked ConfigMaps; Kafka is lost at the delete; records arrive; a new process (a new
    reconcile with nothing but the stored state) cuts at 5, never at the new end."""
    kafka = big_kafka(20, 1000)
    store = ChunkedStore()
    spec = {
        "cluster": {"bootstrapServers": "k:9092"},
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "offset": -1} for tp in kafka.logs
        ],
    }

    class DownAtDelete(FakeKafka):
        def delete_records(self, cuts: Mapping[TopicPartition, int]) -> Any:
            raise KafkaUnavailable("_TRANSPORT: broker went away")

    with pytest.raises(service.Retry):
        run(spec, DownAtDelete(kafka.logs), store)
    assert store.status["phase"] == Phase.PURGING
    assert store.status["planRef"]["partitions"] == 20_000
    planned = from_lines(store.load("plan") or "")
    assert {e.requested_offset for e in planned} == {5}
    for log in kafka.logs.values():
        log[1] = 50
    outcome = run(spec, kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert {tuple(log) for log in kafka.logs.values()} == {(5, 50)}
    assert outcome.records_deleted == 5 * 20_000


def test_a_stored_plan_with_a_field_this_release_cannot_read_ends_the_purge() -> None:
    """A plan whose checksum holds but whose entry has a key the entry type does not know
    (written by a newer release, or by a tenant who rewrote the ConfigMaps whole): it is
    not guessed at, and nothing is deleted."""
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.status = {"phase": Phase.PURGING, "planRef": {"configMap": "kr-recordpurge-x-plan"}}
    store.blobs["plan"] = (
        '{"logStartBefore": 0, "highWatermark": 100, "partition": 0, "requestedOffset": 100,'
        ' "state": "Planned", "topic": "t", "cutAbove": 100}\n'
    )
    assert "cutAbove" in ended_deleting_nothing(run(explicit((0, 40)), kafka, store), kafka, store)


def ended_deleting_nothing(outcome: service.Outcome, kafka: FakeKafka, store: Store) -> str:
    """The purge failed before reading offsets or deleting; Ready's message."""
    assert outcome.phase == Phase.FAILED
    assert not any(c.startswith(("delete", "offsets")) for c in kafka.calls)
    assert kafka.logs[T0][0] == 0
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "StateNotPersisted"
    return str(ready["message"])


def test_a_forged_plan_cutting_at_minus_one_ends_the_purge_and_deletes_nothing() -> None:
    """A plan rewritten in its ConfigMaps to cut at -1 (the broker's "high watermark"),
    which no group's position would lower: refused when read back, nothing sent."""
    kafka = FakeKafka({T0: [0, 100]})
    kafka.committed_offsets = {"g": {T0: 10}}
    store = Store(kafka)
    store.status = {"phase": Phase.PURGING, "planRef": {"configMap": "kr-recordpurge-x-plan"}}
    store.blobs["plan"] = (
        '{"highWatermark": 100, "logStartBefore": 0, "partition": 0, "reason": "",'
        ' "recordsToDelete": 10, "requestedOffset": -1, "state": "Planned", "topic": "t"}\n'
    )
    message = ended_deleting_nothing(
        run(explicit((0, 10), protectGroups=["g"]), kafka, store), kafka, store
    )
    assert "requestedOffset" in message


def test_a_damaged_stored_plan_ends_the_purge_and_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = ChunkedStore(kafka)

    class DownAtDelete(FakeKafka):
        def delete_records(self, cuts: Mapping[TopicPartition, int]) -> Any:
            raise KafkaUnavailable("_TRANSPORT: broker went away")

    with pytest.raises(service.Retry):
        run(explicit((0, 40)), DownAtDelete(kafka.logs), store)
    manifest = store.configmaps["plan"][-1]
    info = json.loads(manifest["data"]["manifest.json"])
    manifest["data"]["manifest.json"] = json.dumps({**info, "sha256": "0" * 64})
    kafka.calls.clear()
    message = ended_deleting_nothing(run(explicit((0, 40)), kafka, store), kafka, store)
    assert "damaged" in message
    assert "checksum" in message


TOO_LARGE = "etcdserver: request is too large"


def test_a_status_too_large_to_store_at_planning_fails_at_once_and_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.patch_refusal = lambda doc: (
        api_error(500, "Internal Server Error", TOO_LARGE) if "planRef" in doc else None
    )
    outcome = run(explicit((0, 40)), kafka, store)  # no Retry: the answer will not change
    assert outcome.phase == Phase.FAILED
    assert not any(c.startswith("delete") for c in kafka.calls)
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "StateNotPersisted"
    assert TOO_LARGE in ready["message"]
    assert "nothing was deleted" in ready["message"]


def test_a_refused_final_status_names_the_cause_beside_what_was_deleted() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.patch_refusal = lambda doc: (
        api_error(422, "Unprocessable Entity", "status.results: Invalid value")
        if doc.get("results") and "completedAt" in doc
        else None
    )
    outcome = run(explicit((0, 40)), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert kafka.logs[T0][0] == 40
    assert store.status["phase"] == Phase.SUCCEEDED
    assert store.status["summary"]["recordsDeleted"] == 40
    assert store.status["results"] is None
    cond = {c["type"]: c for c in store.status["conditions"]}
    assert cond["Ready"]["reason"] == "StateNotPersisted"
    assert "status.results: Invalid value" in cond["Ready"]["message"]
    assert "deletes were applied" in cond["Ready"]["message"]
    assert cond["Succeeded"]["reason"] == "Purged"


def test_a_transiently_refused_final_status_is_written_by_the_next_run_without_new_deletes() -> (
    None
):
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.patch_refusal = lambda doc: (
        api_error(503, "Service Unavailable", "etcd leader changed")
        if "completedAt" in doc
        else None
    )
    with pytest.raises(service.Retry, match="StateNotPersisted"):
        run(explicit((0, -1)), kafka, store)
    assert kafka.logs[T0][0] == 100
    assert store.status["phase"] == Phase.PURGING
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert "etcd leader changed" in ready["message"]
    kafka.logs[T0][1] = 300  # newer records are not the plan's
    store.patch_refusal = lambda _: None
    kafka.calls.clear()
    outcome = run(explicit((0, -1)), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert not any(c.startswith("delete") for c in kafka.calls)
    assert kafka.logs[T0] == [100, 300]
    assert store.status["phase"] == Phase.SUCCEEDED


def test_status_stays_small_at_a_thousand_partitions_with_the_longest_topic_name() -> None:
    name = "t" * 249  # Kafka's longest topic name: listing each partition would be ~500 KiB
    kafka = FakeKafka({TopicPartition(name, p): [0, 5] for p in range(1000)})
    store = Store()
    spec = {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": [{"name": name, "before": {"highWatermark": True}}],
    }
    outcome = run(spec, kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    size = len(json.dumps(store.status))
    assert size < 256 * 1024, size
    assert store.status["results"][0]["note"] == "summary of 1000 partitions"
    assert len(from_lines(store.blobs["results"])) == 1000


def test_failures_are_listed_up_to_a_byte_bound_and_the_rest_counted() -> None:
    name = "t" * 249
    entries = [
        {
            "topic": name,
            "partition": p,
            "state": State.FAILED,
            "error": f"OFFSET_OUT_OF_RANGE: offset 99 is above the high watermark 5 of {name}-{p}",
            "note": "n" * 500,
        }
        for p in range(300)
    ]
    folded = purge_report.fold_results([PurgeEntry.from_status(e) for e in entries])
    assert len(json.dumps(folded)) < 160 * 1024
    listed = [e for e in folded if e["state"] == State.FAILED and e["partition"] >= 0]
    assert 0 < len(listed) < 200  # the byte bound, before the count bound
    assert folded[len(listed)]["note"].startswith(f"... and {300 - len(listed)} more failed")


def test_a_high_watermark_that_drops_after_planning_lowers_the_cut_to_it() -> None:
    """`-1` planned at high watermark 100, then the partition is truncated to 80 (an
    unclean leader election) before DeleteRecords: the broker refuses 100
    (OFFSET_OUT_OF_RANGE); the cut is lowered to the high watermark read then, 80, and
    tried once more, and the entry says so. 100 is never applied."""

    class TruncatedAtDelete(FakeKafka):
        def delete_records(
            self, cuts: Mapping[TopicPartition, int]
        ) -> dict[TopicPartition, int | KafkaFailure]:
            if not any(c.startswith("delete") for c in self.calls):
                self.logs[T0][1] = 80
            return super().delete_records(cuts)

    kafka = TruncatedAtDelete({T0: [0, 100]})
    store = Store(kafka)
    outcome = run(explicit((0, -1)), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    (entry,) = store.status["results"]
    assert (entry["requestedOffset"], entry["lowWatermark"], entry["recordsDeleted"]) == (
        80,
        80,
        80,
    )
    assert "the high watermark dropped to 80 before the delete" in entry["note"]
    assert kafka.logs[T0] == [80, 80]
    deletes = [c for c in kafka.calls if c.startswith("delete")]
    assert deletes == ["delete:[('t-0', 100)]", "delete:[('t-0', 80)]"]


def test_a_purge_plan_sends_its_timestamp_lookups_with_the_offset_reads() -> None:
    """Each of the two reads answers only once the other has begun: a plan that sends
    one after the other, in either order, fails here."""

    class LookupMustOverlap(FakeKafka):
        looking, bounding = threading.Event(), threading.Event()

        def offsets_for_timestamp(
            self, tps: Iterable[TopicPartition], timestamp_ms: int
        ) -> dict[TopicPartition, int]:
            self.looking.set()
            assert self.bounding.wait(5), "the timestamp lookup went out alone"
            return dict.fromkeys(tps, 30)

        def log_bounds(
            self, tps: Iterable[TopicPartition]
        ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
            self.bounding.set()
            assert self.looking.wait(5), "the log bounds went out alone"
            return super().log_bounds(tps)

    kafka = LookupMustOverlap({T0: [0, 100]})
    store = Store(kafka)
    spec = {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": [{"name": "t", "before": {"timestamp": "2026-11-20T00:00:00Z"}}],
    }
    outcome = run(spec, kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert kafka.logs[T0] == [30, 100]  # cut where the lookup said


def test_an_offset_already_below_the_log_start_deletes_nothing_and_says_so() -> None:
    kafka = FakeKafka({T0: [50, 100]})
    store = Store(kafka)
    outcome = run(explicit((0, 30)), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert kafka.logs[T0] == [50, 100]
    (entry,) = store.status["results"]
    assert (entry["recordsDeleted"], entry["lowWatermark"]) == (0, 50)
    assert outcome.records_deleted == 0


def forged(*entries: PurgeEntry) -> Store:
    """A purge whose plan in its ConfigMaps (which the tenant may write) reads back as
    `entries`, as if a run stored it and stopped before the delete."""
    store = Store()
    store.status = {"phase": Phase.PURGING, "planRef": {"configMap": "kr-recordpurge-x-plan"}}
    store.blobs["plan"] = to_lines(entries)
    return store


def cut(tp: TopicPartition, offset: int, high_watermark: int = 100) -> PurgeEntry:
    return PurgeEntry(
        tp.topic,
        tp.partition,
        State.PLANNED,
        requested_offset=offset,
        log_start_before=0,
        high_watermark=high_watermark,
        records_to_delete=offset,
        reason="explicit offset",
    )


def rejected(spec: dict[str, Any], kafka: FakeKafka, store: Store, limit: int | None = None) -> str:
    """Run the purge on its stored plan: it ends Failed, StoredPlanRejected, with nothing
    sent to DeleteRecords; Ready's message."""
    starts = {tp: log[0] for tp, log in kafka.logs.items()}
    outcome = run(spec, kafka, store, limit)
    assert outcome.phase == Phase.FAILED
    assert not any(c.startswith("delete") for c in kafka.calls)
    assert {tp: log[0] for tp, log in kafka.logs.items()} == starts
    conditions = {c["type"]: c for c in store.status["conditions"]}
    assert conditions["Ready"]["reason"] == conditions["Succeeded"]["reason"]
    assert conditions["Ready"]["reason"] == "StoredPlanRejected"
    return str(conditions["Ready"]["message"])


PAYROLL = TopicPartition("payroll", 0)


def test_a_stored_plan_with_a_topic_the_spec_does_not_name_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100], PAYROLL: [0, 100]})
    store = forged(cut(T0, 40), cut(PAYROLL, 100))
    message = rejected(explicit((0, 40)), kafka, store)
    assert "payroll-0 is a topic the spec does not name" in message


def test_a_stored_plan_cutting_above_the_specs_offset_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    message = rejected(explicit((0, 40)), kafka, forged(cut(T0, 90)))
    assert "t-0 would be cut at 90, above 40" in message


def test_a_stored_plan_with_partitions_the_spec_does_not_name_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    message = rejected(explicit((0, 40)), kafka, forged(cut(T0, 40), cut(T1, 100)))
    assert "t-1 is a partition the spec does not name" in message


def test_a_stored_plan_listing_a_partition_twice_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    message = rejected(explicit((0, 40)), kafka, forged(cut(T0, 10), cut(T0, 40)))
    assert "t-0 is listed twice" in message


def test_a_stored_plan_of_more_partitions_than_the_binding_allows_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    store = forged(cut(T0, 40), cut(T1, 40))
    message = rejected(explicit((0, 40), (1, 40)), kafka, store, limit=1)
    assert "2 partitions where at most 1 may be cut" in message


def test_a_stored_whole_topic_plan_with_a_partition_the_topic_lacks_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100], T1: [0, 100]})
    spec = {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": [{"name": "t", "before": {"highWatermark": True}}],
    }
    store = forged(cut(T0, 100), cut(T1, 100), cut(TopicPartition("t", 7), 100))
    message = rejected(spec, kafka, store)
    assert "t-7 is not a partition of t (2 now)" in message


class TimedKafka(FakeKafka):
    """Offsets for times: each partition's first record at or after any time is at 30."""

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int]:
        self.calls.append("offsets_for_timestamp")
        return dict.fromkeys(tps, 30)


BEFORE_A_TIME = {
    "cluster": {"bootstrapServers": "k:9092"},
    "topics": [{"name": "t", "before": {"timestamp": "2026-11-20T00:00:00Z"}}],
}


def test_a_stored_timestamp_cut_above_the_offset_at_that_time_read_now_deletes_nothing() -> None:
    kafka = TimedKafka({T0: [0, 100]})
    message = rejected(BEFORE_A_TIME, kafka, forged(cut(T0, 100)))
    assert "t-0 would be cut at 100, above 30" in message


def test_a_stored_cut_without_an_offset_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    entry = PurgeEntry("t", 0, State.PLANNED, log_start_before=0, high_watermark=100)
    message = rejected(explicit((0, 40)), kafka, forged(entry))
    assert "t-0 is to be cut but has no planned offset" in message


def test_a_stored_plan_the_spec_allows_runs_with_cuts_only_lowered() -> None:
    """The check refuses only what no run of this spec could have stored: a plan at or
    below what the spec asks runs, and a stored timestamp cut at the offset read now too."""
    kafka = TimedKafka({T0: [0, 100], T1: [0, 100]})
    outcome = run(BEFORE_A_TIME, kafka, forged(cut(T0, 30), cut(T1, 20)))
    assert outcome.phase == Phase.SUCCEEDED
    assert [kafka.logs[T0][0], kafka.logs[T1][0]] == [30, 20]


def test_a_stored_cut_naming_no_partition_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    spec = {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": [{"name": "t", "before": {"highWatermark": True}}],
    }
    whole_topic = PurgeEntry("t", -1, State.PLANNED, records_to_delete=100)
    assert "t is to be cut but names no partition" in rejected(spec, kafka, forged(whole_topic))


class ProgressStore(Store):
    """A Store that keeps every status patch, in order."""

    def __init__(self, kafka: FakeKafka | None = None) -> None:
        super().__init__(kafka)
        self.patches: list[dict[str, Any]] = []

    def patch(self, status: Mapping[str, Any]) -> None:
        super().patch(status)
        self.patches.append(dict(status))

    def progress(self) -> list[tuple[str, int, int | None] | None]:
        """(stage, done, total) of each patch that says anything of progress."""
        return [
            (
                p["progress"]["stage"],
                p["progress"]["partitionsDone"],
                p["progress"].get("partitionsTotal"),
            )
            if p["progress"]
            else None
            for p in self.patches
            if "progress" in p
        ]


def test_a_purge_in_rounds_shows_partitions_done_of_total_then_clears_its_progress() -> None:
    tps = [TopicPartition("t", p) for p in range(25)]
    kafka = FakeKafka({tp: [0, 100] for tp in tps})
    store = ProgressStore(kafka)
    outcome = run(
        explicit(*((p, 40) for p in range(25))),
        kafka,
        store,
        progress_every_s=0,
        delete_round=10,
        planning_shown_after_s=0,
    )
    assert outcome.phase == Phase.SUCCEEDED
    assert sum(c.startswith("delete:") for c in kafka.calls) == 3
    assert store.progress() == [
        ("planning", 0, None),  # with the Planning phase
        ("storing", 0, 25),
        ("deleting", 0, 25),  # with the stored plan
        ("deleting", 10, 25),
        ("deleting", 20, 25),
        None,  # the outcome removes it
    ]
    assert store.status["progress"] is None
    # Each count is written between the rounds (a patch without a phase).
    deletes = [i for i, c in enumerate(kafka.calls) if c.startswith("delete:")]
    assert "status:None" in kafka.calls[deletes[0] : deletes[1]]
    assert "status:None" in kafka.calls[deletes[1] : deletes[2]]


def test_a_quick_purge_writes_no_progress_of_its_own() -> None:
    """At most one progress write every 2 s: a purge that takes less writes only the
    status it always wrote, progress riding along."""
    kafka = FakeKafka({TopicPartition("t", p): [0, 100] for p in range(25)})
    store = ProgressStore(kafka)
    # A threshold no plan of 25 entries outlasts, however busy the machine (CI once took
    # longer than the default second here): no Planning phase either.
    run(
        explicit(*((p, 40) for p in range(25))),
        kafka,
        store,
        delete_round=10,
        planning_shown_after_s=30,
    )
    assert [p.get("phase") for p in store.patches] == [Phase.PURGING, Phase.SUCCEEDED]
    assert store.progress() == [("deleting", 0, 25), None]


def test_a_refused_progress_write_does_not_stop_the_purge() -> None:
    kafka = FakeKafka({TopicPartition("t", p): [0, 100] for p in range(3)})
    store = ProgressStore(kafka)

    refused: list[Mapping[str, Any]] = []

    def refuse_progress_alone(status: Mapping[str, Any]) -> WriteRefused | None:
        if set(status) != {"progress"}:
            return None
        refused.append(status)
        return WriteRefused(409, "Conflict", "")

    store.patch_refusal = refuse_progress_alone
    outcome = run(
        explicit(*((p, 40) for p in range(3))), kafka, store, progress_every_s=0, delete_round=1
    )
    assert len(refused) == 3  # storing, then between the three rounds
    assert outcome.phase == Phase.SUCCEEDED
    assert all(kafka.logs[TopicPartition("t", p)][0] == 40 for p in range(3))


class Ticking:
    """A wall clock that moves 7 ms each time it is read."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        self.at += timedelta(milliseconds=7)
        return self.at


MARKS = ["pickedUpAt", "plannedAt", "storedAt", "deletedAt", "completedAt"]


def test_the_timings_mark_every_stage_in_order_and_the_stages_sum_to_the_whole() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store()
    created = NOW - timedelta(seconds=2)
    run(explicit((0, 40)), kafka, store, now=Ticking(NOW), created=created)
    timings = store.status["timings"]
    assert [m for m in MARKS if m in timings] == MARKS
    at = [datetime.fromisoformat(timings[m].replace("Z", "+00:00")) for m in MARKS]
    assert at == sorted(at)
    assert len(set(at)) == len(at)  # every stage took some time
    ms = timings["ms"]
    stages = ["pickUp", "planning", "storing", "deleting", "reporting"]
    assert sorted(ms) == sorted([*stages, "total"])
    assert sum(ms[s] for s in stages) == ms["total"]
    assert ms["total"] == round((at[-1] - created).total_seconds() * 1000)
    assert ms["pickUp"] >= 2000
    assert timings["took"] == f"{ms['total'] / 1000:.2f}s"


def test_a_dry_run_has_no_store_or_delete_marks_and_still_sums_to_the_whole() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store()
    run(explicit((0, 40), dryRun=True), kafka, store, now=Ticking(NOW), created=NOW)
    timings = store.status["timings"]
    assert [m for m in MARKS if m in timings] == ["pickedUpAt", "plannedAt", "completedAt"]
    ms = timings["ms"]
    assert set(ms) == {"pickUp", "planning", "reporting", "total"}
    assert ms["pickUp"] + ms["planning"] + ms["reporting"] == ms["total"]


def test_a_resumed_purge_keeps_the_marks_of_the_stages_an_earlier_run_finished() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store()

    class DownAtDelete(FakeKafka):
        def delete_records(self, cuts: Mapping[TopicPartition, int]) -> Any:
            raise KafkaUnavailable("_TRANSPORT: broker went away")

    with pytest.raises(service.Retry):
        run(explicit((0, 40)), DownAtDelete(kafka.logs), store, now=Ticking(NOW))
    first = dict(store.status["timings"])
    assert set(first) == {"pickedUpAt", "plannedAt", "storedAt"}
    later = NOW + timedelta(minutes=5)
    run(explicit((0, 40)), kafka, store, now=Ticking(later), created=NOW)
    timings = store.status["timings"]
    assert {m: timings[m] for m in first} == first
    # The five minutes' wait for Kafka to come back counts in the delete stage, where it
    # happened (the first run stored its plan a few ticks after NOW).
    assert 5 * 60 * 1000 - 100 < timings["ms"]["deleting"] < 5 * 60 * 1000 + 100


class RewindsAfterFirstDelete(FakeKafka):
    """Group "audit" moves back on partition 1 as soon as the first round of deletes is
    answered."""

    def delete_records(self, cuts: Mapping[TopicPartition, int]) -> Any:
        answer = super().delete_records(cuts)
        self.committed_offsets["audit"][T1] = 20
        return answer


def test_each_round_of_deletes_reads_the_guard_groups_again_and_only_lowers() -> None:
    kafka = RewindsAfterFirstDelete({T0: [0, 100], T1: [0, 100]})
    kafka.committed_offsets = {"audit": {T0: 60, T1: 60}}
    store = Store()
    outcome = run(explicit((0, 50), (1, 50), protectGroups=["audit"]), kafka, store, delete_round=1)
    assert outcome.phase == Phase.SUCCEEDED
    # Round one cut partition 0 at 50; by round two the group had moved back to 20 there.
    assert [kafka.logs[T0][0], kafka.logs[T1][0]] == [50, 20]


def test_a_progress_write_lost_on_the_way_does_not_stop_the_purge() -> None:
    kafka = FakeKafka({TopicPartition("t", p): [0, 100] for p in range(3)})

    class ResetOnProgress(ProgressStore):
        def patch(self, status: Mapping[str, Any]) -> None:
            if set(status) == {"progress"}:
                raise ConnectionResetError("connection reset by peer")
            super().patch(status)

    outcome = run(
        explicit(*((p, 40) for p in range(3))),
        kafka,
        ResetOnProgress(kafka),
        progress_every_s=0,
        delete_round=1,
    )
    assert outcome.phase == Phase.SUCCEEDED
    assert all(kafka.logs[TopicPartition("t", p)][0] == 40 for p in range(3))


def test_results_the_api_server_refuses_are_said_in_the_event_not_in_the_condition() -> None:
    """Folded results whose ConfigMaps are refused: the purge still succeeds, status says
    resultsRef null, and the handler's outcome (the event) says why; the Succeeded
    condition keeps the purge's own message."""

    class RefusesResults(Store):
        def save(self, suffix: str, payload: str) -> dict[str, Any]:
            if suffix == "results":
                raise api_error(403, "Forbidden", "exceeded quota")
            return super().save(suffix, payload)

    kafka = big_kafka(3, 2000)
    store = RefusesResults()
    outcome = run(whole_topics(3), kafka, store)
    assert outcome.phase == Phase.SUCCEEDED
    assert store.status["resultsRef"] is None
    succeeded = {c["type"]: c for c in store.status["conditions"]}["Succeeded"]
    assert "not stored" not in succeeded["message"]
    assert outcome.message == (
        succeeded["message"] + "; per-partition results not stored: HTTP 403 Forbidden"
    )


class SlowPlanningWrite(Store):
    """Holds the write of phase Planning until Kafka has been read for the plan (at most
    5 s): a purge that waited for the write before planning would wait here in vain."""

    def __init__(self, kafka: FakeKafka) -> None:
        super().__init__(kafka)
        self.planned_meanwhile = False

    def patch(self, status: Mapping[str, Any]) -> None:
        if status.get("phase") == Phase.PLANNING and self.kafka is not None:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not self.planned_meanwhile:
                self.planned_meanwhile = any(
                    not c.startswith("status") for c in list(self.kafka.calls)
                )
                time.sleep(0.005)
        super().patch(status)


def test_the_plan_is_made_while_phase_planning_is_written_and_the_writes_keep_their_order() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = SlowPlanningWrite(kafka)
    outcome = run(explicit((0, 40)), kafka, store, planning_shown_after_s=0)
    assert outcome.phase == Phase.SUCCEEDED
    assert store.planned_meanwhile
    phases = [c for c in kafka.calls if c.startswith("status:")]
    assert phases[:2] == [f"status:{Phase.PLANNING}", f"status:{Phase.PURGING}"]


def test_a_refused_planning_write_fails_the_purge_once_planned_and_deletes_nothing() -> None:
    kafka = FakeKafka({T0: [0, 100]})
    store = Store(kafka)
    store.patch_refusal = lambda doc: (
        api_error(500, "Internal Server Error", TOO_LARGE)
        if doc.get("phase") == Phase.PLANNING
        else None
    )
    outcome = run(explicit((0, 40)), kafka, store, planning_shown_after_s=0)
    assert outcome.phase == Phase.FAILED
    assert not any(c.startswith("delete") for c in kafka.calls)
    assert not any(c.startswith("saved") for c in kafka.calls)
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "StateNotPersisted"


WHOLE_T = {
    "cluster": {"bootstrapServers": "k:9092"},
    "topics": [{"name": "t", "before": {"highWatermark": True}}],
}


class SlowTopics(FakeKafka):
    """Planning whose topic read answers only once phase Planning has been written (up to
    10 s), when `slow`: a plan that outlasts any threshold the test sets."""

    def __init__(self, logs: dict[TopicPartition, list[int]], slow: bool) -> None:
        super().__init__(logs)
        self.slow = slow

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        deadline = time.monotonic() + 10
        while self.slow and f"status:{Phase.PLANNING}" not in self.calls:
            assert time.monotonic() < deadline, "phase Planning never written"
            time.sleep(0.005)
        self.calls.append("planning read")
        return super().topic_partitions(topics)


def test_phase_planning_is_written_only_when_planning_outlasts_its_threshold() -> None:
    # The threshold passes while the topics are read: Planning is written meanwhile.
    slow = SlowTopics({T0: [0, 100]}, slow=True)
    store = Store(slow)
    run(WHOLE_T, slow, store, planning_shown_after_s=0.05)
    statuses = [c for c in slow.calls if c.startswith(("status:", "planning read"))]
    assert statuses[:3] == [f"status:{Phase.PLANNING}", "planning read", f"status:{Phase.PURGING}"]
    # Planned before it: the first write is Purging, and nothing waited for the threshold.
    quick = SlowTopics({T0: [0, 100]}, slow=False)
    store = Store(quick)
    started = time.monotonic()
    run(WHOLE_T, quick, store, planning_shown_after_s=30)
    assert time.monotonic() - started < 10  # not the threshold's 30 s: nothing waited for it
    assert next(c for c in quick.calls if c.startswith("status:")) == f"status:{Phase.PURGING}"
    assert store.status["phase"] == Phase.SUCCEEDED
