"""Continuous retention rules (RetentionPolicy, and the Spark plan job): one partition's cut.

The combination is the safe one: the cut is the largest offset any deleting rule allows
(the registry's proposers: deleteConsumed, deleteBefore, maxRetention), then lowered by
the floors (minRetention) and the high watermark, and never below the log start. Only the
rules that pass groups (deleteBefore, maxRetention) can pass a group's committed offset;
when they do, the plan says which group loses how much. The rules themselves are
core.retention_rules, one module each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.plan_row import GroupImpactRow, PlanRow, TombstoneRow
from kafka_retention.core.retention_rules import delete_before, delete_consumed, max_retention

# Its home is the registry; planners import it from here.
from kafka_retention.core.retention_rules.registry import RetentionRules as RetentionRules

DELETE_CONSUMED = delete_consumed.RULE.name
DELETE_BEFORE = delete_before.RULE.name
MAX_RETENTION = max_retention.RULE.name
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
    # Topics its pattern matches that its binding protects (TopicSelector.withheld): found
    # by the operator from the cluster's topic list, never read back from a Spark run.
    withheld: list[str] = field(default_factory=list)


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


def plan_partition(facts: PartitionFacts, policy: RetentionRules, now_ms: int) -> PartitionCut:
    rule, cut = NO_RULE, rules.Cut(facts.log_start, "no deleting rule")
    proposed = False
    for proposer, value in policy.proposers:
        proposal = proposer.propose(value, facts, now_ms)
        # The furthest cut wins; on a tie the first rule listed names it.
        if not proposed or proposal.offset > cut.offset:
            rule, cut, proposed = proposer.name, proposal, True
    for floor, value in policy.floors:
        cut = floor.lower(value, cut, facts, now_ms)
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
