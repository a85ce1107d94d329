"""RetentionPolicy runs with an in-memory Kafka that answers as Kafka does: batches,
the fresh re-check, overlapping policies, failures, and what status says."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_retention.core.batch_errors import NAMES_OTHER_POLICY, NAMES_UNKNOWN
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.overlap import PeerIndex
from kafka_retention.core.plan_row import TombstoneRow
from kafka_retention.core.policy_spec import Batch, Member, PolicySpec, parse_policy_spec
from kafka_retention.core.purge_ledger import OTHER_NAMESPACE_PURGE, PurgeLedger, purge_done
from kafka_retention.services.policy import apply as policy_apply
from kafka_retention.services.policy.batches import Due, parse, run_batch
from kafka_retention.services.policy.planning import plan_in_process, select
from kafka_retention.services.policy.report import ConsumedLoss
from kafka_retention.services.policy.run import PolicyRun
from retention_jobs.plan_job import ScanTimeoutError
from tests.helpers.policy_runs import (
    NOW,
    NOW_MS,
    NOW_TEXT,
    T0,
    FakeKafka,
    Store,
    due,
    env,
    ready,
    run_one,
    spec_of,
)


def test_log_start_moves_to_the_slowest_group() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 80}, "b": {T0: 30}}
    store = Store()
    outcome = run_one(kafka, store, deleteConsumed={"groups": ["a", "b"]})
    assert kafka.logs[T0][0] == 30
    assert outcome.records_deleted == 30
    assert store.status["lastRun"]["recordsDeleted"] == 30
    assert store.status["recordsDeletedTotal"] == 30
    assert store.status["topics"][0]["logStartLag"] == 0
    assert (ready(store)["status"], ready(store)["reason"]) == ("True", "RunSucceeded")


def _plan(kafka: FakeKafka, spec: PolicySpec) -> Any:
    members = [Member("ns/p", spec)]
    return plan_in_process(kafka, members, select(kafka, members), NOW_MS)["ns/p"]


def test_a_group_that_rewound_after_planning_lowers_the_cut() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 60}}
    spec = parse_policy_spec(spec_of(deleteConsumed={"groups": ["a"]}))
    plan = _plan(kafka, spec)
    assert plan.rows[0].target_offset == 60
    kafka.commits["a"][T0] = 25  # the group resets its offsets meanwhile
    store = Store()
    run = PolicyRun("ns/p", {}, 1, store, lambda: NOW)
    policy_apply.apply_plan(run, spec, plan, kafka, PeerIndex({}), NOW)
    assert kafka.deletes == [{T0: 25}]


class ReadsMustOverlap(FakeKafka):
    """Each of the plan's three reads (log bounds, group positions, a timestamp lookup)
    answers only once the other two have begun: a planner that waits for one read
    before sending the next, in any order, fails here."""

    def __init__(self) -> None:
        super().__init__()
        self.started = {what: threading.Event() for what in ("bounds", "groups", "times")}

    def _meet(self, what: str) -> None:
        self.started[what].set()
        for other, event in self.started.items():
            assert event.wait(5), f"{other} not sent while {what} was in flight"

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        self._meet("groups")
        return super().group_positions(wanted)

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self._meet("times")
        return super().offsets_for_timestamp(tps, timestamp_ms)

    def log_bounds(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        self._meet("bounds")
        return super().log_bounds(tps)


def test_a_policy_plan_sends_its_offset_time_and_group_reads_together() -> None:
    kafka = ReadsMustOverlap()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 60}}
    kafka.times[T0] = {NOW_MS - 3_600_000: 70}
    spec = parse_policy_spec(spec_of(deleteConsumed={"groups": ["a"]}, maxRetention="1h"))
    row = _plan(kafka, spec).rows[0]
    # Each read reached the plan: the hard age cut at 70 passes the group's 60.
    assert (row.log_start_offset, row.high_watermark, row.target_offset) == (0, 100, 70)
    assert [(g.group, g.committed_offset) for g in row.groups] == [("a", 60)]


def test_a_high_watermark_that_dropped_after_planning_lowers_the_cut() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.times[T0] = {NOW_MS - 3_600_000: -1}  # every record older than an hour
    spec = parse_policy_spec(spec_of(maxRetention="1h"))
    plan = _plan(kafka, spec)
    assert plan.rows[0].target_offset == 100
    kafka.logs[T0] = [0, 80]  # an unclean leader election lost the last 20 records
    run = PolicyRun("ns/p", {}, 1, Store(), lambda: NOW)
    outcome = policy_apply.apply_plan(run, spec, plan, kafka, PeerIndex({}), NOW)
    assert kafka.deletes == [{T0: 80}]
    assert outcome.failures == []


def test_a_delete_answered_short_of_its_cut_is_counted_and_said() -> None:
    """DeleteRecords' answer is the verification: a low watermark below the cut (a
    replica not there yet) counts what moved and makes the run say it, for the next run
    to finish."""

    class Short(FakeKafka):
        def delete_records(
            self, cuts: Mapping[TopicPartition, int]
        ) -> dict[TopicPartition, int | KafkaFailure]:
            answered = super().delete_records(cuts)
            return {tp: 50 if isinstance(v, int) else v for tp, v in answered.items()}

    kafka = Short()
    kafka.logs[T0] = [0, 100]
    kafka.times[T0] = {NOW_MS - 3_600_000: -1}  # every record older than an hour
    spec = parse_policy_spec(spec_of(maxRetention="1h"))
    plan = _plan(kafka, spec)
    run = PolicyRun("ns/p", {}, 1, Store(), lambda: NOW)
    outcome = policy_apply.apply_plan(run, spec, plan, kafka, PeerIndex({}), NOW)
    assert outcome.records_deleted == 50
    assert outcome.failures == ["t-0: low watermark answered as 50, expected 100"]


def test_a_log_start_already_past_the_planned_cut_deletes_nothing() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 40}}
    spec = parse_policy_spec(spec_of(deleteConsumed={"groups": ["a"]}))
    plan = _plan(kafka, spec)
    kafka.logs[T0] = [70, 100]  # the broker's own retention went further meanwhile
    store = Store()
    outcome = policy_apply.apply_plan(
        PolicyRun("ns/p", {}, 1, store, lambda: NOW), spec, plan, kafka, PeerIndex({}), NOW
    )
    assert kafka.deletes == []
    assert outcome.records_deleted == 0
    assert store.status["lastRun"]["partitionsCut"] == 0


def test_an_overlapping_policy_holds_the_cut_back_without_having_run() -> None:
    """Nothing is remembered between runs: a fresh operator (or a second replica) that
    runs the faster policy first still holds it at the slower policy's cut."""
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"fast": {T0: 70}, "slow": {T0: 40}}
    slow = parse_policy_spec(spec_of(deleteConsumed={"groups": ["slow"]}))
    store = Store()
    run_one(kafka, store, {"ns/slow": slow}, deleteConsumed={"groups": ["fast"]})
    assert kafka.logs[T0][0] == 40
    assert "ns/slow" in store.status["topics"][0]["note"]
    kafka.commits["slow"][T0] = 90
    run_one(kafka, store, {"ns/slow": slow}, deleteConsumed={"groups": ["fast"]})
    assert kafka.logs[T0][0] == 70  # now the faster group's own offset bounds it


