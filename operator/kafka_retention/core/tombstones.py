"""Tombstone safety on compacted topics (the consumer side of KIP-534).

The log cleaner drops a tombstone (a null value) once it is older than the topic's
delete.retention.ms. A consumer that lags by more than that can miss the delete and keep
the stale key forever. So for each listed group, its time lag on each partition (how old
its next unread record is) is compared with delete.retention.ms: past a user-set share of
it, the group is at risk. The optional remedy raises delete.retention.ms so the slowest
group sits at half that share, never above a cap and never lowering any value. Half, not
the share itself: a group whose lag keeps growing would otherwise cross the share again
by the next run and cause a raise every run; with the headroom it takes one raise each
time its lag doubles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_row import TombstoneRow

MINUTE_MS = 60_000


@dataclass(frozen=True)
class TombstoneRisk:
    group: str
    tp: TopicPartition
    lag_ms: int  # age of the group's next unread record
    delete_retention_ms: int

    @property
    def margin_ms(self) -> int:
        """Time before the cleaner may drop tombstones the group has not read (negative:
        it may already have)."""
        return self.delete_retention_ms - self.lag_ms


def at_risk(
    lags: Mapping[tuple[str, TopicPartition], int],
    delete_retention: Mapping[str, int],
    warn_percent: int,
) -> list[TombstoneRisk]:
    """Groups whose lag passed warn_percent of their topic's delete.retention.ms, the
    smallest margin first."""
    out = [
        TombstoneRisk(group, tp, lag, delete_retention[tp.topic])
        for (group, tp), lag in lags.items()
        if lag * 100 >= warn_percent * delete_retention[tp.topic]
    ]
    return sorted(out, key=lambda r: (r.margin_ms, r.group, r.tp))


def raised_delete_retention(
    current_ms: int, slowest_lag_ms: int, warn_percent: int, cap_ms: int
) -> int | None:
    """The delete.retention.ms that puts the slowest lag at half of warn_percent of it,
    rounded up to a minute and capped; None when that would not raise the value."""
    wanted = -(-slowest_lag_ms * 200 // warn_percent)
    wanted = -(-wanted // MINUTE_MS) * MINUTE_MS
    target = min(wanted, cap_ms)
    return target if target > current_ms else None


@dataclass(frozen=True)
class TopicTombstones:
    """One compacted topic's tombstones, as the record scan found them."""

    topic: str
    partitions: int
    records_scanned: int
    tombstones: int
    oldest_age_ms: int | None
    delete_retention_ms: int


def fold_inventory(
    scanned: Iterable[TombstoneRow], delete_retention: Mapping[str, int]
) -> list[TopicTombstones]:
    """Per topic from the scan's per-partition rows: the topics whose oldest tombstone is
    nearest its delete.retention.ms first, topics without tombstones last."""
    per: dict[str, list[TombstoneRow]] = {}
    for row in scanned:
        if row.topic in delete_retention:
            per.setdefault(row.topic, []).append(row)
    out = []
    for topic, rows in per.items():
        ages = [
            r.oldest_tombstone_age_ms
            for r in rows
            if r.tombstones and r.oldest_tombstone_age_ms is not None
        ]
        out.append(
            TopicTombstones(
                topic,
                len(rows),
                sum(r.records_read or 0 for r in rows),
                sum(r.tombstones or 0 for r in rows),
                max(ages) if ages else None,
                delete_retention[topic],
            )
        )

    def nearest(t: TopicTombstones) -> tuple[int, int | float, str]:
        if t.oldest_age_ms is None:
            return (1, 0, t.topic)
        return (0, t.delete_retention_ms - t.oldest_age_ms, t.topic)

    return sorted(out, key=nearest)
