"""Pure DataFrame -> DataFrame steps of the plan job. The rules themselves come from the
planning core (kafka_retention.core.policy), applied row by row, so the operator and the
job can never disagree on a cut."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy import RetentionRules, plan_partition
from retention_jobs import schemas

KEY = ["topic", "partition"]


# What plan_policies reads from each facts row, and what it returns per row: the input
# columns pass through as Arrow arrays untouched, the cut's columns are computed.
_FACTS_IN = [
    "policy",
    "topic",
    "partition",
    "logStartOffset",
    "highWatermark",
    "timeOffsets",
    "committed",
    "error",
]
# The planning core's columns (core.plan_row.PlanRow's, but the AFTER_CUT ones) behind
# each row's policy. timeOffsets is kept so a plan says which offsets its cut was read at.
PLANNED = f"policy string, {schemas.ddl(schemas.CUT_COLUMNS)}"
_PLANNED_NAMES = ["policy", *(name for name, _ in schemas.CUT_COLUMNS)]


def _arrow_type(tp: Any, named: str | None = None) -> Any:
    """The Arrow type of a plan row field (as schemas.spark_type, the cut's fields only)."""
    import dataclasses
    import typing

    import pyarrow as pa

    if named is not None:
        return {"int": pa.int32()}[named]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return pa.struct(
            [(name, _arrow_type(t, n)) for name, t, n in schemas.fields(tp, cut_only=True)]
        )
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    inner = [a for a in args if a is not type(None)]
    if origin is tuple:
        return pa.list_(_arrow_type(args[0]))
    if origin is dict:
        return pa.map_(_arrow_type(args[0]), _arrow_type(args[1]))
    if args and len(inner) == 1:
        return _arrow_type(inner[0])
    return {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}[tp]


def _arrow_types() -> dict[str, Any]:
    """Column name -> Arrow type of each column the cut computes."""
    return {
        name: _arrow_type(tp, named)
        for name, tp, named in schemas.fields(PlanRow, cut_only=True)
        if name in _COMPUTED
    }


# The columns _cuts computes; the others pass through from the facts.
_COMPUTED = (
    "targetOffset",
    "rule",
    "reason",
    "reasonGuard",
    "notes",
    "guards",
    "recordsToDelete",
    "groups",
)


def _dicts(column: Any) -> list[dict[Any, Any]]:
    """A map column as one dict a row (a null map as an empty one), built from the flat
    keys and values: pyarrow's to_pylist makes a list of tuples a row first, which cost
    twice as much at ten groups a row."""
    if column.null_count:
        column = column.fill_null([])
    bounds = column.offsets.to_pylist()
    keys, values = column.keys.to_pylist(), column.items.to_pylist()
    return [
        dict(zip(keys[lo:hi], values[lo:hi], strict=True)) for lo, hi in itertools.pairwise(bounds)
    ]


def _cuts(
    batches: Iterator[Any],
    rules_by_policy: Mapping[str, RetentionRules],
    now_ms: int,
) -> Iterator[Any]:
    """The planning core over Arrow record batches (mapInArrow): a column at a time into
    Python, the core per row, the cut's columns back as Arrow arrays. Rows cross the
    Python boundary in batches rather than one pickled row each, which is what a
    row-at-a-time UDF spent most of its time on."""
    import pyarrow as pa

    types = _arrow_types()
    for batch in batches:
        policies, topics, partitions, starts, hws = (
            batch.column(name).to_pylist() for name in _FACTS_IN[:5]
        )
        times, committed = (_dicts(batch.column(name)) for name in _FACTS_IN[5:7])
        target: list[int | None] = []
        rule: list[str | None] = []
        reason: list[str | None] = []
        reason_guard: list[str | None] = []
        notes: list[list[str] | None] = []
        guards: list[list[str] | None] = []
        records: list[int | None] = []
        groups: list[list[tuple[str, int | None, int]] | None] = []
        for i, policy in enumerate(policies):
            log_start, hw = starts[i], hws[i]
            if log_start is None or hw is None:
                for column in (target, rule, reason, reason_guard, notes, guards, records, groups):
                    column.append(None)
                continue
            cut = plan_partition(
                PartitionFacts(
                    TopicPartition(topics[i], partitions[i]),
                    log_start,
                    hw,
                    committed[i],
                    times[i],
                ),
                rules_by_policy[policy],
                now_ms,
            )
            target.append(cut.target)
            rule.append(cut.rule)
            reason.append(cut.reason)
            reason_guard.append(cut.reason_guard)
            notes.append(list(cut.notes))
            guards.append(list(cut.guards))
            records.append(cut.records_to_delete)
            groups.append(
                [(g.group, g.committed_offset, g.unconsumed_to_delete) for g in cut.groups]
            )
        computed = dict(
            zip(
                _COMPUTED,
                (target, rule, reason, reason_guard, notes, guards, records, groups),
                strict=True,
            )
        )
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(computed[name], types[name])
                if name in computed
                else batch.column(name)  # passed through from the facts
                for name in _PLANNED_NAMES
            ],
            names=_PLANNED_NAMES,
        )


