"""When Kafka will have erased a key, as far as a topic's config bounds it, and whether a
RecordErasure's deadline is at risk.

Compacted topics: the cleaner drops the values a tombstone shadows once the tombstone's
segment has rolled and been cleaned, then the tombstone itself at a cleaning after its
KIP-534 horizon (first cleaning + delete.retention.ms). Only max.compaction.lag.ms obliges
the cleaner to clean; without it a log is cleaned when its dirty ratio passes
min.cleanable.dirty.ratio, which nothing bounds. The active segment is never cleaned and
rolls only when a record is appended, so every bound here holds only while the topic
keeps receiving writes.

Delete (and tiered) topics: retention removes a whole segment once its newest record is
older than retention.ms; the segment of the last match rolls within segment.ms (on an
append), and the broker looks for expired segments every log.retention.check.interval.ms.

Times are epoch milliseconds; None means unbounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from kafka_retention.core.conditions import Condition, Reason, timestamp
from kafka_retention.core.erasure_states import TopicKind

# Broker-wide settings a topic's config does not show; their broker defaults. The local
# stack runs faster ones (log.cleaner.backoff.ms=1000, the check every 3 s), which these
# bounds overestimate, as they should.
CLEANER_BACKOFF_MS = 15_000  # log.cleaner.backoff.ms
RETENTION_CHECK_MS = 300_000  # log.retention.check.interval.ms

# Topic config defaults (Kafka 4.3), for a config map that lacks a key.
_LONG_MAX = 9_223_372_036_854_775_807
_DEFAULTS = {
    "segment.ms": 604_800_000,
    "min.compaction.lag.ms": 0,
    "max.compaction.lag.ms": _LONG_MAX,
    "delete.retention.ms": 86_400_000,
    "retention.ms": 604_800_000,
    "file.delete.delay.ms": 60_000,
}

CONDITION_TYPE = "DeadlineAtRisk"
WRITES_NOTE = "a segment rolls only when a record is appended: holds while the topic is written"
# How many topics a condition message names before it counts the rest.
_NAMED = 3


def _ms(config: Mapping[str, str], name: str) -> int:
    raw = config.get(name)
    if raw is None or raw == "":
        return _DEFAULTS[name]
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} is not a number of milliseconds: {raw!r:.40}") from None


@dataclass(frozen=True)
class Cleaning:
    """How Kafka removes records from one topic: what the erasure can wait for."""

    kind: TopicKind
    segment_ms: int
    min_dirty_ratio: float
    min_lag_ms: int
    max_lag_ms: int | None  # None: unset (Long.MAX), nothing obliges the cleaner
    delete_retention_ms: int
    retention_ms: int | None  # None: -1, kept forever
    topic: str = ""
    deletes: bool = False  # cleanup.policy has delete (compact,delete too)
    file_delete_delay_ms: int = _DEFAULTS["file.delete.delay.ms"]

    @classmethod
    def from_config(cls, config: Mapping[str, str], topic: str = "") -> Cleaning:
        """From a topic's described config (values as strings; a missing key takes Kafka's
        default). Tiered storage wins over compaction: Kafka never compacts it."""
        policies = {
            p.strip().lower()
            for p in config.get("cleanup.policy", "delete").strip("[]").split(",")
            if p.strip()
        }
        kind: TopicKind
        if config.get("remote.storage.enable", "false").strip().lower() == "true":
            kind = "tiered"
        elif "compact" in policies:
            kind = "compacted"
        else:
            kind = "delete"
        max_lag = _ms(config, "max.compaction.lag.ms")
        retention = _ms(config, "retention.ms")
        ratio = config.get("min.cleanable.dirty.ratio") or "0.5"
        return cls(
            kind=kind,
            segment_ms=_ms(config, "segment.ms"),
            min_dirty_ratio=float(ratio),
            min_lag_ms=_ms(config, "min.compaction.lag.ms"),
            max_lag_ms=None if max_lag >= _LONG_MAX else max_lag,
            delete_retention_ms=_ms(config, "delete.retention.ms"),
            retention_ms=None if retention < 0 else retention,
            topic=topic,
            deletes="delete" in policies or kind != "compacted",
            file_delete_delay_ms=_ms(config, "file.delete.delay.ms"),
        )

    @property
    def roll_ms(self) -> int:
        """After how long the active segment rolls (on the next append): a compacted
        topic's max.compaction.lag.ms caps segment.ms (Kafka's LogConfig.maxSegmentMs)."""
        if self.kind == "compacted" and self.max_lag_ms is not None:
            return min(self.segment_ms, self.max_lag_ms)
        return self.segment_ms


@dataclass(frozen=True)
class Expected:
    """By when the values and then the key should be gone from a topic (None:
    unbounded), why, and the config that bounds it most (or leaves it unbounded)."""

    values_erased_ms: int | None
    key_erased_ms: int | None
    note: str
    topic: str = ""
    bound_by: str = ""


def _cleaning_after(c: Cleaning, start_ms: int) -> tuple[int, str] | None:
    """The latest a cleaning runs over what was written at `start_ms`, and the config
    that weighs most in it: the segment rolls, the record is old enough to clean
    (min.compaction.lag.ms), the cleaner is obliged to take the log
    (max.compaction.lag.ms), and it wakes up (backoff)."""
    if c.max_lag_ms is None:
        return None
    ready = max(c.roll_ms, c.min_lag_ms)
    if c.min_lag_ms > c.roll_ms:
        ready_by = "min.compaction.lag.ms"
    else:
        ready_by = "segment.ms" if c.segment_ms <= c.max_lag_ms else "max.compaction.lag.ms"
    by = "max.compaction.lag.ms" if c.max_lag_ms >= ready else ready_by
    return start_ms + ready + c.max_lag_ms + CLEANER_BACKOFF_MS, by


def expected_retention(c: Cleaning, last_match_ms: int) -> int | None:
    """When retention has removed a record stamped `last_match_ms` (None: retention.ms is
    -1): its segment rolls within roll_ms, expires retention.ms after, and the broker
    notices within its check interval."""
    if c.retention_ms is None:
        return None
    return last_match_ms + c.roll_ms + c.retention_ms + RETENTION_CHECK_MS


def expected_compaction(c: Cleaning, tombstone_ms: int) -> Expected:
    """When the cleaner has removed the values a tombstone written at `tombstone_ms`
    shadows, and then the tombstone (the key) itself. Each bound adds file.delete.delay.ms,
    after which the replaced segment files leave the disk too."""
    first = _cleaning_after(c, tombstone_ms)
    by_retention = expected_retention(c, tombstone_ms) if c.deletes else None
    if first is None:
        note = (
            f"max.compaction.lag.ms is not set on topic {c.topic}: nothing bounds when the "
            f"cleaner runs (it waits for min.cleanable.dirty.ratio={c.min_dirty_ratio:g})"
        )
        if by_retention is not None:
            return Expected(
                by_retention,
                by_retention,
                f"{note}; retention.ms bounds it",
                c.topic,
                "retention.ms",
            )
        return Expected(None, None, note, c.topic, "max.compaction.lag.ms")
    values_ms, values_by = first
    horizon = values_ms + c.delete_retention_ms
    key_ms, key_by = _cleaning_after(c, horizon) or first
    if c.delete_retention_ms >= key_ms - horizon:
        key_by = "delete.retention.ms"
    values_ms += c.file_delete_delay_ms
    key_ms += c.file_delete_delay_ms
    if by_retention is not None and by_retention < key_ms:
        values_ms, key_ms = min(values_ms, by_retention), by_retention
        values_by = key_by = "retention.ms"
    note = (
        f"values by {_at(values_ms)} (bounded by {values_by}), the key by {_at(key_ms)} "
        f"(bounded by {key_by}); {WRITES_NOTE}"
    )
    return Expected(values_ms, key_ms, note, c.topic, key_by)


def expected_erasure(c: Cleaning, at_ms: int) -> Expected:
    """The bound for any kind of topic: compaction after a tombstone written at `at_ms`,
    or retention of the last match stamped `at_ms` (delete and tiered topics, where a
    tombstone erases nothing)."""
    if c.kind == "compacted":
        return expected_compaction(c, at_ms)
    gone = expected_retention(c, at_ms)
    if gone is None:
        note = f"retention.ms is -1 on topic {c.topic}: retention never removes the records"
    else:
        note = f"retention removes the records by {_at(gone)}; {WRITES_NOTE}"
        if c.kind == "tiered":
            note += " (remote segments go by retention.ms only)"
    return Expected(gone, gone, note, c.topic, "retention.ms")


def deadline_condition(
    expected: Expected | Iterable[Expected], created_ms: int, deadline_ms: int
) -> Condition:
    """DeadlineAtRisk: True (ErasureDeadlineAtRisk) when some topic's key is expected
    gone only after created + deadline, or nothing bounds it; the message names the topic
    and the config responsible. False (ErasureDeadlineMet) otherwise."""
    all_expected = [expected] if isinstance(expected, Expected) else list(expected)
    due = created_ms + deadline_ms
    risks: list[str] = []
    for e in all_expected:
        if e.key_erased_ms is None:
            risks.append(e.note)  # it names the config and the topic
        elif e.key_erased_ms > due:
            risks.append(
                f"topic {e.topic} is expected clear only by {_at(e.key_erased_ms)} "
                f"({e.bound_by} bounds it)"
            )
    if risks:
        more = f"; and {len(risks) - _NAMED} more topics" if len(risks) > _NAMED else ""
        return Condition(
            CONDITION_TYPE,
            "True",
            Reason.ERASURE_DEADLINE_AT_RISK,
            f"the deadline {_at(due)} is at risk: " + "; ".join(risks[:_NAMED]) + more,
        )
    latest = max((e.key_erased_ms or 0 for e in all_expected), default=None)
    when = f"expected clear by {_at(latest)}, " if latest else ""
    return Condition(
        CONDITION_TYPE,
        "False",
        Reason.ERASURE_DEADLINE_MET,
        f"{when}before the deadline {_at(due)} (while the topics keep receiving writes)",
    )


def _at(ms: int) -> str:
    return timestamp(datetime.fromtimestamp(ms / 1000, UTC))
