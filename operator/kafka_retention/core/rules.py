"""The rules that decide a cut, as small pure functions shared by every planner.

A cut is an offset: every record below it is deleted. Rules that delete propose a cut;
ceilings (protected groups, the high watermark) only ever lower it; the log start offset
is the floor below which a cut means "nothing to do". Each function returns the new cut
and, when it changed something, a sentence saying why, for status and events.

Each sentence also carries a guard tag (GROUP, NO_COMMIT, HIGH_WATERMARK, ...): what kind
of thing proposed or lowered the cut, so status can count cuts by guard without reading
the sentences (`kubectl kafka-retention explain`). A policy's own floors (minRetention)
declare their tags in their rule modules; core.retention_rules.registry.GUARDS is the
whole list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Guard tags: what limited a cut (status.topics[].cut.limits[].guard in the CRD), but
# for the registry's floors.
GROUP = "group"  # a group's committed offset
NO_COMMIT = "noCommit"  # a group with no committed offset keeps the partition
HIGH_WATERMARK = "highWatermark"
PEER = "peer"  # another policy on the same partition (core.overlap)
BINDING = "binding"  # the KafkaClusterBinding's protect list or allow list
COMPACTED = "compacted"  # cleanup.policy without delete: DeleteRecords is refused
CONFIG = "config"  # the topic's config could not be read
GUARDS = (GROUP, NO_COMMIT, HIGH_WATERMARK, PEER, BINDING, COMPACTED, CONFIG)


@dataclass(frozen=True)
class Cut:
    offset: int
    reason: str
    notes: tuple[str, ...] = ()
    # The guard tag of each note `lowered` added (a Cut rebuilt from stored notes alone,
    # as a purge's re-check does, has none for those), and of the reason when the
    # proposing rule is itself a guard (consumed_by: the slowest group, or no commit).
    guards: tuple[str, ...] = ()
    reason_guard: str | None = None

    def lowered(self, offset: int, note: str, guard: str) -> Cut:
        if offset >= self.offset:
            return self
        return Cut(
            offset, self.reason, (*self.notes, note), (*self.guards, guard), self.reason_guard
        )


def explicit(offset: int, high_watermark: int) -> Cut:
    """kafka-delete-records.sh semantics: -1 stands for the high watermark."""
    if offset == -1:
        return Cut(high_watermark, "high watermark (-1)")
    return Cut(offset, f"offset {offset}")


def before_timestamp(offset_for_timestamp: int | None, high_watermark: int, iso: str) -> Cut:
    """Cut at the first record at or after the time; every record is older when none is."""
    if offset_for_timestamp is None or offset_for_timestamp < 0:
        return Cut(high_watermark, f"every record is older than {iso}")
    return Cut(offset_for_timestamp, f"first record at or after {iso}")


def consumed_by(committed: Mapping[str, int | None], groups: Iterable[str], log_start: int) -> Cut:
    """The smallest committed offset over the groups; a group without one keeps everything."""
    cut: Cut | None = None
    for group in sorted(groups):
        offset = committed.get(group)
        if offset is None:
            return Cut(
                log_start, f"group {group} has no committed offset here", reason_guard=NO_COMMIT
            )
        if cut is None or offset < cut.offset:
            cut = Cut(offset, f"committed by {group}", reason_guard=GROUP)
    if cut is None:
        raise ValueError("consumed_by needs at least one group")
    return cut


def protect_groups(
    cut: Cut, committed: Mapping[str, int | None], groups: Iterable[str], log_start: int
) -> Cut:
    """Never past a protected group's committed offset; no commit protects the partition."""
    for group in sorted(groups):
        offset = committed.get(group)
        if offset is None:
            cut = cut.lowered(
                log_start, f"protected group {group} has no committed offset", NO_COMMIT
            )
        else:
            cut = cut.lowered(offset, f"lowered to {offset}, committed offset of {group}", GROUP)
    return cut


def at_most_high_watermark(cut: Cut, high_watermark: int) -> Cut:
    return cut.lowered(
        high_watermark, f"lowered to the high watermark {high_watermark}", HIGH_WATERMARK
    )


def records_deleted_by(cut_offset: int, log_start: int) -> int:
    """A cut at or below the log start deletes nothing (and is not an error)."""
    return max(0, cut_offset - log_start)
