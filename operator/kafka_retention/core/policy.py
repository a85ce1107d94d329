"""Continuous retention rules (RetentionPolicy, and the Spark plan job): one partition's cut.

The combination is the safe one: the cut is the largest offset any deleting rule allows
(deleteConsumed, deleteBefore, maxRetention), then lowered by the minRetention floor and
the high watermark, and never below the log start. Only deleteBefore and maxRetention can
pass a group's committed offset; when they do, the plan says which group loses how much.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kafka_retention.core import rules
from kafka_retention.core.conditions import timestamp
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.patterns import compile_pattern, first_match
from kafka_retention.core.plan_row import GroupImpactRow, PlanRow, TombstoneRow

if TYPE_CHECKING:  # policy_spec imports this module
    from kafka_retention.core.policy_spec import TopicSelector

DELETE_CONSUMED = "deleteConsumed"
DELETE_BEFORE = "deleteBefore"
MAX_RETENTION = "maxRetention"
NO_RULE = "none"


@dataclass
class PolicyPlan:
    """One policy's plan, whichever planner made it (in process, the Spark job in this
    process or in pods): a row per partition, and the topics not planned."""

    rows: list[PlanRow]
    # Topics matched but not planned, with the reason (compact-only, unreadable config).
    skipped: dict[str, str] = field(default_factory=dict)
    # Tombstone scan rows, one per compacted partition (Spark plans with a scan only).
    tombstones: list[TombstoneRow] = field(default_factory=list)
    # What each group the policy names was read as (GroupType's values).
    group_types: dict[str, str] = field(default_factory=dict)
    # Topics its pattern matches that its binding protects (withheld_by_binding): found
    # by the operator from the cluster's topic list, never read back from a Spark run.
    withheld: list[str] = field(default_factory=list)


def withheld_by_binding(selector: TopicSelector, topics: Iterable[str]) -> list[str]:
    """Topics `selector`'s pattern matches that its KafkaClusterBinding's protect list
    keeps from it, among those the binding's allow list grants its namespace: what status
    may name (a topic outside the allow list is outside what the namespace may see, so it
    is not listed). A topic the spec names is refused before any run (services.tenancy)."""
    if not selector.pattern or not selector.protect:
        return []
    regex = compile_pattern(selector.pattern)
    return sorted(
        t
        for t in topics
        if not t.startswith("__")
        and t not in selector.exclude
        and regex.fullmatch(t)
        and first_match(selector.protect, t) is not None
        and (not selector.allow or first_match(selector.allow, t) is not None)
    )


@dataclass(frozen=True)
class RetentionRules:
    consumed_groups: tuple[str, ...] = ()
    min_retention_ms: int | None = None
    delete_before_ms: int | None = None
    max_retention_ms: int | None = None
    # Groups watched for unread-record loss (spec.notify.groups): read, never protecting.
    notify_groups: tuple[str, ...] = ()

    def lookup_times(self, now_ms: int) -> tuple[int, ...]:
        """The times whose offsets (ListOffsets for a timestamp) the plan needs."""
        times = []
        if self.delete_before_ms is not None:
            times.append(self.delete_before_ms)
        if self.max_retention_ms is not None:
            times.append(now_ms - self.max_retention_ms)
        if self.min_retention_ms is not None:
            times.append(now_ms - self.min_retention_ms)
        return tuple(sorted(set(times)))

    def groups(self) -> tuple[str, ...]:
        """Groups whose committed offsets the plan reads, and whose losses it counts."""
        return _groups(self.consumed_groups, self.notify_groups)

    def deletes(self) -> bool:
        """False for a watch-only policy (notify alone): it plans no cut."""
        return bool(
            self.consumed_groups
            or self.delete_before_ms is not None
            or self.max_retention_ms is not None
        )


@functools.lru_cache(maxsize=1024)
def _groups(consumed: tuple[str, ...], notify: tuple[str, ...]) -> tuple[str, ...]:
    # Asked once a partition by every planner: at fleet size (a million rows in the Spark
    # job) sorting the same few names again each time was a tenth of the core's cost.
    return tuple(sorted(set(consumed) | set(notify)))


@dataclass(frozen=True, slots=True)
class GroupImpact:
    group: str
    committed_offset: int | None
    # Records the cut removes that this group has not read yet.
    unconsumed_to_delete: int


@dataclass(frozen=True)
class PartitionCut:
    tp: TopicPartition
    log_start: int
    high_watermark: int
    target: int
    rule: str  # which rule decided the cut
    reason: str
    notes: tuple[str, ...]
    groups: tuple[GroupImpact, ...]
    # rules.Cut's guard tags: one per note, and the reason's (None: not a guard).
    guards: tuple[str, ...] = ()
    reason_guard: str | None = None

    @property
    def records_to_delete(self) -> int:
        return rules.records_deleted_by(self.target, self.log_start)

    def row(self, time_offsets: Mapping[int, int | None]) -> PlanRow:
        """The cut as a plan row (the Spark job writes the same columns from the same
        definition), with the offsets found for the rules' lookup times."""
        return PlanRow(
            self.tp.topic,
            self.tp.partition,
            log_start_offset=self.log_start,
            high_watermark=self.high_watermark,
            target_offset=self.target,
            rule=self.rule,
            reason=self.reason,
            reason_guard=self.reason_guard,
            notes=self.notes,
            guards=self.guards,
            records_to_delete=self.records_to_delete,
            groups=tuple(
                GroupImpactRow(g.group, g.committed_offset, g.unconsumed_to_delete)
                for g in self.groups
            ),
            time_offsets=dict(time_offsets),
        )