def test_an_overlapping_policy_with_a_time_rule_is_evaluated_with_fresh_times() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 90}}
    kafka.times[T0] = {NOW_MS - 3_600_000: 30}
    # The peer keeps an hour of records: its own cut is offset 30 (minRetention floor).
    peer = parse_policy_spec(spec_of(deleteConsumed={"groups": ["a"], "minRetention": "1h"}))
    run_one(kafka, Store(), {"ns/peer": peer}, deleteConsumed={"groups": ["a"]})
    assert kafka.logs[T0][0] == 30


def test_a_dry_run_peer_or_one_on_another_cluster_holds_nobody_back() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 70}}
    idle = {"deleteConsumed": {"groups": ["never-committed"]}}
    others = {
        "ns/dry": parse_policy_spec(spec_of(dryRun=True, **idle)),
        "ns/elsewhere": parse_policy_spec(
            {**spec_of(**idle), "cluster": {"bootstrapServers": "other:9092"}}
        ),
    }
    run_one(kafka, Store(), others, deleteConsumed={"groups": ["a"]})
    assert kafka.logs[T0][0] == 70


def test_dry_run_deletes_nothing() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 50}}
    store = Store()
    outcome = run_one(kafka, store, deleteConsumed={"groups": ["a"]}, dryRun=True)
    assert kafka.deletes == []
    assert kafka.logs[T0][0] == 0
    assert outcome.message == "dry run: would delete 50 records from 1 partitions"
    assert store.status["lastRun"]["recordsDeleted"] == 0


def test_invalid_spec_reads_and_deletes_nothing_and_names_the_field() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    store = Store()
    outcome = run_one(kafka, store, maxRetention="soon")
    assert outcome.invalid_field == "spec.maxRetention"
    assert outcome.next_run_in == float("inf")
    assert ready(store)["reason"] == "InvalidSpec"
    assert "spec.maxRetention" in ready(store)["message"]
    assert kafka.calls == []


def test_unreachable_kafka_deletes_nothing_and_retries_sooner() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.down = True
    store = Store()
    outcome = run_one(kafka, store, maxRetention="1d", interval="5m")
    assert outcome.next_run_in == 15
    assert kafka.deletes == []
    assert (ready(store)["status"], ready(store)["reason"]) == ("False", "KafkaUnavailable")


def test_failed_runs_in_a_row_back_off_to_the_interval_and_a_good_run_resets() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.down = True
    store = Store()
    delays = []
    for _ in range(6):
        delays.append(run_one(kafka, store, maxRetention="1d", interval="5m").next_run_in)
    # 15 s doubling per failure, held at the 5 minute interval.
    assert delays == [15, 30, 60, 120, 240, 300]
    assert store.status["consecutiveFailures"] == 6
    assert kafka.deletes == []
    kafka.down = False
    run_one(kafka, store, maxRetention="1d", interval="5m")
    assert store.status["consecutiveFailures"] == 0
    kafka.down = True
    assert run_one(kafka, store, maxRetention="1d", interval="5m").next_run_in == 15


