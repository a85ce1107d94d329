"""What a RetentionPolicy run reports: unread records it deleted, and the per-topic
summary in status (bounded; the busiest topics first)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from kafka_retention.core import conditions as cond
from kafka_retention.core import loss
from kafka_retention.core import rules as guards
from kafka_retention.core import topics as topic_rules
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy import (
    NO_RULE,
    PolicyPlan,
)
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.retention_rules import registry
from kafka_retention.core.retention_rules.rule import Proposer

MAX_TOPICS_LISTED = 500
# status.topics[].cut: guards listed per topic, and the length of any sentence in it. A
# plan's sentences may come back from Spark pods through ConfigMaps a tenant can write:
# status takes them bounded, and only known rule and guard names.
MAX_LIMITS_LISTED = 5
MAX_SENTENCE_CHARS = 200
# The names a row's rule may carry: every deleting rule the registry knows, or none.
_RULES = frozenset((*(r.name for r in registry.RULES if isinstance(r, Proposer)), NO_RULE))
_GUARDS = frozenset(registry.GUARDS)


@dataclass(frozen=True)
class ConsumedLoss:
    """Records a cut removed before a deleteConsumed group read them, per group and topic
    (status.lastRun.unconsumedDeleted; an event and a metric each)."""

    group: str
    topic: str
    records: int

    def to_status(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "records": self.records}


@dataclass(frozen=True)
class GroupSummary:
    """A group the plan read (status.groups): the type it was read as, on how many planned
    partitions it has a position, and how many records it is behind there."""

    name: str
    type: str
    partitions: int = 0
    with_position: int = 0
    records_behind: int = 0

    def to_status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "partitions": self.partitions,
            "withPosition": self.with_position,
            "recordsBehind": self.records_behind,
        }


@dataclass(frozen=True)
class HeldBack:
    """Who held a topic's cuts back (status.topics[].heldBackBy): a namespace, on how many
    partitions, and the policy's name only when it is of the asker's own namespace."""

    namespace: str
    partitions: int
    policy: str | None = None
    group: str | None = None

    def to_status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"namespace": self.namespace, "partitions": self.partitions}
        if self.policy is not None:
            out["policy"] = self.policy
        if self.group is not None:
            out["group"] = self.group
        return out


def losses(
    rows: Sequence[PlanRow],
    cuts: Mapping[TopicPartition, tuple[int, int]],
    moved: Mapping[TopicPartition, tuple[int, int]],
    spec: PolicySpec,
) -> list[ConsumedLoss]:
    """Records deleted (or, in a dry run, to be deleted) that a deleteConsumed group had
    not read: only maxRetention and deleteBefore can cause that."""
    per: dict[tuple[str, str], int] = {}
    for row in rows:
        tp = TopicPartition(row.topic, row.partition)
        if tp not in cuts:
            continue
        before, after = moved.get(tp, cuts[tp])
        applied = cuts[tp][1] if spec.dry_run else after
        for g in row.groups:
            if g.group not in spec.rules.consumed_groups:
                continue
            committed = g.committed_offset
            read_to = max(before, committed if committed is not None else before)
            lost = max(0, applied - read_to)
            if lost:
                per[(g.group, tp.topic)] = per.get((g.group, tp.topic), 0) + lost
    return [ConsumedLoss(g, t, n) for (g, t), n in sorted(per.items())]


def _sentence(text: Any) -> str:
    out = str(text or "")
    return out if len(out) <= MAX_SENTENCE_CHARS else out[: MAX_SENTENCE_CHARS - 1] + "…"


class TopicCut(NamedTuple):
    """What a run's cuts moved on one topic (a dry run: what they would move)."""

    partitions: int = 0
    records: int = 0