def _iso(epoch_ms: int) -> str:
    return timestamp(datetime.fromtimestamp(epoch_ms / 1000, tz=UTC))


def plan_partition(facts: PartitionFacts, policy: RetentionRules, now_ms: int) -> PartitionCut:
    proposals: list[tuple[str, rules.Cut]] = []
    if policy.consumed_groups:
        proposals.append(
            (
                DELETE_CONSUMED,
                rules.consumed_by(facts.committed, policy.consumed_groups, facts.log_start),
            )
        )
    if policy.delete_before_ms is not None:
        proposals.append(
            (
                DELETE_BEFORE,
                rules.before_timestamp(
                    facts.offset_for_time(policy.delete_before_ms),
                    facts.high_watermark,
                    _iso(policy.delete_before_ms),
                ),
            )
        )
    if policy.max_retention_ms is not None:
        oldest_kept = now_ms - policy.max_retention_ms
        proposals.append(
            (
                MAX_RETENTION,
                rules.before_timestamp(
                    facts.offset_for_time(oldest_kept), facts.high_watermark, _iso(oldest_kept)
                ),
            )
        )
    if proposals:
        # The furthest cut wins; on a tie the first rule listed names it.
        rule, cut = max(proposals, key=lambda rc: rc[1].offset)
    else:
        rule, cut = NO_RULE, rules.Cut(facts.log_start, "no deleting rule")
    if policy.min_retention_ms is not None:
        young_since = now_ms - policy.min_retention_ms
        first_young = facts.offset_for_time(young_since)
        if first_young is not None:
            cut = cut.lowered(
                first_young,
                f"minRetention keeps records since {_iso(young_since)} (offset {first_young})",
                rules.MIN_RETENTION,
            )
    cut = rules.at_most_high_watermark(cut, facts.high_watermark)
    target = max(cut.offset, facts.log_start)
    # Once per group and partition: plain comparisons rather than max() calls, the
    # hottest lines of a million-row plan.
    impacts = []
    log_start, committed_by = facts.log_start, facts.committed
    for group in policy.groups():
        committed = committed_by.get(group)
        read_to = log_start if committed is None or committed < log_start else committed
        unread = target - read_to
        impacts.append(GroupImpact(group, committed, unread if unread > 0 else 0))
    return PartitionCut(
        facts.tp,
        facts.log_start,
        facts.high_watermark,
        target,
        rule,
        cut.reason,
        cut.notes,
        tuple(impacts),
        cut.guards,
        cut.reason_guard,
    )
