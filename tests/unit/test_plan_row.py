"""A plan row has one definition (core.plan_row): its JSON lines keep the keys plans have
always had, every field crosses them, and the Spark job's columns are its fields."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_retention.core.plan_lines import by_policy, from_json_lines, to_json_lines
from kafka_retention.core.plan_row import (
    GroupImpactRow,
    KeySample,
    PlanRow,
    TombstoneRow,
    TombstoneSample,
)
from retention_jobs import schemas, transforms
from tests.helpers.non_default import non_default

NOW = 1_800_000_000_000

# A row as the Spark job wrote it before the row was typed (a pod run's JSON line, with
# the scans folded in): a stored or in-flight plan must still read.
SPARK_LINE = (
    '{"kind": "partition", "policy": "ns/p", "topic": "t", "partition": 3, '
    '"logStartOffset": 5, "highWatermark": 100, "targetOffset": 40, '
    '"rule": "deleteConsumed", "reason": "every group committed past 40", '
    '"reasonGuard": null, "notes": ["minRetention keeps 2"], "guards": ["minRetention"], '
    '"recordsToDelete": 35, "groups": [{"group": "a", "committedOffset": 30, '
    '"unconsumedToDelete": 10, "timeLagMs": 500, "unconsumedBytesToDelete": 640, '
    '"unconsumedSample": [{"offset": 30, "key": "k30"}, {"offset": 31, "key": null}]}], '
    '"error": null, "timeOffsets": {"1799999999000": 40, "1799999998000": null}, '
    '"bytesToDeleteEstimate": 2240}\n'
)


def test_every_field_of_a_row_crosses_json_lines() -> None:
    row = non_default(PlanRow)
    assert row.groups[0].unconsumed_sample  # nested fields set too
    (back,) = from_json_lines(to_json_lines([row], {}, []))[0]
    assert back == row


def test_every_field_of_a_tombstone_row_crosses_json_lines() -> None:
    row = non_default(TombstoneRow)
    assert row.oldest_tombstones
    (back,) = from_json_lines(to_json_lines([], {}, [row]))[2]
    assert back == row


def test_a_row_the_spark_job_wrote_before_reads_back_whole() -> None:
    ((rows, skipped, tombstones, types),) = by_policy(SPARK_LINE).values()
    assert rows == [
        PlanRow(
            "t",
            3,
            log_start_offset=5,
            high_watermark=100,
            target_offset=40,
            rule="deleteConsumed",
            reason="every group committed past 40",
            notes=("minRetention keeps 2",),
            guards=("minRetention",),
            records_to_delete=35,
            groups=(
                GroupImpactRow(
                    "a",
                    30,
                    10,
                    time_lag_ms=500,
                    unconsumed_bytes_to_delete=640,
                    unconsumed_sample=(KeySample(30, "k30"), KeySample(31, None)),
                ),
            ),
            time_offsets={1_799_999_999_000: 40, 1_799_999_998_000: None},
            bytes_to_delete_estimate=2240,
        )
    ]
    assert (skipped, tombstones, types) == ({}, [], {})


def test_a_row_writes_the_keys_plans_have_always_had() -> None:
    line = to_json_lines(by_policy(SPARK_LINE)["ns/p"][0], {}, [], policy="ns/p")
    assert json.loads(line) == json.loads(SPARK_LINE)


def test_an_error_row_needs_only_its_partition_and_error() -> None:
    line = '{"kind": "partition", "topic": "t", "partition": 0, "targetOffset": null, '
    line += '"error": "TOPIC_AUTHORIZATION_FAILED"}'
    ((row,), _, _, _) = from_json_lines(line)
    assert row == PlanRow("t", 0, error="TOPIC_AUTHORIZATION_FAILED")
    assert not row.planned


def test_a_failed_partitions_null_columns_read_as_empty() -> None:
    """The Spark job writes a failed partition's array columns as null."""
    item = {"topic": "t", "partition": 0, "notes": None, "guards": None, "groups": None}
    item |= {"timeOffsets": None, "error": "denied"}
    assert PlanRow.from_json(item) == PlanRow("t", 0, error="denied")


@pytest.mark.parametrize(
    ("key", "value"),
    [("targetOffset", "40"), ("targetOffset", True), ("notes", "one"), ("deleteAll", True)],
)
def test_a_forged_row_of_the_wrong_shape_is_refused(key: str, value: Any) -> None:
    item = json.loads(SPARK_LINE)
    item[key] = value
    with pytest.raises(ValueError, match=key if key == "deleteAll" else "expected"):
        by_policy(json.dumps(item))


