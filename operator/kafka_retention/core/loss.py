"""Unread-record loss (KIP-490, from outside Kafka): for each watched group and partition,
records in [committed offset, log start offset) are gone before the group read them.

Each loss is reported once. What was reported lives in the policy's status as a cursor
per (group, topic, partition): the offset up to which loss was already reported. A run
reports only [max(committed, cursor), log start). A cursor is dropped once the group has
committed past it, since no later loss can overlap what it covers.

The cause is named where it can be known: the policy's own cut in this run (the rule that
made it, by its name in core.retention_rules), else a RecordPurge that left the log start
inside the lost range (core.purge_ledger), else the broker's retention when the topic's
settings make that plausible, else "external" (a manual DeleteRecords, another tool).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.retention_rules.registry import RetentionRules

# Losses (and risks) a policy's status lists, the newest first.
MAX_LOSSES_LISTED = 100

BROKER_RETENTION = "brokerRetention"
EXTERNAL = "external"

# (group, topic, partition) -> offset up to which loss was already reported.
Cursor = dict[tuple[str, str, int], int]


@dataclass(frozen=True)
class Observed:
    """One partition as a run saw it: its log start now, and each watched group's
    committed offset (None: the group has none here and is not counted)."""

    tp: TopicPartition
    log_start: int
    committed: Mapping[str, int | None]


@dataclass(frozen=True)
class OwnCut:
    """This run's own DeleteRecords on a partition: log start before and after."""

    before: int
    after: int
    rule: str


@dataclass(frozen=True)
class Loss:
    """Records [from_offset, to_offset) of `tp` that `group` had not read when they went,
    and why they went (`cause`: this policy, a RecordPurge, broker retention, external)."""

    group: str
    tp: TopicPartition
    from_offset: int
    to_offset: int
    cause: str
    # The RecordPurge (namespace/name) when the cause is one.
    by: str | None = None
    # The first (offset, key) of the range, when they were read before the cut.
    sample: tuple[tuple[int, str | None], ...] = ()

    @property
    def records(self) -> int:
        return self.to_offset - self.from_offset


def detect(
    observed: Iterable[Observed],
    groups: Iterable[str],
    cursor: Mapping[tuple[str, str, int], int],
    own_cuts: Mapping[TopicPartition, OwnCut],
    other_cause: Callable[[TopicPartition], str],
) -> tuple[list[Loss], Cursor]:
    """New losses, and the cursor to keep. `other_cause` names what removed records this
    run's own cut did not (called only when there are such records)."""
    losses: list[Loss] = []
    kept: Cursor = {}
    watched = sorted(set(groups))
    for part in observed:
        for group in watched:
            committed = part.committed.get(group)
            if committed is None:
                continue
            key = (group, part.tp.topic, part.tp.partition)
            reported = cursor.get(key, committed)
            start = max(committed, reported)
            if part.log_start > start:
                losses += _split(group, part.tp, start, part.log_start, own_cuts, other_cause)
                reported = part.log_start
            if reported > committed:
                kept[key] = reported
    return losses, kept


def _split(
    group: str,
    tp: TopicPartition,
    start: int,
    end: int,
    own_cuts: Mapping[TopicPartition, OwnCut],
    other_cause: Callable[[TopicPartition], str],
) -> list[Loss]:
    """[start, end) by cause: what this run's own cut removed is the rule's; the rest,
    removed before the cut, someone else's."""
    cut = own_cuts.get(tp)
    if cut is None or cut.after <= start:
        return [Loss(group, tp, start, end, other_cause(tp))]
    out = []
    ours_from = max(start, cut.before)
    if ours_from > start:
        out.append(Loss(group, tp, start, ours_from, other_cause(tp)))
    out.append(Loss(group, tp, ours_from, min(end, cut.after), cut.rule))
    if end > cut.after:
        # The log start moved on after our cut within the same run: not ours.
        out.append(Loss(group, tp, cut.after, end, other_cause(tp)))
    return out


def broker_retention_plausible(
    config: Mapping[str, str], first_record_ms: int | None, now_ms: int
) -> bool:
    """Whether the broker's own retention could have removed a partition's oldest records.

    Size retention (retention.bytes set) always could. Time retention deletes whole
    segments whose newest record is older than now - retention.ms; the first record left
    follows the last one deleted, so with CreateTime roughly in offset order it is also
    about that old. A first record younger than the retention boundary means something
    other than time retention moved the log start (e.g. a manual DeleteRecords)."""
    if "delete" not in config.get("cleanup.policy", "delete"):
        return False
    if int(config.get("retention.bytes", "-1")) >= 0:
        return True
    retention_ms = int(config.get("retention.ms", "-1"))
    if retention_ms < 0:
        return False
    # An empty partition (no record left): everything aged out, or all was deleted.
    return first_record_ms is None or first_record_ms <= now_ms - retention_ms


def encode_cursor(cursor: Mapping[tuple[str, str, int], int]) -> list[dict[str, str]]:
    """The cursor as status holds it: one entry per group and topic, partitions as
    "p:offset,p:offset" (compact: a dead group on thousands of partitions stays small)."""
    by_pair: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for (group, topic, partition), offset in cursor.items():
        by_pair.setdefault((group, topic), []).append((partition, offset))
    return [
        {
            "group": group,
            "topic": topic,
            "reportedTo": ",".join(f"{p}:{o}" for p, o in sorted(parts)),
        }
        for (group, topic), parts in sorted(by_pair.items())
    ]


def decode_cursor(entries: Iterable[Mapping[str, str]] | None) -> Cursor:
    out: Cursor = {}
    for entry in entries or ():
        for item in str(entry.get("reportedTo") or "").split(","):
            if not item:
                continue
            partition, offset = item.split(":")
            out[(str(entry["group"]), str(entry["topic"]), int(partition))] = int(offset)
    return out


@dataclass(frozen=True)
class Risk:
    """Unread records of a group that retention will reach within `within_ms` (an upper
    bound, to the step the check used), and which retention: the broker's or maxRetention."""

    group: str
    tp: TopicPartition
    committed: int
    within_ms: int
    by: str


def windows(at_risk_within_ms: int, steps: int = 4) -> tuple[int, ...]:
    """The look-ahead times checked: 0 (already past the boundary) up to the full window,
    in `steps` equal steps; the time left is known to within one step."""
    return tuple(at_risk_within_ms * k // steps for k in range(steps + 1))


def time_left(committed: int, offsets_at: Mapping[int, int | None]) -> int | None:
    """The smallest window w whose boundary passed the group's next unread record, or None.

    offsets_at[w] is ListOffsets for time (now - retention + w): the first offset whose
    timestamp is at or after it (None: no record is that recent, all are older). With
    CreateTime in offset order, committed < offsets_at[w] means the next unread record is
    older than that boundary: retention reaches it within w."""
    for w in sorted(offsets_at):
        first_young = offsets_at[w]
        if first_young is None or committed < first_young:
            return w
    return None


def retention_of(config: Mapping[str, str], rules: RetentionRules) -> tuple[int, str] | None:
    """The time retention that reaches a topic's records first: the broker's retention.ms
    (on a topic that deletes) or a rule of the policy's that deletes by age, read or not
    (maxRetention), by its name; None when neither applies."""
    found: list[tuple[int, str]] = []
    if "delete" in config.get("cleanup.policy", "delete"):
        broker = int(config.get("retention.ms", "-1"))
        if broker >= 0:
            found.append((broker, BROKER_RETENTION))
    found += rules.retentions()
    return min(found) if found else None
