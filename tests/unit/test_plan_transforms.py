"""The plan job's DataFrame transforms, on a local SparkSession, without Kafka."""

from __future__ import annotations

from typing import Any

from pyspark.testing import assertDataFrameEqual

from kafka_retention.core.policy import RetentionRules
from retention_jobs import schemas, transforms

NOW = 1_800_000_000_000


def test_plan_applies_the_planning_core_to_every_row(spark: Any) -> None:
    rules = RetentionRules(consumed_groups=("a", "b"), max_retention_ms=1000)
    facts = spark.createDataFrame(
        [
            ("t", 0, 0, 100, {NOW - 1000: 30}, {"a": 40, "b": 60}, None),
            ("t", 1, 0, 100, {NOW - 1000: 70}, {"a": 40, "b": None}, None),
            ("t", 2, None, None, {}, {}, "TOPIC_AUTHORIZATION_FAILED: denied"),
        ],
        "topic string, partition int, logStartOffset long, highWatermark long, "
        "timeOffsets map<long,long>, committed map<string,long>, error string",
    )
    got = transforms.plan(facts, rules, NOW).select(
        "partition", "targetOffset", "rule", "recordsToDelete", "groups", "error"
    )
    expected = spark.createDataFrame(
        [
            (0, 40, "deleteConsumed", 40, [("a", 40, 0), ("b", 60, 0)], None),
            (1, 70, "maxRetention", 70, [("a", 40, 30), ("b", None, 70)], None),
            (2, None, None, None, None, "TOPIC_AUTHORIZATION_FAILED: denied"),
        ],
        f"partition int, targetOffset long, rule string, recordsToDelete long, "
        f"groups array<{schemas.GROUP_IMPACT}>, error string",
    )
    assertDataFrameEqual(got, expected)


def test_bytes_estimate_is_records_times_average_size(spark: Any) -> None:
    plan = spark.createDataFrame(
        [("t", 0, 10), ("t", 1, 0), ("t", 2, 5)],
        "topic string, partition int, recordsToDelete long",
    )
    sizes = spark.createDataFrame([("t", 0, 120.5), ("t", 2, None)], schemas.SIZES)
    got = transforms.with_bytes_estimate(plan, sizes)
    expected = spark.createDataFrame(
        [("t", 0, 10, 1205), ("t", 1, 0, 0), ("t", 2, 5, None)],
        "topic string, partition int, recordsToDelete long, bytesToDeleteEstimate long",
    )
    assertDataFrameEqual(got, expected)


def test_group_scans_fold_back_into_each_partition(spark: Any) -> None:
    plan = spark.createDataFrame(
        [("t", 0, 0, 100, 70, [("b", 10, 60), ("a", 80, 0)])],
        f"topic string, partition int, logStartOffset long, highWatermark long, "
        f"targetOffset long, groups array<{schemas.GROUP_IMPACT}>",
    )
    lags = spark.createDataFrame([("t", 0, "a", 500), ("t", 0, "b", 9000)], schemas.LAGS)
    lost = spark.createDataFrame(
        [("t", 0, "b", 60, 6000, [(10, "k10"), (11, "k11")])], schemas.UNCONSUMED
    )
    (row,) = transforms.with_group_scans(plan, lags, lost).collect()
    groups = [g.asDict(recursive=True) for g in row.groups]
    assert [g["group"] for g in groups] == ["a", "b"]
    assert groups[0]["timeLagMs"] == 500
    assert groups[0]["unconsumedSample"] is None
    assert groups[1]["unconsumedBytesToDelete"] == 6000
    assert groups[1]["unconsumedSample"] == [
        {"offset": 10, "key": "k10"},
        {"offset": 11, "key": "k11"},
    ]


def test_tombstone_ages_compare_with_delete_retention(spark: Any) -> None:
    scanned = spark.createDataFrame(
        [("c", 0, 100, 3, NOW - 5000, NOW - 1000, [(4, NOW - 5000)])], schemas.TOMBSTONES
    )
    retention = spark.createDataFrame([("c", 3000)], "topic string, deleteRetentionMs long")
    (row,) = transforms.tombstone_ages(scanned, retention, NOW).collect()
    assert row.oldestTombstoneAgeMs == 5000
    assert row.oldestTombstoneRemainingMs == -2000


def test_fact_tasks_give_each_core_two_tasks_within_the_per_task_bounds() -> None:
    from retention_jobs.plan_job import (
        MAX_PARTITIONS_PER_TASK,
        MIN_PARTITIONS_PER_TASK,
        fact_tasks,
    )

    assert fact_tasks(0, 2) == 1
    # Few partitions: one task of at most the minimum, not a task per core.
    assert fact_tasks(300, 2) == 1
    assert fact_tasks(MIN_PARTITIONS_PER_TASK * 3, 2) == 3
    # Between the bounds: two tasks a core.
    assert fact_tasks(10_000, 2) == 4
    assert fact_tasks(10_000, 8) == 16
    assert fact_tasks(10_000, 64) == 10_000 // MIN_PARTITIONS_PER_TASK
    # Past them: no task asks for more than one commit request carries.
    assert fact_tasks(1_000_000, 2) == 1_000_000 // MAX_PARTITIONS_PER_TASK


def test_map_columns_reach_the_core_as_each_rows_own_dict_in_sliced_batches() -> None:
    import pyarrow as pa

    column = pa.array(
        [[("a", 1)], None, [], [("b", None), ("c", 3)]], pa.map_(pa.string(), pa.int64())
    )
    assert transforms._dicts(column) == [{"a": 1}, {}, {}, {"b": None, "c": 3}]
    # Arrow hands mapInArrow slices whose offsets do not start at zero.
    assert transforms._dicts(column.slice(2, 2)) == [{}, {"b": None, "c": 3}]


def test_guard_tags_cross_arrow_beside_the_notes_they_tag(spark: Any) -> None:
    rules = RetentionRules(consumed_groups=("a", "b"), min_retention_ms=1000)
    facts = spark.createDataFrame(
        [
            ("t", 0, 0, 100, {NOW - 1000: 30}, {"a": 40, "b": 60}, None),
            ("t", 1, 0, 100, {NOW - 1000: None}, {"a": 40, "b": None}, None),
        ],
        "topic string, partition int, logStartOffset long, highWatermark long, "
        "timeOffsets map<long,long>, committed map<string,long>, error string",
    )
    got = transforms.plan(facts, rules, NOW).select("partition", "reasonGuard", "guards")
    expected = spark.createDataFrame(
        [(0, "group", ["minRetention"]), (1, "noCommit", [])],
        "partition int, reasonGuard string, guards array<string>",
    )
    assertDataFrameEqual(got, expected)
