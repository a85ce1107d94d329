"""The RetentionPolicy service with an in-memory Kafka and planner: safety of every run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from kafka_retention.adapters.kafka import KafkaFailure, KafkaUnavailable
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.policy import plan_partition
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.services import retention as service

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
T0 = TopicPartition("t", 0)


class FakeKafka:
    def __init__(self) -> None:
        self.logs: dict[TopicPartition, list[int]] = {}
        self.commits: dict[str, dict[TopicPartition, int]] = {}
        self.times: dict[TopicPartition, dict[int, int | None]] = {}
        self.deletes: list[dict[TopicPartition, int]] = []

    def offsets(self, tps: Iterable[TopicPartition], kind: Any) -> dict[TopicPartition, int]:
        return {tp: self.logs[tp][0 if kind == "earliest" else 1] for tp in tps}

    def committed(
        self, group: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return {tp: self.commits.get(group, {}).get(tp) for tp in tps}

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self.deletes.append(dict(cuts))
        for tp, off in cuts.items():
            self.logs[tp][0] = max(self.logs[tp][0], off)
        return {tp: self.logs[tp][0] for tp in cuts}


@dataclass
class FakePlan:
    rows: list[dict[str, Any]]
    skipped: dict[str, str] = field(default_factory=dict)


def planner(kafka: FakeKafka, skipped: dict[str, str] | None = None) -> Any:
    """Plans with the real core from the fake's facts, as the Spark job would."""

    def plan(spec: PolicySpec, _config: dict[str, str], now_ms: int) -> FakePlan:
        rows = []
        for tp, (start, end) in sorted(kafka.logs.items()):
            times = kafka.times.get(tp, {})
            facts = PartitionFacts(
                tp,
                start,
                end,
                {g: kafka.commits.get(g, {}).get(tp) for g in spec.rules.groups()},
                {t: times.get(t) for t in spec.rules.lookup_times(now_ms)},
            )
            cut = plan_partition(facts, spec.rules, now_ms)
            rows.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "logStartOffset": start,
                    "highWatermark": end,
                    "targetOffset": cut.target,
                    "rule": cut.rule,
                    "recordsToDelete": cut.records_to_delete,
                    "bytesToDeleteEstimate": cut.records_to_delete * 100,
                    "timeOffsets": dict(facts.offsets_for_times),
                    "error": None,
                    "groups": [
                        {
                            "group": g.group,
                            "committedOffset": g.committed_offset,
                            "unconsumedToDelete": g.unconsumed_to_delete,
                        }
                        for g in cut.groups
                    ],
                }
            )
        return FakePlan(rows, skipped or {})

    return plan


class Store:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)


def policy(
    kafka: FakeKafka,
    spec: dict[str, Any],
    store: Store,
    key: str = "ns/p",
    overlaps: service.OverlapRegistry | None = None,
    plan: Any = None,
) -> service.Policy:
    return service.Policy(
        key=key,
        spec={"cluster": {"bootstrapServers": "k:9092"}, "topics": {"names": ["t"]}, **spec},
        status=dict(store.status),
        generation=1,
        store=store,
        client_config=lambda _: {},
        connect=lambda _s, _c: kafka,
        plan=plan or planner(kafka),
        now=lambda: NOW,
        overlaps=overlaps or service.OverlapRegistry(),
    )


def test_log_start_moves_to_the_slowest_group() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 80}, "b": {T0: 30}}
    store = Store()
    outcome = service.run_policy(policy(kafka, {"deleteConsumed": {"groups": ["a", "b"]}}, store))
    assert kafka.logs[T0][0] == 30
    assert outcome.records_deleted == 30
    assert store.status["lastRun"]["recordsDeleted"] == 30
    assert store.status["recordsDeletedTotal"] == 30
    assert store.status["topics"][0]["logStartLag"] == 0


def test_a_group_that_rewound_after_planning_lowers_the_cut() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 60}}
    planned = planner(kafka)

    def plan_then_rewind(spec: PolicySpec, config: dict[str, str], now_ms: int) -> FakePlan:
        result: FakePlan = planned(spec, config, now_ms)
        kafka.commits["a"][T0] = 25  # the group resets its offsets meanwhile
        return result

    service.run_policy(
        policy(kafka, {"deleteConsumed": {"groups": ["a"]}}, Store(), plan=plan_then_rewind)
    )
    assert kafka.logs[T0][0] == 25