@dataclass
class CutTally:
    """One topic's cuts, counted row by row (one pass over the plan, whatever its size):
    which rule won on how many partitions and the reason it gave on the first, and each
    guard that limited a cut, with its sentence from the first partition it limited."""

    rules: dict[str, int] = field(default_factory=dict)
    proposed: dict[str, str] = field(default_factory=dict)
    # (guard, what it is about) -> [sentence, partitions]. A group guard is one entry per
    # group (its reason sentence names it); other guards are one entry each, since their
    # sentences differ by partition only in offsets.
    limits: dict[tuple[str, str], list[Any]] = field(default_factory=dict)

    def add(self, row: PlanRow) -> None:
        rule = row.rule if row.rule in _RULES else NO_RULE
        self.rules[rule] = self.rules.get(rule, 0) + 1
        if rule not in self.proposed:
            self.proposed[rule] = _sentence(row.reason)
        guard = row.reason_guard
        if guard in (guards.GROUP, guards.NO_COMMIT):
            reason = _sentence(row.reason)
            self.limit(guard, reason, reason)
        for note, tag in zip(row.notes, row.guards, strict=False):
            if tag in _GUARDS:
                self.limit(tag, "", note)

    def limit(self, guard: str, about: str, detail: Any, partitions: int = 1) -> None:
        found = self.limits.get((guard, about))
        if found is None:
            self.limits[(guard, about)] = [_sentence(detail), partitions]
        else:
            found[1] += partitions

    def status(self, done: TopicCut) -> dict[str, Any]:
        """status.topics[].cut: the rule that won on most partitions (the first listed on
        a tie), its reason, what the cut moved (a dry run: would move), and the guards
        that limited most partitions first."""
        rule = max(self.rules, key=self.rules.__getitem__) if self.rules else NO_RULE
        ranked = sorted(self.limits.items(), key=lambda kv: (-kv[1][1], kv[0]))
        return {
            "rule": rule,
            "proposed": self.proposed.get(rule, "nothing planned"),
            "partitionsCut": done.partitions,
            "records": done.records,
            "limits": [
                {"guard": guard, "detail": detail, "partitions": n}
                for (guard, _), (detail, n) in ranked[:MAX_LIMITS_LISTED]
            ],
        }


def peer_detail(holder: HeldBack) -> str:
    """A heldBackBy entry in words, naming no more than the entry does (the policy only
    when it is of the asker's own namespace)."""
    who = (
        f"policy {holder.policy} of this namespace"
        if holder.policy
        else f"a policy in namespace {holder.namespace or 'unknown'}"
    )
    by = (
        f"at the committed offset of its group {holder.group}"
        if holder.group
        else "by its own rules"
    )
    return f"held back by {who}, {by}"


def skip_guard(why: str) -> str:
    """The guard of a topic the plan skipped: a compact-only topic (the broker refuses
    DeleteRecords there, core.topics) or a config or metadata read that failed."""
    return guards.COMPACTED if why.startswith(topic_rules.POLICY_VIOLATION) else guards.CONFIG


def skipped_cut(why: str) -> dict[str, Any]:
    return {
        "rule": NO_RULE,
        "proposed": "nothing planned: the topic was skipped",
        "partitionsCut": 0,
        "records": 0,
        "limits": [{"guard": skip_guard(why), "detail": _sentence(why), "partitions": 0}],
    }


def withheld_cut(binding: str | None) -> dict[str, Any]:
    by = f"KafkaClusterBinding {binding}" if binding else "the KafkaClusterBinding"
    return {
        "rule": NO_RULE,
        "proposed": "nothing planned: the binding withholds the topic",
        "partitionsCut": 0,
        "records": 0,
        "limits": [
            {
                "guard": guards.BINDING,
                "detail": _sentence(
                    f"spec.topics.pattern matches this topic, but {by} protects it "
                    "from this namespace"
                ),
                "partitions": 0,
            }
        ],
    }