def test_a_long_interval_backs_off_no_further_than_ten_minutes() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.down = True
    store = Store()
    store.status = {"consecutiveFailures": 40}
    assert run_one(kafka, store, maxRetention="7d", interval="1d").next_run_in == 600


def test_max_retention_past_an_idle_group_reports_the_loss() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"idle": {T0: 10}}
    kafka.times[T0] = {NOW_MS - 3_600_000: 60}
    store = Store()
    outcome = run_one(kafka, store, deleteConsumed={"groups": ["idle"]}, maxRetention="1h")
    assert kafka.logs[T0][0] == 60
    assert outcome.losses == [ConsumedLoss("idle", "t", 50)]
    assert store.status["lastRun"]["unconsumedDeleted"] == [
        {"group": "idle", "topic": "t", "records": 50}
    ]


def test_compact_only_topic_is_skipped_by_the_service_with_a_note() -> None:
    kafka = FakeKafka()
    kafka.logs[TopicPartition("c", 0)] = [0, 100]
    kafka.configs["c"] = {"cleanup.policy": "compact"}
    store = Store()
    run_one(kafka, store, topics={"names": ["c"]}, maxRetention="1d")
    (topic,) = store.status["topics"]
    assert topic["name"] == "c"
    assert topic["note"].startswith("skipped: POLICY_VIOLATION")
    assert "cleanup.policy=compact" in topic["note"]
    assert [lim["guard"] for lim in topic["cut"]["limits"]] == ["compacted"]
    assert kafka.deletes == []


def test_totals_accumulate_across_runs() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    store = Store()
    for committed in (15, 40):
        kafka.commits = {"a": {T0: committed}}
        run_one(kafka, store, deleteConsumed={"groups": ["a"]})
    assert store.status["recordsDeletedTotal"] == 40
    assert store.status["topics"][0]["recordsDeletedTotal"] == 40
    assert store.status["topics"][0]["recordsDeletedLastRun"] == 25


def test_a_good_run_clears_the_previous_runs_error() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    store = Store()
    store.status = {"lastRun": {"error": "t-0: NOT_LEADER_OR_FOLLOWER"}}
    run_one(kafka, store, maxRetention="1d")
    assert store.status["lastRun"]["error"] is None  # null in a merge patch removes it


def test_a_batch_reads_the_cluster_once_for_all_its_policies() -> None:
    kafka = FakeKafka()
    for p in range(3):
        kafka.logs[TopicPartition("t", p)] = [0, 100]
    kafka.commits = {"a": {TopicPartition("t", p): 50 for p in range(3)}}
    stores = {f"ns/p{i}": Store() for i in range(50)}
    items = [due(s, key, deleteConsumed={"groups": ["a"]}) for key, s in stores.items()]
    outcomes = run_batch(items, {}, env(kafka), lambda: NOW)
    assert all(o.ok for o in outcomes.values())
    planning = kafka.calls[: kafka.calls.index("delete_records")]
    # One metadata, config and partition read for the batch; offsets and the group's
    # commits read once to plan, then once more by the first policy's fresh re-check.
    assert planning.count("topic_names") == 1
    assert planning.count("topic_configs") == 1
    assert [TopicPartition("t", p) for p in range(3)] == sorted(kafka.deletes[0])
    assert [kafka.logs[TopicPartition("t", p)][0] for p in range(3)] == [50, 50, 50]


class FakeSpark:
    """Plans as the job does (through the same core); `tombstones` are its scan rows."""

    def __init__(
        self,
        kafka: FakeKafka,
        fail: bool = False,
        tombstones: Sequence[TombstoneRow] = (),
        cause: str = "KafkaUnavailable: executor lost",
    ) -> None:
        self.kafka, self.fail, self.tombstones = kafka, fail, list(tombstones)
        self.cause = cause
        self.planned: list[list[str]] = []

    def __call__(self, batch: Batch) -> dict[str, Any]:
        members, now_ms = batch.members, batch.now_ms
        self.planned.append([m.key for m in members])
        if self.fail:
            raise RuntimeError(
                f"An error occurred while calling o91.collect.\n{self.cause}\n\tat org.apache.spark"
            )
        plans = plan_in_process(self.kafka, members, select(self.kafka, members), now_ms)
        for plan in plans.values():
            plan.tombstones = list(self.tombstones)
        return plans


def test_small_policies_are_planned_in_process_and_a_large_one_with_spark() -> None:
    kafka = FakeKafka()
    for p in range(10):
        kafka.logs[TopicPartition("big", p)] = [0, 100]
    kafka.logs[T0] = [0, 100]
    spark = FakeSpark(kafka)
    stores = {"ns/small": Store(), "ns/large": Store()}
    items = [
        due(stores["ns/small"], "ns/small", maxRetention="1d"),
        due(stores["ns/large"], "ns/large", topics={"names": ["big"]}, maxRetention="1d"),
    ]
    outcomes = run_batch(items, {}, env(kafka, spark, line=5), lambda: NOW)
    assert spark.planned == [["ns/large"]]
    assert outcomes["ns/small"].ok
    assert outcomes["ns/large"].ok


