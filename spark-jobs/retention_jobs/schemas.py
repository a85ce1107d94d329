"""Spark schemas of the pipeline's DataFrames (DDL strings, kept together).

The plan's columns are derived from the plan row (kafka_retention.core.plan_row): a
field added there is a column here, and the collected rows convert back with no edit."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from kafka_retention.core import typed_json
from kafka_retention.core.plan_row import (
    AFTER_CUT,
    SPARK_TYPE,
    GroupImpactRow,
    PlanRow,
    TombstoneRow,
)

SCALARS = {str: "string", int: "long", float: "double", bool: "boolean"}


def fields(cls: type[Any], cut_only: bool = False) -> list[tuple[str, Any, str | None]]:
    """(column name, Python type, Spark type if the field names one) of each field of
    `cls`, in declaration order; with `cut_only`, only those the planning core's cut
    fills (not AFTER_CUT's)."""
    hints = typing.get_type_hints(cls)
    return [
        (typed_json.camel(f.name), hints[f.name], f.metadata.get(SPARK_TYPE))
        for f in dataclasses.fields(cls)
        if not (cut_only and f.metadata.get(AFTER_CUT))
    ]


def spark_type(tp: Any, cut_only: bool = False) -> str:
    """The Spark SQL type of a plan row field's Python type (every Spark type is nullable:
    `X | None` is X's); nested rows keep only their cut's fields with `cut_only`."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return f"struct<{struct_fields(tp, cut_only)}>"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    inner = [a for a in args if a is not type(None)]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"array<{spark_type(args[0], cut_only)}>"
    if origin is dict:
        return f"map<{spark_type(args[0])},{spark_type(args[1], cut_only)}>"
    if args and len(inner) == 1:  # X | None
        return spark_type(inner[0], cut_only)
    if tp in SCALARS:
        return SCALARS[tp]
    raise TypeError(f"no Spark type for {tp}")


def columns(cls: type[Any], cut_only: bool = False) -> list[tuple[str, str]]:
    """(column name, Spark type) of each field of `cls` (see fields)."""
    return [(name, named or spark_type(tp, cut_only)) for name, tp, named in fields(cls, cut_only)]


def struct_fields(cls: type[Any], cut_only: bool = False) -> str:
    return ",".join(f"{name}:{kind}" for name, kind in columns(cls, cut_only))


def ddl(cols: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in cols)


# One row per partition, as extract.read_facts yields it: offsets, the offset at each
# lookup time, and each asked group's committed offset (null: none committed).
FACTS = (
    "topic string, partition int, logStartOffset long, highWatermark long, "
    "timeOffsets map<long,long>, committed map<string,long>, error string"
)
SIZES = "topic string, partition int, avgRecordBytes double"
LAGS = "topic string, partition int, group string, timeLagMs long"
UNCONSUMED = (
    "topic string, partition int, group string, unconsumedRecords long, "
    "unconsumedBytes long, sample array<struct<offset:long,key:string>>"
)
TOMBSTONES = (
    "topic string, partition int, recordsRead long, tombstones long, "
    "oldestTombstoneMs long, newestTombstoneMs long, "
    "oldestTombstones array<struct<offset:long,timestampMs:long>>"
)
# A group's impact as the planning core's cut gives it, before the record scans.
GROUP_IMPACT = f"struct<{struct_fields(GroupImpactRow, cut_only=True)}>"
# The plan as the cut stage writes it (transforms.PLANNED, behind each row's policy)...
CUT_COLUMNS = columns(PlanRow, cut_only=True)
# ...and as the job collects it, once the byte estimate and the scans are folded in.
PLAN_COLUMNS = columns(PlanRow)
PLAN = ddl(PLAN_COLUMNS)
# A compacted partition's tombstone scan with its ages (transforms.tombstone_ages).
TOMBSTONE_ROW = ddl(columns(TombstoneRow))
