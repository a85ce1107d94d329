"""onDeleteTopics: cut, on topics that cannot be compacted (delete and tiered): where each
partition is cut, who holds or is passed by the cut, and the cut itself.

A partition with a listed key is cut at its last match + 1 (the last record with any
listed key, tombstones too): DeleteRecords removes everything below, the other keys'
records there too (the collateral, which a dry run shows first and acceptCollateral
accepts). The guards are a RecordPurge's (core.rules.protect_groups over facts read now,
services.fresh): a protected group whose committed offset is below the cut, or that has
none there, holds the whole partition (nothing is cut there: a cut below the last match
would remove other keys' records and leave the key). The cut goes through
services.cutting.delete_and_verify, whose DeleteRecords answer (the low watermark) is
the verification of the delete; a scan of what is left verifies the erasure.

Whoever has not read past a match is read too (any listed consumer group with a commit on
the partition at or below its last match): status names them per topic, in report mode
and dry runs as well, because a cut passes them and a copy they already made is the
next thing to erase. No key is read here: offsets, counts, group ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafka_retention.core import rules
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.services.cutting import Applied, delete_and_verify
from kafka_retention.services.fresh import Fresh, read_facts, read_positions
from kafka_retention.services.ports import ErasureKafka

# status.topics[].unreadBy names this many groups; unreadByCount counts them all.
MAX_NAMED_GROUPS = 20
# Listed groups whose positions one run reads (a consumer handle each, 8 at a time): a
# cluster with more gets the first ones by id, and status says how many were not read.
# Protected groups are always read.
MAX_GROUPS_READ = 200
_REASON = "just past the last match"
# A held cut is looked at again at least this often (a position read, no scan): the
# group it waits for may read past the match at any time.
HELD_DELAY_S = 30.0


@dataclass(frozen=True)
class PartitionCut:
    """One partition's cut as the facts read now allow it."""

    tp: TopicPartition
    target: int  # last match + 1
    log_start: int
    high_watermark: int
    collateral_records: int  # other keys' records below the target, at this run's scan
    collateral_bytes: int
    # Why a protected group holds the cut (empty: it is not held), and which groups.
    held: tuple[str, ...] = ()
    held_by: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()  # groups with a commit at or below the last match
    scanned_to: int = 0  # the end of this run's scan of the partition

    @property
    def truncated(self) -> bool:
        """The high watermark read now is below the end this run scanned: the log was
        truncated (a leader elected without the latest records) and what lies below the
        target may not be what the scan read. Never cut then: scanned again first."""
        return self.high_watermark < self.scanned_to

    @property
    def records(self) -> int:
        """Records the cut removes (0 when retention already passed it)."""
        return rules.records_deleted_by(self.target, self.log_start)


@dataclass
class Groups:
    """The fresh read of the partitions with a match: offsets, and the positions of every
    listed group (up to MAX_GROUPS_READ) and every protected group."""

    fresh: Fresh = field(default_factory=Fresh)
    lasts: dict[TopicPartition, int] = field(default_factory=dict)
    not_read: int = 0  # listed groups beyond MAX_GROUPS_READ

    def unread(self, tp: TopicPartition) -> list[str]:
        """Groups with a committed offset at or below the partition's last match: they
        have not read past a match (a commit is the next offset to read)."""
        facts, last = self.fresh.facts.get(tp), self.lasts.get(tp)
        if facts is None or last is None:
            return []
        return sorted(g for g, at in facts.committed.items() if at is not None and at <= last)


def last_matches(scans: Mapping[TopicPartition, PartitionScan]) -> dict[TopicPartition, int]:
    """The offset of each partition's last record with a listed key (partitions with one)."""
    return {
        tp: max(h.last_offset for h in found.hits.values() if h.records)
        for tp, found in scans.items()
        if found.matches
    }


def read_groups(
    kafka: ErasureKafka, protect: Sequence[str], lasts: Mapping[TopicPartition, int]
) -> Groups:
    """Log bounds and group positions of the partitions with a match, read now (nothing
    is read when none has one)."""
    if not lasts:
        return Groups()
    listed = kafka.group_ids()
    read = listed[:MAX_GROUPS_READ]
    groups = sorted({*read, *protect})
    tps = sorted(lasts)
    fresh = read_facts(kafka, tps, lambda _tp: groups)
    if fresh.errors:
        tp = min(fresh.errors)
        raise KafkaUnavailable(
            f"{len(fresh.errors)} partitions unreadable; {tp}: {fresh.errors[tp]}"
        )
    return Groups(fresh, dict(lasts), len(listed) - len(read))