def test_a_failed_spark_plan_fails_only_the_policies_planned_with_it() -> None:
    kafka = FakeKafka()
    for p in range(10):
        kafka.logs[TopicPartition("big", p)] = [0, 100]
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 30}}
    stores = {"ns/small": Store(), "ns/large": Store()}
    items = [
        due(stores["ns/small"], "ns/small", deleteConsumed={"groups": ["a"]}),
        due(stores["ns/large"], "ns/large", topics={"names": ["big"]}, maxRetention="1d"),
    ]
    outcomes = run_batch(items, {}, env(kafka, FakeSpark(kafka, fail=True), line=5), lambda: NOW)
    assert outcomes["ns/small"].ok
    assert kafka.logs[T0][0] == 30
    assert not outcomes["ns/large"].ok
    assert ready(stores["ns/large"])["reason"] == "PlanFailed"
    assert ready(stores["ns/large"])["message"] == "KafkaUnavailable: executor lost"
    assert all(kafka.logs[TopicPartition("big", p)][0] == 0 for p in range(10))


def test_a_scan_past_its_time_limit_ends_the_batchs_plan_and_deletes_nothing() -> None:
    """The inventory's scans are cancelled at Scans.time_limit_s (plan_job.scan_deadline):
    the policy says PlanFailed, why, and that nothing was deleted."""
    kafka = FakeKafka()
    for p in range(10):
        kafka.logs[TopicPartition("big", p)] = [0, 100]
    timed_out = ScanTimeoutError(
        "the record scans ran past their time limit of 1800s and were cancelled; "
        "nothing was deleted"
    )

    def spark(_: Batch) -> dict[str, Any]:
        raise timed_out

    store = Store()
    item = due(store, "ns/inventory", topics={"pattern": "big"}, maxRetention="1d")
    outcomes = run_batch([item], {}, env(kafka, spark, line=5), lambda: NOW)
    assert not outcomes["ns/inventory"].ok
    assert ready(store)["reason"] == "PlanFailed"
    assert ready(store)["message"] == str(timed_out)
    assert not kafka.deletes


def _two_tenants_in_one_failed_batch(cause: str) -> dict[str, Store]:
    """Namespaces a and b, each a large policy planned in one Spark job that fails with
    `cause`."""
    kafka = FakeKafka()
    for topic in ("orders", "payments"):
        for p in range(10):
            kafka.logs[TopicPartition(topic, p)] = [0, 100]
    stores = {"a/orders": Store(), "b/payments": Store()}
    items = [
        due(
            stores["a/orders"],
            "a/orders",
            topics={"names": ["orders"]},
            deleteConsumed={"groups": ["orders-billing"]},
        ),
        due(stores["b/payments"], "b/payments", topics={"names": ["payments"]}, maxRetention="1d"),
    ]
    spark = FakeSpark(kafka, fail=True, cause=cause)
    outcomes = run_batch(items, {}, env(kafka, spark, line=5), lambda: NOW)
    assert spark.planned == [["a/orders", "b/payments"]]
    assert not any(o.ok for o in outcomes.values())
    assert not kafka.deletes
    return stores


def test_a_shared_batchs_error_naming_one_member_stays_in_that_members_status() -> None:
    cause = "KafkaUnavailable: orders-3 lost its leader while orders-billing was read"
    stores = _two_tenants_in_one_failed_batch(cause)
    assert ready(stores["a/orders"])["message"] == cause
    other = ready(stores["b/payments"])
    assert other["reason"] == "PlanFailed"
    assert other["message"] == NAMES_OTHER_POLICY
    assert stores["b/payments"].status["lastRun"]["error"] == NAMES_OTHER_POLICY
    assert "orders" not in json.dumps(stores["b/payments"].status)


def test_a_shared_batchs_error_naming_no_member_is_told_to_none_in_full() -> None:
    """It may name what none of them lists (another tenant's topic): nobody gets it."""
    cause = "KafkaUnavailable: invoices-0 lost its leader"
    stores = _two_tenants_in_one_failed_batch(cause)
    for store in stores.values():
        assert ready(store)["reason"] == "PlanFailed"
        assert ready(store)["message"] == NAMES_UNKNOWN
        assert "invoices" not in json.dumps(store.status)


def test_a_shared_batchs_error_naming_both_namespaces_is_told_to_none_in_full() -> None:
    stores = _two_tenants_in_one_failed_batch("KafkaUnavailable: orders-1 and payments-2 lost")
    for store in stores.values():
        assert ready(store)["message"] == NAMES_UNKNOWN


