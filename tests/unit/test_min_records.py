"""spec.minRecords: the last N records of each partition stay, even once every group has
read them, whichever rule proposed the cut; the rule never cuts anything itself. Proved in
the core, through the in-process planner and a run (fake Kafka), through the Spark plan
transforms on a local session with the rules carried as a pod's plan request carries them,
and in the CRD's schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.plan_request import PlanRequest
from kafka_retention.core.policy import RetentionRules, plan_partition
from kafka_retention.core.policy_spec import Member, parse_policy_spec
from kafka_retention.core.retention_rules import registry
from kafka_retention.core.specs import SpecError
from kafka_retention.services.policy.planning import plan_in_process, select
from retention_jobs import transforms
from tests.helpers.policy_runs import (
    NOW_MS,
    T0,
    FakeKafka,
    Store,
    run_one,
    spec_of,
)

TP = TopicPartition("t", 0)
REPO = Path(__file__).resolve().parents[2]


def facts(log_start: int, hw: int, committed: int | None, times: dict[int, int | None]) -> Any:
    return PartitionFacts(TP, log_start, hw, {"g": committed}, times)


# --- the spec ---


def test_min_records_is_parsed_and_absent_or_zero_keeps_no_buffer() -> None:
    assert parse_policy_spec(spec_of(maxRetention="1d", minRecords=500)).rules.min_records == 500
    for spec in (spec_of(maxRetention="1d"), spec_of(maxRetention="1d", minRecords=0)):
        rules = parse_policy_spec(spec).rules
        assert rules.min_records == 0
        assert [r.name for r in rules.asked()] == ["maxRetention"]


@pytest.mark.parametrize("value", [-1, "100", 1.5, True, 2**63])
def test_a_min_records_that_is_not_a_count_is_refused_naming_the_field(value: Any) -> None:
    with pytest.raises(SpecError) as err:
        parse_policy_spec(spec_of(deleteConsumed={"groups": ["g"]}, minRecords=value))
    assert err.value.field == "spec.minRecords"


def test_min_records_alone_is_no_policy_it_never_cuts() -> None:
    with pytest.raises(SpecError) as err:
        parse_policy_spec(spec_of(minRecords=10))
    assert err.value.field == "spec"
    assert not RetentionRules(min_records=10).deletes()


def test_the_crd_takes_a_count_from_zero_and_lists_the_guard() -> None:
    crd = yaml.safe_load((REPO / "crds" / "retentionpolicies.kafka-retention.io.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    field = schema["properties"]["spec"]["properties"]["minRecords"]
    assert (field["type"], field["minimum"]) == ("integer", 0)
    assert "never cuts" in field["description"]
    cut = schema["properties"]["status"]["properties"]["topics"]["items"]["properties"]["cut"]
    guard = cut["properties"]["limits"]["items"]["properties"]["guard"]
    assert "minRecords" in guard["enum"]
    assert sorted(guard["enum"]) == sorted(registry.GUARDS)


# --- the core ---


def test_a_cut_past_every_group_keeps_the_last_n_records() -> None:
    cut = plan_partition(
        facts(10, 100, 95, {}), RetentionRules(consumed_groups=("g",), min_records=30), NOW_MS
    )
    assert (cut.target, cut.rule, cut.reason) == (70, "deleteConsumed", "committed by g")
    assert cut.notes == ("minRecords keeps the last 30 records (from offset 70)",)
    assert cut.guards == ("minRecords",)
    assert cut.records_to_delete == 60


def test_a_cut_already_below_the_buffer_carries_no_note() -> None:
    cut = plan_partition(
        facts(10, 100, 50, {}), RetentionRules(consumed_groups=("g",), min_records=30), NOW_MS
    )
    assert (cut.target, cut.notes, cut.guards) == (50, (), ())


def test_fewer_records_than_the_buffer_keeps_them_all() -> None:
    cut = plan_partition(
        facts(10, 25, 25, {}), RetentionRules(consumed_groups=("g",), min_records=30), NOW_MS
    )
    assert (cut.target, cut.records_to_delete) == (10, 0)
    assert cut.guards == ("minRecords",)


def test_the_buffer_holds_back_a_time_rule_too_and_the_lower_floor_speaks_last() -> None:
    """maxRetention would take everything (every record is older); minRetention keeps
    from offset 80, minRecords from 60: both lower the cut in the registry's order."""
    rules = RetentionRules(max_retention_ms=1000, min_retention_ms=10, min_records=40)
    cut = plan_partition(facts(0, 100, None, {NOW_MS - 1000: None, NOW_MS - 10: 80}), rules, NOW_MS)
    assert (cut.target, cut.rule) == (60, "maxRetention")
    assert cut.guards == ("minRetention", "minRecords")