def _same_columns(got: Any, want: Any) -> None:
    """Names and types, nested, ignoring nullability (every derived column is nullable)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    def strip(t: Any) -> Any:
        if isinstance(t, StructType):
            return [(f.name, strip(f.dataType)) for f in t.fields]
        if isinstance(t, ArrayType):
            return ("array", strip(t.elementType))
        if isinstance(t, MapType):
            return ("map", strip(t.keyType), strip(t.valueType))
        return t.simpleString()

    assert strip(got) == strip(want)


def test_the_plan_jobs_columns_are_the_rows_fields(spark: Any) -> None:
    """The cut, the byte estimate and the group scans, as plan_job chains them: what the
    job collects is PlanRow's columns, no more, no fewer, of PlanRow's types."""
    from kafka_retention.core.policy import RetentionRules

    facts = spark.createDataFrame(
        [
            ("p", "t", 0, 0, 100, {NOW - 1000: 30}, {"a": 40}, None),
            ("p", "t", 1, None, None, {}, {}, "TOPIC_AUTHORIZATION_FAILED"),
        ],
        f"policy string, {schemas.FACTS}",
    )
    rules = {"p": RetentionRules(consumed_groups=("a",), max_retention_ms=1000)}
    plan = transforms.plan_policies(facts, rules, NOW)
    _same_columns(plan.schema, spark.createDataFrame([], transforms.PLANNED).schema)
    sizes = spark.createDataFrame([("t", 0, 64.0)], schemas.SIZES)
    plan = transforms.with_bytes_estimate(plan, sizes)
    lags = spark.createDataFrame([("t", 0, "a", 500)], schemas.LAGS)
    lost = spark.createDataFrame(
        [("p", "t", 0, "a", 0, 0, [])], f"policy string, {schemas.UNCONSUMED}"
    )
    plan = transforms.with_group_scans(plan, lags, lost).drop("policy")
    want = spark.createDataFrame([], schemas.PLAN).schema
    _same_columns(plan.select(*want.fieldNames()).schema, want)
    assert sorted(plan.columns) == sorted(want.fieldNames())
    rows = [
        PlanRow.from_json(r.asDict(recursive=True)) for r in plan.orderBy("partition").collect()
    ]
    assert rows[0].target_offset == 40
    assert rows[0].bytes_to_delete_estimate == 40 * 64
    assert rows[0].groups == (GroupImpactRow("a", 40, 0, 500, 0, ()),)
    assert rows[1] == PlanRow("t", 1, error="TOPIC_AUTHORIZATION_FAILED", time_offsets={})


def test_the_cut_stage_has_a_column_for_each_field_but_the_after_cut_ones() -> None:
    names = [name for name, _ in schemas.CUT_COLUMNS]
    assert "bytesToDeleteEstimate" not in names
    assert names == [n for n, _, _ in schemas.fields(PlanRow) if n != "bytesToDeleteEstimate"]
    assert schemas.GROUP_IMPACT == (
        "struct<group:string,committedOffset:long,unconsumedToDelete:long>"
    )


def test_the_tombstone_scans_columns_are_the_tombstone_rows_fields(spark: Any) -> None:
    scanned = spark.createDataFrame(
        [
            ("c", 0, 100, 3, NOW - 5000, NOW - 1000, [(4, NOW - 5000)]),
            ("c", 1, 7, 0, None, None, []),
        ],
        schemas.TOMBSTONES,
    )
    retention = spark.createDataFrame([("c", 3000)], "topic string, deleteRetentionMs long")
    aged = transforms.tombstone_ages(scanned, retention, NOW)
    _same_columns(aged.schema, spark.createDataFrame([], schemas.TOMBSTONE_ROW).schema)
    rows = [
        TombstoneRow.from_json(r.asDict(recursive=True))
        for r in aged.orderBy("partition").collect()
    ]
    assert rows == [
        TombstoneRow("c", 0, 100, 3, 5000, -2000, (TombstoneSample(4, NOW - 5000),)),
        TombstoneRow("c", 1, 7, 0),
    ]


def test_a_forged_row_is_refused_naming_what_is_wrong() -> None:
    """A row from a ConfigMap a tenant can write: a missing required field, a loose map
    key, or two keys naming one lookup time are each refused, not read as something."""
    good = PlanRow("t", 0, 0, 10, 5, time_offsets={100: 5}).to_json()
    with pytest.raises(ValueError, match="missing fields \\['partition'\\]"):
        PlanRow.from_json({k: v for k, v in good.items() if k != "partition"})
    for key in (" 100", "+100", "1_00", "\u0661\u0660\u0660"):
        with pytest.raises(ValueError, match="integer key"):
            PlanRow.from_json({**good, "timeOffsets": {key: 5}})
    with pytest.raises(ValueError, match="same value"):
        PlanRow.from_json({**good, "timeOffsets": {"100": 5, "0100": 6}})
    assert PlanRow.from_json({**good, "timeOffsets": {"-1": None}}).time_offsets == {-1: None}