def test_a_run_that_started_past_its_slack_says_it_was_late() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    store = Store()
    raw = spec_of(maxRetention="1d")
    item = Due(PolicyRun("ns/p", {}, 1, store, lambda: NOW, late_by=95, slack=30), raw, parse(raw))
    run_batch([item], {}, env(kafka), lambda: NOW)
    schedule = {c["type"]: c for c in store.status["conditions"]}["OnSchedule"]
    assert (schedule["status"], schedule["reason"]) == ("False", "Late")
    assert "started 95s after it was due" in schedule["message"]


def test_policies_planned_in_process_read_only_their_own_partitions() -> None:
    kafka = FakeKafka()
    for p in range(10):
        kafka.logs[TopicPartition("big", p)] = [0, 100]
    kafka.logs[T0] = [0, 100]
    read: list[TopicPartition] = []
    offsets = kafka.offsets

    def counting(tps: Iterable[TopicPartition], kind: Any) -> dict[TopicPartition, int]:
        tps = list(tps)
        read.extend(tps)
        return offsets(tps, kind)

    kafka.offsets = counting  # type: ignore[method-assign]
    items = [
        due(Store(), "ns/small", maxRetention="1d"),
        due(Store(), "ns/large", topics={"names": ["big"]}, maxRetention="1d"),
    ]
    # The Spark plan fails, so nothing of "big" is re-checked or applied: any read of it
    # would have come from planning the small policy.
    outcomes = run_batch(items, {}, env(kafka, FakeSpark(kafka, fail=True), line=5), lambda: NOW)
    assert outcomes["ns/small"].ok
    assert {tp.topic for tp in read} == {"t"}


# --- spec.notify: unread-record loss, reported once -------------------------------------


def dataloss(store: Store) -> dict[str, Any]:
    conditions: dict[str, dict[str, Any]] = {c["type"]: c for c in store.status["conditions"]}
    return conditions["DataLoss"]


def test_a_watch_only_policy_deletes_nothing_and_reports_an_external_loss_once() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"slow": {T0: 10}, "done": {T0: 100}}
    store = Store()
    first = run_one(kafka, store, notify={"groups": ["slow", "done"]})
    assert first.notify_losses == []
    assert kafka.deletes == []
    assert dataloss(store)["status"] == "False"
    # Someone deletes past the slow group (default 7-day retention, records fresh).
    kafka.logs[T0][0] = 40
    kafka.first_times[T0] = NOW_MS - 1000
    second = run_one(kafka, store, notify={"groups": ["slow", "done"]})
    assert [(x.group, x.from_offset, x.to_offset, x.cause) for x in second.notify_losses] == [
        ("slow", 10, 40, "external")
    ]
    (entry,) = store.status["losses"]
    assert (entry["group"], entry["partition"], entry["records"]) == ("slow", 0, 30)
    assert store.status["unconsumedLostTotal"] == 30
    assert (dataloss(store)["status"], dataloss(store)["reason"]) == (
        "True",
        "UnconsumedRecordsDeleted",
    )
    assert kafka.deletes == []
    # The next run finds the same gap and says nothing more; a further delete adds its part.
    third = run_one(kafka, store, notify={"groups": ["slow", "done"]})
    assert third.notify_losses == []
    assert store.status["unconsumedLostTotal"] == 30
    kafka.logs[T0][0] = 55
    fourth = run_one(kafka, store, notify={"groups": ["slow", "done"]})
    assert [(x.from_offset, x.to_offset) for x in fourth.notify_losses] == [(40, 55)]
    assert store.status["unconsumedLostTotal"] == 45
    assert [e["fromOffset"] for e in store.status["losses"]] == [40, 10]


def test_the_policys_own_max_retention_cut_is_named_as_the_cause() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"idle": {T0: 10}}
    kafka.times[T0] = {NOW_MS - 3_600_000: 60}
    store = Store()
    outcome = run_one(kafka, store, maxRetention="1h", notify={"groups": ["idle"]})
    assert kafka.logs[T0][0] == 60
    assert [(x.from_offset, x.to_offset, x.cause) for x in outcome.notify_losses] == [
        (10, 60, "maxRetention")
    ]
    # Causes of the policy's own cuts need no extra reads.
    assert "first_record_times" not in kafka.calls
    # The first keys were read before the cut and travel with the loss (five listed).
    (entry,) = store.status["losses"]
    assert entry["sampleKeys"] == [{"offset": o, "key": f"key-{o}"} for o in range(10, 15)]
    assert kafka.calls.index("first_keys") < kafka.calls.index("delete_records")


def test_a_loss_outside_the_policys_cut_carries_no_sampled_keys() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [40, 100]
    kafka.commits = {"slow": {T0: 10}}
    store = Store()
    run_one(kafka, store, notify={"groups": ["slow"]})
    (entry,) = store.status["losses"]
    assert (entry["cause"], "sampleKeys" in entry) == ("external", False)
    assert "first_keys" not in kafka.calls