@given(
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.integers(0, 2000),
    st.none() | st.integers(0, 2000),
    st.integers(0, 3000),
)
def test_the_cut_never_reaches_into_the_last_n_records(
    log_start: int, length: int, committed_at: int, before: int | None, n: int
) -> None:
    hw = log_start + length
    rules = RetentionRules(consumed_groups=("g",), delete_before_ms=NOW_MS, min_records=n)
    cut = plan_partition(facts(log_start, hw, committed_at, {NOW_MS: before}), rules, NOW_MS)
    without = plan_partition(
        facts(log_start, hw, committed_at, {NOW_MS: before}),
        RetentionRules(consumed_groups=("g",), delete_before_ms=NOW_MS),
        NOW_MS,
    )
    assert log_start <= cut.target <= max(hw - n, log_start)
    # A floor: it keeps what the buffer needs and nothing more.
    assert cut.target == max(log_start, min(without.target, hw - n))


# --- the in-process planner and a run (services.policy), on fake Kafka ---


def test_the_in_process_plan_keeps_the_buffer_and_the_run_deletes_only_below_it() -> None:
    kafka = FakeKafka()
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 100}}  # everything read
    spec = parse_policy_spec(spec_of(deleteConsumed={"groups": ["a"]}, minRecords=25))
    members = [Member("ns/p", spec)]
    (row,) = plan_in_process(kafka, members, select(kafka, members), NOW_MS)["ns/p"].rows
    assert (row.target_offset, row.guards) == (75, ("minRecords",))

    store = Store()
    outcome = run_one(kafka, store, deleteConsumed={"groups": ["a"]}, minRecords=25)
    assert kafka.logs[T0][0] == 75
    assert outcome.records_deleted == 75
    (topic,) = store.status["topics"]
    limits = topic["cut"]["limits"]
    # The group proposed the cut (it read everything); the buffer lowered it.
    assert [(lim["guard"], lim["partitions"]) for lim in limits] == [
        ("group", 1),
        ("minRecords", 1),
    ]
    assert limits[1]["detail"] == "minRecords keeps the last 25 records (from offset 75)"


# --- the Spark plan transforms, with the rules as a pod reads them ---


def test_the_spark_plan_keeps_the_buffer_with_rules_carried_through_a_pod_request(
    spark: Any,
) -> None:
    policy = parse_policy_spec(spec_of(deleteConsumed={"groups": ["a"]}, minRecords=30))
    sent = PlanRequest.for_policy(policy, {}, NOW_MS, policy_id="ns/p")
    (received,) = PlanRequest.from_json(sent.to_json()).policies
    assert received.rules.min_records == 30
    facts_df = spark.createDataFrame(
        [
            ("ns/p", "t", 0, 0, 100, {}, {"a": 100}, None),
            ("ns/p", "t", 1, 0, 100, {}, {"a": 50}, None),
            ("ns/p", "t", 2, 90, 110, {}, {"a": 110}, None),
        ],
        "policy string, topic string, partition int, logStartOffset long, "
        "highWatermark long, timeOffsets map<long,long>, committed map<string,long>, "
        "error string",
    )
    rows = {
        r["partition"]: r
        for r in transforms.plan_policies(facts_df, {received.id: received.rules}, NOW_MS)
        .select("partition", "targetOffset", "notes", "guards")
        .collect()
    }
    assert {p: rows[p]["targetOffset"] for p in rows} == {0: 70, 1: 50, 2: 90}
    assert rows[0]["notes"] == ["minRecords keeps the last 30 records (from offset 70)"]
    assert {p: rows[p]["guards"] for p in rows} == {0: ["minRecords"], 1: [], 2: ["minRecords"]}