def plan(
    groups: Groups, scans: Mapping[TopicPartition, PartitionScan], protect: Iterable[str]
) -> dict[TopicPartition, PartitionCut]:
    """Each partition's cut at its last match + 1, held where a protected group has not
    read that far (the same guard a RecordPurge's cut passes through)."""
    protected = sorted(set(protect))
    out: dict[TopicPartition, PartitionCut] = {}
    for tp, last in sorted(groups.lasts.items()):
        facts = groups.fresh.facts[tp]
        target = last + 1
        guarded = rules.protect_groups(
            rules.Cut(target, _REASON), facts.committed, protected, facts.log_start
        )
        below = {g: facts.committed.get(g) for g in protected}
        held_by = tuple(g for g, at in below.items() if at is None or at < target)
        held: tuple[str, ...] = ()
        if guarded.offset < target:
            held = tuple(
                f"protected group {g} has no committed offset on {tp}"
                if below[g] is None
                else f"protected group {g} committed {below[g]} on {tp}, "
                f"at or below the last match {last}"
                for g in held_by
            )
        found = scans[tp]
        out[tp] = PartitionCut(
            tp,
            target,
            facts.log_start,
            facts.high_watermark,
            found.collateral_records,
            found.collateral_bytes,
            held,
            held_by if held else (),
            tuple(groups.unread(tp)),
            found.end,
        )
    return out


def apply(
    kafka: ErasureKafka, cuts: Mapping[TopicPartition, PartitionCut], protect: Sequence[str]
) -> dict[TopicPartition, Applied]:
    """The cuts that are not held, in one DeleteRecords; a cut that retention already
    passed needs none (its log start is the answer). The protected groups' positions are
    read again right before it, as a RecordPurge's are: the plan's read came before the
    tombstones were written, and a group reset below a match since then holds its
    partition (not cut; the next run looks again)."""
    out: dict[TopicPartition, Applied] = {}
    wanted: dict[TopicPartition, int] = {}
    # In partition order: one DeleteRecords either way, but the same request every time.
    for tp, cut in sorted(cuts.items()):
        if cut.held or cut.truncated:
            continue
        if cut.target <= cut.log_start:
            out[tp] = Applied(cut.target, log_start_after=cut.log_start)
        else:
            wanted[tp] = cut.target
    protected = sorted(set(protect))
    if wanted and protected:
        now = read_positions(kafka, sorted(wanted), lambda _tp: protected)
        for tp in sorted(wanted):
            cut = cuts[tp]
            guarded = rules.protect_groups(
                rules.Cut(cut.target, _REASON), now[tp], protected, cut.log_start
            )
            if guarded.offset < cut.target:
                del wanted[tp]
                behind = sorted(g for g in protected if (now[tp].get(g) or 0) < cut.target)
                out[tp] = Applied(
                    cut.target,
                    unverified=f"protected group(s) {names(behind)} moved below the last "
                    f"match on {tp} since the plan: not cut, looked at again",
                )
    if wanted:
        # Never lowered: a high watermark that dropped below the last match took the
        # records with it, and the next run scans again from fresh offsets.
        out.update(delete_and_verify(kafka, wanted))
    return out


def names(groups: Iterable[str], shown: int = 5) -> str:
    listed = sorted(set(groups))
    text = ", ".join(listed[:shown])
    return text + (f" and {len(listed) - shown} more" if len(listed) > shown else "")


def describe(cuts: Mapping[TopicPartition, PartitionCut]) -> str:
    """What the cuts would do, for a dry run's message and a topic's note: the other
    keys' records and bytes they remove, the groups they pass, and who holds them."""
    going = sorted((c for c in cuts.values() if not c.held), key=lambda c: c.tp)
    each = "; ".join(
        f"{c.tp} at {c.target}: {c.collateral_records} records, {c.collateral_bytes} bytes"
        for c in going[:5]
    )
    more = f"; and {len(going) - 5} more" if len(going) > 5 else ""
    text = (
        f"cuts just past the last match of {len(going)} partitions would remove "
        f"{sum(c.collateral_records for c in going)} records "
        f"({sum(c.collateral_bytes for c in going)} bytes) of other keys ({each}{more})"
    )
    passed = {g for c in going for g in c.passes}
    if passed:
        text += f", passing groups {names(passed)} (not read past a match)"
    held = sorted(c.tp for c in cuts.values() if c.held)
    if held:
        by = {g for c in cuts.values() for g in c.held_by}
        text += (
            f"; protected groups {names(by)} would hold {len(held)} partitions "
            f"({', '.join(str(tp) for tp in held[:5])}): nothing cut there"
        )
    return text


def held_message(cuts: Iterable[PartitionCut]) -> str:
    """Why cuts are held, for the Erased condition: the group and the partition."""
    held = sorted((c for c in cuts if c.held), key=lambda c: c.tp)
    shown = "; ".join(why for c in held[:5] for why in c.held)
    more = f"; and {len(held) - 5} more partitions" if len(held) > 5 else ""
    return (
        f"{len(held)} partitions not cut: {shown}{more}; nothing is cut there until the "
        "group reads past the last match (or retention removes the records)"
    )