def topic_summary(
    previous: Sequence[Mapping[str, Any]],
    spec: PolicySpec,
    rows: Sequence[PlanRow],
    skipped: Mapping[str, str],
    moved: Mapping[TopicPartition, tuple[int, int]],
    deleted_by_topic: Mapping[str, int],
    notes: Mapping[str, str],
    held: Mapping[str, Sequence[HeldBack]] | None = None,
    cut_by_topic: Mapping[str, TopicCut] | None = None,
    withheld: Sequence[str] = (),
    tiered: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One entry per topic: partitions, how far the log start lags the slowest group,
    records deleted last run and in total, a note where something needs saying, who held
    its cut back, and its cut explained (`cut`: the rule, its reason, the guards that
    limited it). `cut_by_topic`: partitions whose log start the run moved (or, in a dry
    run, would move). `tiered`: each tiered topic's retention and bytes (`tiered`, from
    services.watch.tiers)."""
    before = {t["name"]: t for t in previous}
    per: dict[str, dict[str, Any]] = {}
    tallies: dict[str, CutTally] = {}
    for row in rows:
        topic = per.get(row.topic)
        if topic is None:
            topic = per[row.topic] = {"name": row.topic, "partitions": 0, "logStartLag": 0}
            tallies[row.topic] = CutTally()
        topic["partitions"] += 1
        tallies[row.topic].add(row)
        committed = [
            g.committed_offset for g in row.groups if g.group in spec.rules.consumed_groups
        ]
        tp = TopicPartition(row.topic, row.partition)
        start_now = moved[tp][1] if tp in moved else row.log_start_offset
        if committed and None not in committed and start_now is not None:
            slowest = min(c for c in committed if c is not None)
            topic["logStartLag"] += max(0, slowest - start_now)
    out = []
    for name, topic in per.items():
        last = deleted_by_topic.get(name, 0)
        topic["recordsDeletedLastRun"] = last
        topic["recordsDeletedTotal"] = (
            int(before.get(name, {}).get("recordsDeletedTotal", 0)) + last
        )
        if name in notes:
            topic["note"] = notes[name]
        tally = tallies[name]
        if held and held.get(name):
            topic["heldBackBy"] = [h.to_status() for h in held[name]]
            for h in held[name]:
                tally.limit(guards.PEER, peer_detail(h), peer_detail(h), h.partitions)
        topic["cut"] = tally.status((cut_by_topic or {}).get(name, TopicCut()))
        if tiered and name in tiered:
            topic["tiered"] = dict(tiered[name])
        out.append(topic)

    def unplanned(name: str, note: str, cut: dict[str, Any]) -> dict[str, Any]:
        total = int(before.get(name, {}).get("recordsDeletedTotal", 0))
        return {
            "name": name,
            "partitions": 0,
            "recordsDeletedLastRun": 0,
            "recordsDeletedTotal": total,
            "note": note,
            "cut": cut,
        }

    out += [unplanned(name, f"skipped: {why}", skipped_cut(why)) for name, why in skipped.items()]
    out += [
        unplanned(
            name,
            "not cut: protected by the policy's KafkaClusterBinding",
            withheld_cut(spec.cluster.binding),
        )
        for name in withheld
    ]
    ranked = sorted(out, key=lambda t: (-int(t.get("recordsDeletedTotal", 0)), t["name"]))
    return ranked[:MAX_TOPICS_LISTED]


MAX_GROUPS_LISTED = 100


def group_summary(rows: Sequence[PlanRow], types: Mapping[str, str]) -> list[GroupSummary]:
    """One entry per group the plan read (spec.deleteConsumed and spec.notify): the type
    it was read as (consumer, classic, share, streams, or none: no group of that id), on
    how many planned partitions it has a position (a commit, or a share group's start
    offset), and how many records it is behind there (high watermark minus position)."""
    # [partitions, with a position, records behind] per group, counted in one pass.
    counts: dict[str, list[int]] = {g: [0, 0, 0] for g in sorted(types)}
    for row in rows:
        for g in row.groups:
            count = counts.get(g.group)
            if count is None:
                continue
            count[0] += 1
            position = g.committed_offset
            if position is not None and row.high_watermark is not None:
                count[1] += 1
                count[2] += max(0, row.high_watermark - position)
    return [GroupSummary(g, types[g], *count) for g, count in counts.items()][:MAX_GROUPS_LISTED]


def groups_line(summary: Sequence[GroupSummary], limit: int = 5) -> str:
    """`kubectl get`'s Groups column: each group with the type it was read as."""
    shown = [f"{g.name} ({g.type})" for g in summary[:limit]]
    if len(summary) > limit:
        shown.append(f"+{len(summary) - limit} more")
    return ", ".join(shown)


