"""One partition's row of a retention plan, whichever planner wrote it.

The one definition of a plan row: the in-process planner builds these, the Spark job's
DataFrame columns are derived from them (retention_jobs.schemas), its collected rows
become these at the boundary, and the JSON lines a Spark pod writes are their camelCase
form (core.plan_lines), the keys plans have always had. Everything past the planners
reads attributes. A compacted partition's tombstone scan is a TombstoneRow, the same way.

A field marked AFTER_CUT is filled by a step after the planning core's cut (the byte
estimate from record sizes, the record scans of each group): the Spark job's cut stage
has no column for it yet, and the in-process planner leaves the scans' fields unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_retention.core import typed_json

# Field metadata: the field is filled after the cut (see the module docstring).
AFTER_CUT = "after_cut"
# Field metadata: the Spark SQL type when not the one its Python type maps to.
SPARK_TYPE = "spark_type"

_AFTER_CUT: Mapping[str, Any] = {AFTER_CUT: True}


@dataclass(frozen=True, slots=True)
class KeySample:
    """A record a cut removes before a group read it: its offset and key (None: no key,
    or one that is not UTF-8)."""

    offset: int
    key: str | None


@dataclass(frozen=True, slots=True)
class GroupImpactRow:
    """A group's place on the partition, and what the cut removes that it has not read."""

    group: str
    committed_offset: int | None  # None: nothing committed
    unconsumed_to_delete: int
    # From the record scans (Spark plans; the in-process planner samples notify groups).
    time_lag_ms: int | None = field(default=None, metadata=_AFTER_CUT)
    unconsumed_bytes_to_delete: int | None = field(default=None, metadata=_AFTER_CUT)
    unconsumed_sample: tuple[KeySample, ...] | None = field(default=None, metadata=_AFTER_CUT)


@dataclass(frozen=True, slots=True)
class PlanRow:
    """A partition's planned cut; with `error` set, why it could not be planned (then
    the offsets and the cut are None)."""

    topic: str
    partition: int = field(metadata={SPARK_TYPE: "int"})
    log_start_offset: int | None = None
    high_watermark: int | None = None
    target_offset: int | None = None
    rule: str | None = None  # which rule decided the cut (core.policy's rule names)
    reason: str | None = None
    reason_guard: str | None = None  # the reason's guard tag (None: not a guard)
    notes: tuple[str, ...] = ()
    guards: tuple[str, ...] = ()  # a guard tag (core.rules.GROUP, ...) per note
    records_to_delete: int | None = None
    groups: tuple[GroupImpactRow, ...] = ()
    error: str | None = None
    # The offset found for each lookup time the rules asked (None: none at or after it).
    time_offsets: dict[int, int | None] = field(default_factory=dict)
    # recordsToDelete times the average record size at the log start (None: unknown).
    bytes_to_delete_estimate: int | None = field(default=None, metadata=_AFTER_CUT)

    @property
    def planned(self) -> bool:
        """A cut was computed (no error), whatever it moves."""
        return not self.error

    def to_json(self) -> dict[str, Any]:
        """The row as plan JSON lines hold it (camelCase keys, every field)."""
        out: dict[str, Any] = typed_json.encode(self, typed_json.camel)
        return out

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> PlanRow:
        """A row from plan JSON lines, or a collected Spark row's asDict(recursive=True).
        Refuses unknown keys and values of the wrong type (see core.typed_json)."""
        row = typed_json.decode(cls, item, typed_json.camel)
        assert isinstance(row, PlanRow)
        return row


@dataclass(frozen=True, slots=True)
class TombstoneSample:
    """One of a partition's oldest tombstones: its offset and record time."""

    offset: int
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class TombstoneRow:
    """A compacted partition's tombstone scan (Spark plans with Scans.tombstones only):
    records read, tombstones found, and how old the oldest is against the topic's
    delete.retention.ms (remaining < 0: the cleaner may already remove it)."""

    topic: str
    partition: int = field(metadata={SPARK_TYPE: "int"})
    records_read: int | None = None
    tombstones: int | None = None
    oldest_tombstone_age_ms: int | None = None  # None: no tombstone found
    oldest_tombstone_remaining_ms: int | None = None
    oldest_tombstones: tuple[TombstoneSample, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The row as plan JSON lines hold it (camelCase keys, every field)."""
        out: dict[str, Any] = typed_json.encode(self, typed_json.camel)
        return out

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> TombstoneRow:
        """A row from plan JSON lines, or a collected Spark row's asDict(recursive=True)."""
        row = typed_json.decode(cls, item, typed_json.camel)
        assert isinstance(row, TombstoneRow)
        return row
