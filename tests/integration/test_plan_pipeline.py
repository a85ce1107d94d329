"""The Spark plan pipeline on the real 3-broker cluster: cuts, scans and inventories
checked against offsets, commits and timestamps the tests set up themselves."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_request import PlanRequest, Scans
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import Member, parse_policy_spec
from kafka_retention.services.policy.planning import plan_in_process, select
from retention_jobs.plan_job import ScanTimeoutError, run
from tests.helpers.cli import kafka_retention, policy_file
from tests.helpers.commits import commit
from tests.helpers.kafka import Kafka
from tests.helpers.records import old_then_new, produce
from tests.helpers.share_consumer import (
    accept_below,
    read_from_earliest,
    start_offset_by_kafka,
    wait_for_start_offset,
)

HOUR = 3_600_000
NO_RETENTION = {"retention.ms": "-1"}  # old CreateTimes must not meet broker retention


def plan(
    spark: Any, bootstrap: str, now_ms: int | None = None, scans: Scans | None = None, **spec: Any
) -> PolicyPlan:
    policy = parse_policy_spec({"cluster": {"bootstrapServers": bootstrap}, **spec})
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return run(spark, PlanRequest.for_policy(policy, {}, now, scans))


def by_partition(result: PolicyPlan, topic: str) -> dict[int, PlanRow]:
    return {r.partition: r for r in result.rows if r.topic == topic}


@pytest.mark.stack
def test_consumer_aware_cut_is_the_slowest_group_and_no_commit_protects(
    spark: Any, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 100, 1: 100, 2: 100})
    fast, slow, idle = f"{topic}-fast", f"{topic}-slow", f"{topic}-idle"
    commit(kafka.bootstrap, fast, topic, {0: 90, 1: 80, 2: 70})
    commit(kafka.bootstrap, slow, topic, {0: 40, 1: 60})
    result = plan(
        spark, kafka.bootstrap, topics={"names": [topic]}, deleteConsumed={"groups": [fast, slow]}
    )
    rows = by_partition(result, topic)
    assert [rows[p].target_offset for p in range(3)] == [40, 60, 0]
    assert [rows[p].records_to_delete for p in range(3)] == [40, 60, 0]
    assert "no committed offset" in (rows[2].reason or "")
    # The guard tags the reasons carry for status.topics[].cut, through the plan job.
    assert [rows[p].reason_guard for p in range(3)] == ["group", "group", "noCommit"]
    assert all(g.unconsumed_to_delete == 0 for r in rows.values() for g in r.groups)
    # Same topic, a third group that never committed anywhere: nothing may go.
    held = plan(
        spark,
        kafka.bootstrap,
        topics={"names": [topic]},
        deleteConsumed={"groups": [fast, slow, idle]},
    )
    assert [r.target_offset for r in held.rows] == [0, 0, 0]


@pytest.mark.stack
def test_a_share_group_holds_the_cut_at_its_start_offset_in_spark_and_in_process_plans(
    spark: Any, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 100, 1: 100})
    done, share = f"{topic}-done", f"{topic}-share"
    commit(kafka.bootstrap, done, topic, {0: 100, 1: 100})  # a consumer group that read it all
    read_from_earliest(kafka.bootstrap, share, topic)
    accept_below(kafka.bootstrap, share, topic, 40, partition=0)  # partition 1's records released
    wait_for_start_offset(kafka.bootstrap, share, TopicPartition(topic, 0), at_least=40)
    now = int(time.time() * 1000)
    fields: dict[str, Any] = {
        "topics": {"names": [topic]},
        "deleteConsumed": {"groups": [done, share]},
    }

    by_spark = plan(spark, kafka.bootstrap, now_ms=now, **fields)
    adapter = KafkaAdmin(kafka.bootstrap)
    members = [
        Member(
            "ns/p", parse_policy_spec({"cluster": {"bootstrapServers": kafka.bootstrap}, **fields})
        )
    ]
    by_core = plan_in_process(adapter, members, select(adapter, members), now)["ns/p"]

    # Kafka's own tool says where the share group is ("-": nowhere yet, which protects all).
    starts = {p: start_offset_by_kafka(kafka.bootstrap, share, topic, p) for p in (0, 1)}
    assert starts[0] is not None
    assert starts[0] >= 40
    expected = {p: 0 if at is None else at for p, at in starts.items()}
    for planned in (by_spark, by_core):
        rows = by_partition(planned, topic)
        assert {p: rows[p].target_offset for p in (0, 1)} == expected
        assert {p: {g.group: g.committed_offset for g in rows[p].groups} for p in (0, 1)} == {
            p: {done: 100, share: starts[p]} for p in (0, 1)
        }
        assert planned.group_types == {done: "classic", share: "share"}


@pytest.mark.stack
def test_delete_before_with_out_of_order_create_times_cuts_a_safe_prefix(
    spark: Any, kafka: Kafka
) -> None:
    topic = kafka.make_topic(partitions=1, config=NO_RETENTION)
    base = (int(time.time() * 1000) // HOUR - 48) * HOUR
    hours = (0, 1, 3, 4, 5, 6, 2, 7, 8, 9)  # offset 6 arrives late with hour 2
    produce(kafka.bootstrap, topic, {0: 10}, timestamps={0: [base + h * HOUR for h in hours]})
    cut = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((base + 4 * HOUR) / 1000))
    result = plan(spark, kafka.bootstrap, topics={"names": [topic]}, deleteBefore=cut)
    (row,) = result.rows
    # Offsets 0..2 (hours 0, 1, 3) are all older; offset 3 is hour 4. The late record at
    # offset 6 is older too but sits behind newer ones: a cut is a prefix, so it stays.
    assert row.target_offset == 3
    assert row.rule == "deleteBefore"


@pytest.mark.stack
def test_min_retention_holds_back_a_cut_on_recent_records(spark: Any, kafka: Kafka) -> None:
    now = int(time.time() * 1000)
    stamps = old_then_new(20, 2 * HOUR, now=now, new_age_ms=60_000)
    topic = kafka.topic({0: 30}, NO_RETENTION, timestamps={0: stamps})
    group = f"{topic}-reader"
    commit(kafka.bootstrap, group, topic, {0: 30})  # everything read
    result = plan(
        spark,
        kafka.bootstrap,
        now_ms=now,
        topics={"names": [topic]},
        deleteConsumed={"groups": [group], "minRetention": "30m"},
    )
    (row,) = result.rows
    assert row.target_offset == 20  # the 10 records younger than 30 minutes stay
    assert any("minRetention" in n for n in row.notes)
    assert row.guards == ("minRetention",)


@pytest.mark.stack
def test_minRecords_keeps_the_last_records_in_spark_and_in_process_plans(
    spark: Any, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 100, 1: 10})
    group = f"{topic}-reader"
    commit(kafka.bootstrap, group, topic, {0: 100, 1: 10})  # everything read
    now = int(time.time() * 1000)
    fields: dict[str, Any] = {
        "topics": {"names": [topic]},
        "deleteConsumed": {"groups": [group]},
        "minRecords": 25,
    }
    by_spark = plan(spark, kafka.bootstrap, now_ms=now, **fields)
    adapter = KafkaAdmin(kafka.bootstrap)
    members = [
        Member(
            "ns/p", parse_policy_spec({"cluster": {"bootstrapServers": kafka.bootstrap}, **fields})
        )
    ]
    by_core = plan_in_process(adapter, members, select(adapter, members), now)["ns/p"]
    for planned in (by_spark, by_core):
        rows = by_partition(planned, topic)
        # Partition 1 holds fewer than 25 records: they all stay.
        assert {p: rows[p].target_offset for p in (0, 1)} == {0: 75, 1: 0}
        assert [rows[p].guards for p in (0, 1)] == [("minRecords",), ("minRecords",)]
        assert rows[0].notes == ("minRecords keeps the last 25 records (from offset 75)",)
        assert rows[0].rule == "deleteConsumed"


@pytest.mark.stack
def test_max_retention_past_an_idle_group_counts_and_samples_what_it_loses(
    spark: Any, kafka: Kafka
) -> None:
    now = int(time.time() * 1000)
    stamps = old_then_new(20, 3 * HOUR, now=now, new_age_ms=60_000)
    topic = kafka.topic(
        {0: 30},
        NO_RETENTION,
        timestamps={0: stamps},
        value=b"v" * 50,
        key=lambda p, i: f"key-{i}".encode(),
    )
    idle = kafka.group_at(topic, "idle", {0: 5})
    result = plan(
        spark,
        kafka.bootstrap,
        now_ms=now,
        topics={"names": [topic]},
        deleteConsumed={"groups": [idle]},
        maxRetention="1h",
        scans=Scans(key_sample=4),
    )
    (row,) = result.rows
    assert (row.target_offset, row.rule) == (20, "maxRetention")
    (g,) = row.groups
    assert g.committed_offset == 5
    assert g.unconsumed_to_delete == 15
    assert [(s.offset, s.key) for s in g.unconsumed_sample or ()] == [
        (5, "key-5"),
        (6, "key-6"),
        (7, "key-7"),
        (8, "key-8"),
    ]
    assert 15 * 55 <= (g.unconsumed_bytes_to_delete or 0) <= 15 * 100
    # The group's next record (offset 5) is about three hours old.
    assert 3 * HOUR - 60_000 <= (g.time_lag_ms or 0) <= 3 * HOUR + 60_000
    assert 20 * 55 <= (row.bytes_to_delete_estimate or 0) <= 20 * 100


@pytest.mark.stack
def test_tombstone_inventory_on_a_compacted_topic(spark: Any, kafka: Kafka) -> None:
    topic = kafka.make_topic(
        partitions=1, config={"cleanup.policy": "compact", "delete.retention.ms": "3600000"}
    )
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce(
            topic, key=f"k{i}".encode(), value=b"x", partition=0, timestamp=now - 10 * HOUR + i
        )
    for i, age in ((3, 5 * HOUR), (7, 2 * HOUR), (9, HOUR // 2)):
        producer.produce(topic, key=f"k{i}".encode(), value=None, partition=0, timestamp=now - age)
    assert producer.flush(30) == 0
    result = plan(
        spark,
        kafka.bootstrap,
        now_ms=now,
        topics={"names": [topic]},
        maxRetention="1d",
        scans=Scans(tombstones=True, tombstone_sample=2),
    )
    assert topic in result.skipped  # compact-only: DeleteRecords cannot apply
    assert "cleanup.policy=compact" in result.skipped[topic]
    (inv,) = [t for t in result.tombstones if t.topic == topic]
    assert inv.records_read == 23
    assert inv.tombstones == 3
    assert inv.oldest_tombstone_age_ms == 5 * HOUR
    assert inv.oldest_tombstone_remaining_ms == HOUR - 5 * HOUR
    assert [t.offset for t in inv.oldest_tombstones] == [20, 21]


@pytest.mark.stack
def test_a_tombstone_inventory_past_its_time_limit_ends_the_plan(spark: Any, kafka: Kafka) -> None:
    """The scans' time limit holds for the whole job (run_batch), and the session plans
    the next batch as usual."""
    topic = kafka.make_topic(partitions=2, config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce(topic, key=f"k{i}".encode(), value=None if i % 3 else b"x")
    assert producer.flush(30) == 0
    limited = Scans(tombstones=True, time_limit_s=0.001)
    with pytest.raises(ScanTimeoutError, match=r"time limit of 0\.001s"):
        plan(spark, kafka.bootstrap, topics={"names": [topic]}, maxRetention="1d", scans=limited)
    result = plan(
        spark,
        kafka.bootstrap,
        topics={"names": [topic]},
        maxRetention="1d",
        scans=Scans(tombstones=True),
    )
    assert sum(t.records_read or 0 for t in result.tombstones if t.topic == topic) == 200


@pytest.mark.stack
def test_pattern_selects_topics_created_by_the_test_and_skips_internal_ones(
    spark: Any, kafka: Kafka
) -> None:
    topic = kafka.make_topic(partitions=2)
    result = plan(
        spark, kafka.bootstrap, topics={"pattern": f"{topic}|__consumer_offsets"}, maxRetention="7d"
    )
    assert {r.topic for r in result.rows} == {topic}


@pytest.mark.stack
def test_plan_command_prints_the_table_and_writes_json_lines(kafka: Kafka, tmp_path: Path) -> None:
    topic = kafka.topic({0: 30, 1: 30})
    group = kafka.group_at(topic, "g", {0: 12, 1: 30})
    rule = f"deleteConsumed: {{groups: [{group}]}}"
    policy = policy_file(tmp_path / "policy.yaml", kafka.bootstrap, topic, rule)
    out = tmp_path / "plan.jsonl"
    done = kafka_retention("plan", "-f", str(policy), "--output", str(out), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "42 records" in done.stdout
    assert "nothing was deleted" in done.stdout
    # Progress shows on a terminal (or with -v) only: piped, neither stream has any.
    assert "computing cuts" not in done.stderr + done.stdout
    assert f"group {group}: read as classic" in done.stdout
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    rows = [r for r in lines if r["kind"] == "partition"]
    assert [(r["partition"], r["targetOffset"]) for r in rows] == [(0, 12), (1, 30)]
    # A line per group says what it was read as (plan_lines.to_json_lines).
    assert [r for r in lines if r["kind"] == "group"] == [
        {"kind": "group", "group": group, "type": "classic"}
    ]


def test_plan_command_names_the_bad_field(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "kind: RetentionPolicy\nspec: {cluster: {bootstrapServers: k:1}, "
        "topics: {pattern: '(oops'}, maxRetention: 1d}\n"
    )
    done = kafka_retention("plan", "-f", str(policy), timeout=60)
    assert done.returncode == 2
    assert "spec.topics.pattern" in done.stderr