@dataclass
class Deleted:
    """What a run's deletes moved: records, their estimated bytes, per topic."""

    records: int = 0
    bytes_estimate: int = 0
    partitions_cut: int = 0
    by_topic: dict[str, int] = field(default_factory=dict)


def deleted(rows: Sequence[PlanRow], moved: Mapping[TopicPartition, tuple[int, int]]) -> Deleted:
    """Records each log start moved past, and bytes by the plan's estimate for its row."""
    by_row = {(r.topic, r.partition): r for r in rows}
    out = Deleted()
    for tp, (before, after) in moved.items():
        n = max(0, after - before)
        out.records += n
        out.by_topic[tp.topic] = out.by_topic.get(tp.topic, 0) + n
        out.partitions_cut += 1 if after > before else 0
        row = by_row[(tp.topic, tp.partition)]
        estimate, records = row.bytes_to_delete_estimate, row.records_to_delete
        if records and estimate is not None:
            out.bytes_estimate += int(estimate * n / records)
    return out


def partitions_cut(
    cuts: Mapping[TopicPartition, tuple[int, int]],
    moved: Mapping[TopicPartition, tuple[int, int]],
    dry_run: bool,
) -> dict[str, TopicCut]:
    """Per topic, partitions whose log start the run moved and the records it moved past;
    in a dry run, those its cuts would move (what `kubectl kafka-retention plan` shows)."""
    out: dict[str, TopicCut] = {}
    for tp, (before, target) in cuts.items():
        after = target if dry_run else moved.get(tp, (before, before))[1]
        if after > before:
            had = out.get(tp.topic, TopicCut())
            out[tp.topic] = TopicCut(had.partitions + 1, had.records + after - before)
    return out


def run_status(
    status: Mapping[str, Any],
    generation: int | None,
    spec: PolicySpec,
    plan: PolicyPlan,
    rows: Sequence[PlanRow],
    moved: Mapping[TopicPartition, tuple[int, int]],
    done: Deleted,
    lost: Sequence[ConsumedLoss],
    notes: Mapping[str, str],
    groups: Sequence[GroupSummary],
    *,
    started: datetime,
    finished: datetime,
    next_run: datetime,
    degraded: str,
    held: Mapping[str, Sequence[HeldBack]] | None = None,
    cut_by_topic: Mapping[str, TopicCut] | None = None,
    tiered: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The status a completed run writes (besides its watches' fields and conditions).
    `held`: who held the cuts back, per topic (status.topics[].heldBackBy);
    `cut_by_topic`: partitions cut (a dry run: that would be) per topic; `tiered`: the
    tiered topics' status.topics[].tiered."""
    return {
        "observedGeneration": generation,
        "consecutiveFailures": 0,
        "topicCount": len({r.topic for r in rows} | set(plan.skipped)),
        "recordsDeletedTotal": int(status.get("recordsDeletedTotal") or 0) + done.records,
        "nextRunAt": cond.timestamp(next_run),
        "lastRun": {
            "startedAt": cond.timestamp(started),
            "completedAt": cond.timestamp(finished),
            "partitionsPlanned": len(plan.rows),
            "partitionsCut": done.partitions_cut,
            "recordsDeleted": done.records,
            "bytesReclaimedEstimate": done.bytes_estimate,
            "unconsumedDeleted": [lost.to_status() for lost in lost[: loss.MAX_LOSSES_LISTED]],
            # A merge patch keeps fields it does not name: null clears an old error.
            "error": degraded or None,
        },
        "topics": topic_summary(
            status.get("topics") or [],
            spec,
            rows,
            plan.skipped,
            moved,
            done.by_topic,
            notes,
            held or {},
            cut_by_topic or {},
            plan.withheld,
            tiered,
        ),
        "groups": [g.to_status() for g in groups],
        "groupsRead": groups_line(groups) or None,
    }