def test_a_record_purge_that_left_the_log_start_in_the_lost_range_is_named() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [40, 100]
    kafka.commits = {"slow": {T0: 10}}
    ledger = PurgeLedger()
    ledger.put(
        "ns/trim", purge_done(purge_body("trim", "k:9092", {"partition": 0, "lowWatermark": 40}))
    )
    # A purge elsewhere, or one that left the log start outside the range, is not blamed.
    ledger.put(
        "ns/other", purge_done(purge_body("other", "x:9092", {"partition": 0, "lowWatermark": 40}))
    )
    ledger.put(
        "ns/old", purge_done(purge_body("old", "k:9092", {"partition": 0, "lowWatermark": 5}))
    )
    store = Store()
    outcome = run_one(kafka, store, notify={"groups": ["slow"]}, purges=ledger)
    assert [(x.cause, x.by) for x in outcome.notify_losses] == [("recordPurge", "ns/trim")]
    (entry,) = store.status["losses"]
    assert (entry["cause"], entry["recordPurge"]) == ("recordPurge", "ns/trim")
    # Named from the ledger: no retention settings needed.
    assert "first_record_times" not in kafka.calls


def test_a_record_purge_of_another_namespace_is_blamed_without_naming_it() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [40, 100]
    kafka.commits = {"slow": {T0: 10}}
    ledger = PurgeLedger()
    body = purge_body("trim", "k:9092", {"partition": 0, "lowWatermark": 40}, namespace="ops")
    ledger.put("ops/trim", purge_done(body))
    store = Store()
    outcome = run_one(kafka, store, notify={"groups": ["slow"]}, purges=ledger)
    assert [(x.cause, x.by) for x in outcome.notify_losses] == [
        ("recordPurge", OTHER_NAMESPACE_PURGE)
    ]
    assert "ops" not in json.dumps(store.status)


def test_a_runs_losses_resolve_the_purges_clusters_once_not_once_per_loss() -> None:
    """Ten partitions lost, twenty purges of one namespace on one cluster: resolving a
    purge's cluster may read its KafkaClusterBinding, once in the run."""
    kafka = FakeKafka()
    tps = [TopicPartition("t", p) for p in range(10)]
    for tp in tps:
        kafka.logs[tp] = [40, 100]
    kafka.commits = {"slow": dict.fromkeys(tps, 10)}
    ledger = PurgeLedger()
    for i in range(20):
        marks = {"partition": i % 10, "lowWatermark": 40}
        ledger.put(f"ns/trim-{i:02d}", purge_done(purge_body(f"trim-{i:02d}", "k:9092", marks)))
    reads: list[str] = []

    def cluster_of(namespace: str, ref: Any) -> str | None:
        reads.append(namespace)
        return str(ref.identity(namespace))

    ledger.resolve_with(cluster_of)
    outcome = run_one(kafka, Store(), notify={"groups": ["slow"]}, purges=ledger)
    assert len(outcome.notify_losses) == 10
    assert all(x.cause == "recordPurge" for x in outcome.notify_losses)
    assert reads == ["ns"]


def test_a_folded_purge_is_named_only_when_it_completed_since_the_previous_check() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [40, 100]
    kafka.commits = {"slow": {T0: 10}}
    folded = {"partition": -1, "note": "summary of 2000 partitions"}
    ledger = PurgeLedger()
    ledger.put(
        "ns/big", purge_done(purge_body("big", "k:9092", folded, completed="2026-11-22T11:30:00Z"))
    )
    before = Store()
    before.status["lastRun"] = {"completedAt": "2026-11-22T11:00:00Z"}
    outcome = run_one(kafka, before, notify={"groups": ["slow"]}, purges=ledger)
    assert [(x.cause, x.by) for x in outcome.notify_losses] == [("recordPurge", "ns/big")]
    after = Store()
    after.status["lastRun"] = {"completedAt": "2026-11-22T11:45:00Z"}
    outcome = run_one(kafka, after, notify={"groups": ["slow"]}, purges=ledger)
    assert [(x.cause, x.by) for x in outcome.notify_losses] == [("external", None)]


def purge_body(
    name: str,
    cluster: str,
    result: dict[str, Any],
    completed: str = NOW_TEXT,
    namespace: str = "ns",
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"cluster": {"bootstrapServers": cluster}},
        "status": {
            "completedAt": completed,
            "results": [{"topic": "t", "state": "Purged", **result}],
        },
    }


def test_records_aged_out_by_time_retention_are_blamed_on_the_broker() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [50, 100]
    kafka.commits = {"slow": {T0: 10}}
    kafka.configs["t"] = {"cleanup.policy": "delete", "retention.ms": "60000"}
    kafka.first_times[T0] = NOW_MS - 120_000  # older than the topic's retention
    store = Store()
    outcome = run_one(kafka, store, notify={"groups": ["slow"]})
    assert [x.cause for x in outcome.notify_losses] == ["brokerRetention"]


def test_a_group_that_caught_up_drops_its_cursor() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [40, 100]
    kafka.commits = {"slow": {T0: 10}}
    store = Store()
    run_one(kafka, store, notify={"groups": ["slow"]})
    assert store.status["lossCursor"] == [{"group": "slow", "topic": "t", "reportedTo": "0:40"}]
    kafka.commits = {"slow": {T0: 70}}
    run_one(kafka, store, notify={"groups": ["slow"]})
    assert store.status["lossCursor"] == []
    assert store.status["unconsumedLostTotal"] == 30