def test_overlapping_policies_both_get_the_more_conservative_cut() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 70}, "b": {T0: 40}}
    shared = service.OverlapRegistry()
    first, second = Store(), Store()
    service.run_policy(
        policy(kafka, {"deleteConsumed": {"groups": ["b"]}}, first, "ns/slow", shared)
    )
    assert kafka.logs[T0][0] == 40
    service.run_policy(
        policy(kafka, {"deleteConsumed": {"groups": ["a"]}}, second, "ns/fast", shared)
    )
    assert kafka.logs[T0][0] == 40  # held at the other policy's cut
    assert "ns/slow" in second.status["topics"][0]["note"]
    service.run_policy(
        policy(kafka, {"deleteConsumed": {"groups": ["b"]}}, first, "ns/slow", shared)
    )
    assert "ns/fast" in first.status["topics"][0]["note"]


def test_dry_run_deletes_nothing() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 50}}
    store = Store()
    outcome = service.run_policy(
        policy(kafka, {"deleteConsumed": {"groups": ["a"]}, "dryRun": True}, store)
    )
    assert kafka.deletes == []
    assert kafka.logs[T0][0] == 0
    assert outcome.message == "dry run: would delete 50 records from 1 partitions"
    assert store.status["lastRun"]["recordsDeleted"] == 0


def test_invalid_spec_plans_and_deletes_nothing_and_names_the_field() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]

    def never(*_: Any) -> FakePlan:
        raise AssertionError("planned an invalid policy")

    store = Store()
    outcome = service.run_policy(policy(kafka, {"maxRetention": "soon"}, store, plan=never))
    assert outcome.invalid_field == "spec.maxRetention"
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "InvalidSpec"
    assert "spec.maxRetention" in ready["message"]
    assert kafka.deletes == []


def test_unreachable_kafka_deletes_nothing_and_retries_sooner() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]

    def down(*_: Any) -> FakePlan:
        raise KafkaUnavailable("_TRANSPORT: all brokers down")

    store = Store()
    outcome = service.run_policy(
        policy(kafka, {"maxRetention": "1d", "interval": "5m"}, store, plan=down), retry_delay=15
    )
    assert outcome.next_run_in == 15
    assert kafka.deletes == []
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KafkaUnavailable")


def test_max_retention_past_an_idle_group_reports_the_loss() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"idle": {T0: 10}}
    kafka.times[T0] = {NOW_MS - 3_600_000: 60}
    store = Store()
    outcome = service.run_policy(
        policy(kafka, {"deleteConsumed": {"groups": ["idle"]}, "maxRetention": "1h"}, store)
    )
    assert kafka.logs[T0][0] == 60
    assert outcome.losses == [{"group": "idle", "topic": "t", "records": 50}]
    assert store.status["lastRun"]["unconsumedDeleted"] == outcome.losses


def test_compact_only_topic_is_listed_with_a_note() -> None:
    kafka = FakeKafka()
    store = Store()
    service.run_policy(
        policy(
            kafka,
            {"maxRetention": "1d"},
            store,
            plan=planner(kafka, {"c": "cleanup.policy=compact: ..."}),
        )
    )
    (topic,) = store.status["topics"]
    assert topic["name"] == "c"
    assert topic["note"].startswith("skipped: cleanup.policy=compact")


@pytest.mark.parametrize("runs", [2])
def test_totals_accumulate_across_runs(runs: int) -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    store = Store()
    for step in range(runs):
        kafka.commits = {"a": {T0: 20 * (step + 1)}}
        service.run_policy(policy(kafka, {"deleteConsumed": {"groups": ["a"]}}, store))
    assert store.status["recordsDeletedTotal"] == 40
    assert store.status["topics"][0]["recordsDeletedTotal"] == 40
    assert store.status["topics"][0]["recordsDeletedLastRun"] == 20


def test_a_good_run_clears_the_previous_runs_error() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    store = Store()
    store.status = {"lastRun": {"error": "t-0: NOT_LEADER_OR_FOLLOWER"}}
    service.run_policy(policy(kafka, {"maxRetention": "1d"}, store))
    assert store.status["lastRun"]["error"] is None  # null in a merge patch removes it
