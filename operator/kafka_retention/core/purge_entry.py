"""One partition of a RecordPurge, from plan to outcome, and the JSON it is stored as.

The entry is frozen: each stage returns a new one (`planned`, `lowered`, `purged`,
`failed`, ...), so what the plan said stays what was stored until a stage says otherwise.
Its status form (camelCase keys, absent fields left out) is what the plan ConfigMaps,
`status.results` and the results ConfigMaps hold; a plan stored by an earlier version
reads back through `from_status` unchanged, which the compatibility test pins.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge import PartitionPlan
from kafka_retention.core.purge_states import State

# Attribute -> status key, in the order the fields are declared.
_KEYS = {
    "topic": "topic",
    "partition": "partition",
    "state": "state",
    "requested_offset": "requestedOffset",
    "log_start_before": "logStartBefore",
    "high_watermark": "highWatermark",
    "records_to_delete": "recordsToDelete",
    "reason": "reason",
    "note": "note",
    "error": "error",
    "low_watermark": "lowWatermark",
    "records_deleted": "recordsDeleted",
    "bytes_to_delete_estimate": "bytesToDeleteEstimate",
}
_INTS = {
    "partition",
    "requested_offset",
    "log_start_before",
    "high_watermark",
    "records_to_delete",
    "low_watermark",
    "records_deleted",
    "bytes_to_delete_estimate",
}
# from_status's look-ups, made once: it reads every partition of a stored plan and of its
# results (340,000 entries in the unit tests' 100,000-partition purges), where walking
# every field of _KEYS for each took half of reading a plan back.
_KNOWN_KEYS = frozenset(_KEYS.values())
_OFFSET_KEYS = ("requestedOffset", "logStartBefore", "highWatermark", "lowWatermark")
_FIELD_OF_KEY: dict[str, tuple[str, Any]] = {
    key: (name, State if name == "state" else int if name in _INTS else str)
    for name, key in _KEYS.items()
}


@dataclass(frozen=True)
class PurgeEntry:
    """A partition's cut and what became of it. `partition` is -1 for a topic that could
    not be planned at all (unknown, compact-only): that entry carries the error."""

    topic: str
    partition: int
    state: State
    requested_offset: int | None = None
    log_start_before: int | None = None
    high_watermark: int | None = None
    records_to_delete: int | None = None
    reason: str | None = None
    note: str | None = None
    error: str | None = None
    low_watermark: int | None = None
    records_deleted: int | None = None
    bytes_to_delete_estimate: int | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def pending(self) -> bool:
        """Still to be cut: planned, or left to retry by an earlier run."""
        return self.state in (State.PLANNED, State.RETRYING)

    @property
    def target(self) -> int:
        """Where the log start should end up; only a planned entry has one."""
        if self.requested_offset is None or self.log_start_before is None:
            raise ValueError(f"{self.topic}-{self.partition} has no planned cut")
        return self.requested_offset

    def as_plan(self) -> PartitionPlan:
        """The planned cut, for the re-check right before deleting."""
        target = self.target  # raises for an entry without a cut
        start, end = self.log_start_before or 0, self.high_watermark or 0
        return PartitionPlan(self.tp, start, end, target, self.reason or "")

    def lowered(self, target: int, notes: Sequence[str]) -> PurgeEntry:
        """The cut lowered by the re-check, saying from where and why."""
        said = "; ".join(
            filter(None, [self.note, f"lowered from {self.target} at purge time", *notes])
        )
        return replace(self, requested_offset=target, note=said)

    def purged(self, low_watermark: int) -> PurgeEntry:
        """Done: the log start is at `low_watermark`. Counted up to the cut only, so records a
        retention pass removed meanwhile are not claimed."""
        start = self.log_start_before or 0
        deleted = max(0, min(low_watermark, self.target) - start)
        return replace(
            self,
            state=State.PURGED,
            error=None,
            low_watermark=low_watermark,
            records_deleted=deleted,
        )

    def failed(self, message: str, *, retriable: bool = False) -> PurgeEntry:
        return replace(self, state=State.RETRYING if retriable else State.FAILED, error=message)

    def dry_run(self, average_bytes: float | None) -> PurgeEntry:
        estimate = None
        if average_bytes is not None:
            estimate = int(average_bytes * (self.records_to_delete or 0))
        return replace(self, state=State.DRY_RUN, bytes_to_delete_estimate=estimate)

    def to_status(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, key in _KEYS.items():
            value = getattr(self, name)
            if value is not None:
                out[key] = str(value) if name == "state" else value
        return out

    @classmethod
    def from_status(cls, item: Mapping[str, Any]) -> PurgeEntry:
        """An entry as status or a stored plan holds it. Keys this version does not know
        are refused: dropping one could drop a fact the cut depends on."""
        if not _KNOWN_KEYS.issuperset(item):
            unknown = set(item) - _KNOWN_KEYS
            raise ValueError(f"unknown keys in a purge entry: {sorted(unknown)}")
        # The planner never writes a negative offset into a cut; a stored plan is in a
        # ConfigMap a tenant may write, and -1 would read as "the high watermark" at the
        # broker, past every group.
        negative = sorted(
            key
            for key in _OFFSET_KEYS
            if key in item and not (isinstance(item[key], int) and item[key] >= 0)
        )
        if negative:
            raise ValueError(f"a purge entry's {', '.join(negative)} must be offsets (0 or more)")
        values: dict[str, Any] = {}
        for key, value in item.items():
            if value is not None:
                name, convert = _FIELD_OF_KEY[key]
                values[name] = convert(value)
        return cls(**values)


def planned(plan: PartitionPlan) -> PurgeEntry:
    """The entry a plan makes: a cut, or the error that kept the partition from one."""
    note = "; ".join(plan.notes) if plan.notes else None
    if plan.error:
        return PurgeEntry(
            plan.tp.topic, plan.tp.partition, State.FAILED, note=note, error=plan.error
        )
    return PurgeEntry(
        plan.tp.topic,
        plan.tp.partition,
        State.PLANNED,
        reason=plan.reason,
        note=note,
        requested_offset=plan.target,
        log_start_before=plan.log_start,
        high_watermark=plan.high_watermark,
        records_to_delete=plan.records_to_delete,
    )


# Each line is written as json.dumps(entry.to_status(), sort_keys=True) writes it, byte
# for byte (plans stored by earlier releases are pinned by a test), without the dict
# and the sort in between: a purge writes a line per partition twice (the plan, the
# results), and that took 15% of a 20,000-partition purge's samples (half as much now).
_SORTED = sorted(_KEYS.items(), key=lambda item: item[1])
_VALUES = operator.attrgetter(*(name for name, _ in _SORTED))
_PREFIXES = tuple((f'"{key}": ', name in _INTS) for name, key in _SORTED)
_quoted = json.encoder.encode_basestring_ascii  # what json.dumps uses, ensure_ascii on


def to_lines(entries: Sequence[PurgeEntry]) -> str:
    """Entries as JSON lines, the form the plan and results ConfigMaps hold."""
    lines = []
    for values in map(_VALUES, entries):
        fields = [
            prefix + (str(value) if number else _quoted(value))
            for (prefix, number), value in zip(_PREFIXES, values, strict=True)
            if value is not None
        ]
        lines.append("{" + ", ".join(fields) + "}\n")
    return "".join(lines)


def from_lines(payload: str) -> list[PurgeEntry]:
    return [
        PurgeEntry.from_status(json.loads(line)) for line in payload.splitlines() if line.strip()
    ]