def test_a_watch_only_peer_holds_no_cut_back() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 70}, "watched": {T0: 5}}
    others = {"ns/watch": parse_policy_spec(spec_of(notify={"groups": ["watched"]}))}
    run_one(kafka, Store(), others, deleteConsumed={"groups": ["a"]})
    assert kafka.logs[T0][0] == 70


def test_at_risk_names_the_group_whose_unread_records_retention_reaches_soonest() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"near": {T0: 20}, "far": {T0: 80}, "done": {T0: 100}}
    kafka.configs["t"] = {"cleanup.policy": "delete", "retention.ms": "7200000"}
    # First offsets at or after now - 2h + w for w in 0, 15, 30, 45, 60 minutes.
    boundary = NOW_MS - 7_200_000
    kafka.times[T0] = {boundary + k * 900_000: off for k, off in enumerate([10, 25, 40, 55, 70])}
    store = Store()
    outcome = run_one(kafka, store, notify={"groups": ["near", "far", "done"]})
    assert outcome.at_risk is not None
    assert [(r.group, r.within_ms, r.by) for r in outcome.at_risk] == [
        ("near", 900_000, "brokerRetention")
    ]
    (entry,) = store.status["atRisk"]
    assert (entry["group"], entry["withinSeconds"], entry["committedOffset"]) == ("near", 900, 20)
    conditions = {c["type"]: c for c in store.status["conditions"]}
    assert conditions["AtRisk"]["status"] == "True"
    assert "group near on t-0" in conditions["AtRisk"]["message"]
    # The group reads on: the risk clears.
    kafka.commits["near"] = {T0: 90}
    run_one(kafka, store, notify={"groups": ["near", "far", "done"]})
    conditions = {c["type"]: c for c in store.status["conditions"]}
    assert conditions["AtRisk"]["status"] == "False"
    assert store.status["atRisk"] == []


# --- spec.tombstones: lag against delete.retention.ms on compacted topics ---------------

C0 = TopicPartition("c", 0)
DAY_MS = 86_400_000


def compacted_topic(kafka: FakeKafka, delete_retention_ms: int = DAY_MS) -> None:
    kafka.logs[C0] = [0, 100]
    kafka.configs["c"] = {
        "cleanup.policy": "compact",
        "delete.retention.ms": str(delete_retention_ms),
    }


def test_a_group_lagging_past_its_share_of_delete_retention_is_at_risk() -> None:
    kafka = FakeKafka()
    compacted_topic(kafka)
    kafka.commits = {"slow": {C0: 10}, "fresh": {C0: 90}, "done": {C0: 100}}
    # slow's next record is 20h old (past 80% of a day); fresh's 1h.
    kafka.record_times[C0] = {10: NOW_MS - 20 * 3_600_000, 90: NOW_MS - 3_600_000}
    store = Store()
    outcome = run_one(
        kafka, store, topics={"names": ["c"]}, tombstones={"groups": ["slow", "fresh", "done"]}
    )
    assert outcome.tombstones is not None
    assert [(r.group, r.lag_ms) for r in outcome.tombstones.risks] == [("slow", 72_000_000)]
    assert outcome.tombstones.new_pairs == [("slow", "c")]
    (entry,) = store.status["tombstones"]
    assert (entry["group"], entry["marginSeconds"]) == ("slow", 4 * 3600)
    conditions = {c["type"]: c for c in store.status["conditions"]}
    assert conditions["TombstonesAtRisk"]["status"] == "True"
    # Watching only: nothing deleted, no setting changed.
    assert kafka.deletes == []
    assert kafka.altered == []
    # The next run with the same risk is not new.
    again = run_one(
        kafka, store, topics={"names": ["c"]}, tombstones={"groups": ["slow", "fresh", "done"]}
    )
    assert again.tombstones is not None
    assert again.tombstones.new_pairs == []


def test_delete_retention_is_raised_for_the_slowest_group_within_the_cap() -> None:
    kafka = FakeKafka()
    compacted_topic(kafka)
    kafka.commits = {"slow": {C0: 10}}
    kafka.record_times[C0] = {10: NOW_MS - 20 * 3_600_000}  # 20h: past 80% of a 24h setting
    store = Store()
    spec = {"groups": ["slow"], "raiseDeleteRetention": {"enabled": True, "max": "3d"}}
    outcome = run_one(kafka, store, topics={"names": ["c"]}, tombstones=spec)
    # 20h at half of 80% -> 50h.
    assert kafka.altered == [("c", "delete.retention.ms", str(50 * 3_600_000))]
    assert outcome.tombstones is not None
    assert [(r.from_ms, r.to_ms) for r in outcome.tombstones.raised] == [(DAY_MS, 50 * 3_600_000)]
    assert store.status["deleteRetentionRaised"][0]["toMs"] == 50 * 3_600_000
    # Far behind: the cap holds; and a value already above what is wanted is never lowered.
    kafka.record_times[C0] = {10: NOW_MS - 100 * 3_600_000}
    run_one(kafka, store, topics={"names": ["c"]}, tombstones=spec)
    assert kafka.altered[-1] == ("c", "delete.retention.ms", str(3 * DAY_MS))
    kafka.configs["c"]["delete.retention.ms"] = str(10 * DAY_MS)  # a person set it higher
    run_one(kafka, store, topics={"names": ["c"]}, tombstones=spec)
    assert len(kafka.altered) == 2