def plan(facts_df: DataFrame, rules: RetentionRules, now_ms: int) -> DataFrame:
    """The cut of every partition for one policy, by the planning core."""
    one = facts_df.withColumn("policy", F.lit(""))
    return plan_policies(one, {"": rules}, now_ms).drop("policy")


def plan_policies(
    facts_df: DataFrame, rules_by_policy: Mapping[str, RetentionRules], now_ms: int
) -> DataFrame:
    """The cut of every (policy, partition) row, each by its own policy's rules: many
    policies planned in one job over the union of their partitions."""
    return facts_df.select(*_FACTS_IN).mapInArrow(
        partial(_cuts, rules_by_policy=dict(rules_by_policy), now_ms=now_ms), PLANNED
    )


def with_bytes_estimate(plan_df: DataFrame, sizes: DataFrame) -> DataFrame:
    """recordsToDelete times the average stored size of records at the log start."""
    return (
        plan_df.join(sizes, KEY, "left")
        .withColumn(
            "bytesToDeleteEstimate",
            F.when(F.col("recordsToDelete") == 0, F.lit(0).cast("long")).otherwise(
                F.round(F.col("recordsToDelete") * F.col("avgRecordBytes")).cast("long")
            ),
        )
        .drop("avgRecordBytes")
    )


def _row_key(plan_df: DataFrame) -> list[str]:
    """A plan row is one partition, or one (policy, partition) when policies share a job."""
    return ["policy", *KEY] if "policy" in plan_df.columns else KEY


def group_rows(plan_df: DataFrame) -> DataFrame:
    """One row per (partition, watched group), for the group scans."""
    key = _row_key(plan_df)
    return plan_df.select(
        *key, "logStartOffset", "highWatermark", "targetOffset", F.explode("groups").alias("g")
    ).select(
        *key,
        "logStartOffset",
        "highWatermark",
        "targetOffset",
        F.col("g.group").alias("group"),
        F.col("g.committedOffset").alias("committedOffset"),
        F.col("g.unconsumedToDelete").alias("unconsumedToDelete"),
    )


def with_group_scans(plan_df: DataFrame, lags: DataFrame, lost: DataFrame) -> DataFrame:
    """Fold the scans back into each partition's groups array (sorted by group). Time lags
    belong to a partition and group; what a cut loses also depends on the policy's cut."""
    key = _row_key(plan_df)
    per_group = (
        group_rows(plan_df).join(lags, [*KEY, "group"], "left").join(lost, [*key, "group"], "left")
    )
    groups = per_group.groupBy(*key).agg(
        F.sort_array(
            F.collect_list(
                F.struct(
                    "group",
                    "committedOffset",
                    "unconsumedToDelete",
                    "timeLagMs",
                    F.col("unconsumedBytes").alias("unconsumedBytesToDelete"),
                    F.col("sample").alias("unconsumedSample"),
                )
            )
        ).alias("groups")
    )
    return (
        plan_df.drop("groups")
        .join(groups, key, "left")
        .withColumn("groups", F.coalesce("groups", F.array()))
    )


def tombstone_ages(scanned: DataFrame, delete_retention: DataFrame, now_ms: int) -> DataFrame:
    """Ages of tombstones against the topic's delete.retention.ms: how long the oldest has
    left before the cleaner may remove it (negative: already eligible)."""
    return scanned.join(delete_retention, "topic", "left").select(
        *KEY,
        "recordsRead",
        "tombstones",
        (F.lit(now_ms) - F.col("oldestTombstoneMs")).alias("oldestTombstoneAgeMs"),
        (F.col("deleteRetentionMs") - (F.lit(now_ms) - F.col("oldestTombstoneMs"))).alias(
            "oldestTombstoneRemainingMs"
        ),
        "oldestTombstones",
    )