def test_a_dry_run_reports_the_risk_and_never_raises_delete_retention() -> None:
    kafka = FakeKafka()
    compacted_topic(kafka)
    kafka.commits = {"slow": {C0: 10}}
    kafka.record_times[C0] = {10: NOW_MS - 20 * 3_600_000}  # past 80% of a 24h setting
    store = Store()
    spec = {"groups": ["slow"], "raiseDeleteRetention": {"enabled": True, "max": "3d"}}
    outcome = run_one(kafka, store, topics={"names": ["c"]}, tombstones=spec, dryRun=True)
    assert kafka.altered == []
    assert outcome.tombstones is not None
    assert outcome.tombstones.raised == []
    assert [r.group for r in outcome.tombstones.risks] == ["slow"]
    assert store.status["deleteRetentionRaised"] == []
    conditions = {c["type"]: c for c in store.status["conditions"]}
    assert conditions["TombstonesAtRisk"]["status"] == "True"


def scan_row(partition: int, read: int, tombstones: int, age_ms: int | None) -> TombstoneRow:
    return TombstoneRow(
        "c",
        partition,
        records_read=read,
        tombstones=tombstones,
        oldest_tombstone_age_ms=age_ms,
    )


def test_a_tombstone_inventory_is_planned_with_spark_however_small_and_lands_in_status() -> None:
    kafka = FakeKafka()
    compacted_topic(kafka)
    kafka.logs[TopicPartition("c", 1)] = [0, 50]
    kafka.logs[T0] = [0, 100]
    spark = FakeSpark(kafka, tombstones=[scan_row(0, 100, 3, 5_000_000), scan_row(1, 50, 0, None)])
    stores = {"ns/inv": Store(), "ns/small": Store()}
    items = [
        due(
            stores["ns/inv"],
            "ns/inv",
            topics={"names": ["c"]},
            tombstones={"groups": ["g"], "inventory": True},
        ),
        due(stores["ns/small"], "ns/small", maxRetention="1d"),
    ]
    outcomes = run_batch(items, {}, env(kafka, spark, line=5000), lambda: NOW)
    assert spark.planned == [["ns/inv"]]
    assert outcomes["ns/inv"].ok
    (entry,) = stores["ns/inv"].status["tombstoneInventory"]
    assert {k: v for k, v in entry.items() if k != "scannedAt"} == {
        "topic": "c",
        "partitions": 2,
        "recordsScanned": 150,
        "tombstones": 3,
        "oldestAgeSeconds": 5000,
        "deleteRetentionSeconds": 86400,
    }


def test_a_tombstone_inventory_without_spark_says_no_scan_ran() -> None:
    kafka = FakeKafka()
    compacted_topic(kafka)
    store = Store()
    outcome = run_one(
        kafka, store, topics={"names": ["c"]}, tombstones={"groups": ["g"], "inventory": True}
    )
    assert outcome.ok
    assert store.status["tombstoneInventory"] == []
    conditions = {c["type"]: c for c in store.status["conditions"]}
    assert "no record scan ran" in conditions["Degraded"]["message"]


def test_the_cut_names_the_slowest_group_and_the_peer_that_held_it_back() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"fast": {T0: 70}, "slow": {T0: 40}, "mine": {T0: 60}}
    slow = parse_policy_spec(spec_of(deleteConsumed={"groups": ["slow"]}))
    store = Store()
    run_one(kafka, store, {"ns/slow": slow}, deleteConsumed={"groups": ["fast", "mine"]})
    (topic,) = store.status["topics"]
    assert topic["heldBackBy"] == [
        {"namespace": "ns", "policy": "slow", "group": "slow", "partitions": 1}
    ]
    assert topic["cut"] == {
        "rule": "deleteConsumed",
        "proposed": "committed by mine",
        "partitionsCut": 1,
        # From the log start 0 to the peer's hold at 40, not to mine's 60.
        "records": 40,
        "limits": [
            {"guard": "group", "detail": "committed by mine", "partitions": 1},
            {
                "guard": "peer",
                "detail": "held back by policy slow of this namespace, "
                "at the committed offset of its group slow",
                "partitions": 1,
            },
        ],
    }


def test_a_dry_runs_cut_counts_the_partitions_it_would_move() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.logs[TopicPartition("t", 1)] = [0, 100]
    kafka.commits = {"a": {T0: 50, TopicPartition("t", 1): 0}}
    store = Store()
    run_one(kafka, store, dryRun=True, deleteConsumed={"groups": ["a"]})
    assert kafka.deletes == []
    assert store.status["topics"][0]["cut"]["partitionsCut"] == 1
