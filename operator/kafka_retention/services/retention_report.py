"""What a RetentionPolicy run reports: unread records it deleted, and the per-topic
summary in status (bounded; the busiest topics first)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import PolicySpec

MAX_TOPICS_LISTED = 500
MAX_LOSSES_LISTED = 100


def losses(
    rows: Sequence[Mapping[str, Any]],
    cuts: Mapping[TopicPartition, tuple[int, int]],
    moved: Mapping[TopicPartition, tuple[int, int]],
    spec: PolicySpec,
) -> list[dict[str, Any]]:
    """Records deleted (or, in a dry run, to be deleted) that a deleteConsumed group had
    not read: only maxRetention and deleteBefore can cause that."""
    per: dict[tuple[str, str], int] = {}
    for row in rows:
        tp = TopicPartition(row["topic"], row["partition"])
        if tp not in cuts:
            continue
        before, after = moved.get(tp, cuts[tp])
        applied = cuts[tp][1] if spec.dry_run else after
        for g in row.get("groups") or []:
            if g["group"] not in spec.rules.consumed_groups:
                continue
            committed = g["committedOffset"]
            read_to = max(before, committed if committed is not None else before)
            lost = max(0, applied - read_to)
            if lost:
                per[(g["group"], tp.topic)] = per.get((g["group"], tp.topic), 0) + lost
    return [{"group": g, "topic": t, "records": n} for (g, t), n in sorted(per.items())]


def topic_summary(
    previous: Sequence[Mapping[str, Any]],
    spec: PolicySpec,
    rows: Sequence[Mapping[str, Any]],
    skipped: Mapping[str, str],
    moved: Mapping[TopicPartition, tuple[int, int]],
    deleted_by_topic: Mapping[str, int],
    notes: Mapping[str, str],
    held: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """One entry per topic: partitions, how far the log start lags the slowest group,
    records deleted last run and in total, a note where something needs saying, and who
    held its cut back."""
    before = {t["name"]: t for t in previous}
    per: dict[str, dict[str, Any]] = {}
    for row in rows:
        topic = per.setdefault(
            row["topic"], {"name": row["topic"], "partitions": 0, "logStartLag": 0}
        )
        topic["partitions"] += 1
        committed = [
            g["committedOffset"]
            for g in row.get("groups") or []
            if g["group"] in spec.rules.consumed_groups
        ]
        if committed and None not in committed:
            slowest = min(c for c in committed if c is not None)
            tp = TopicPartition(row["topic"], row["partition"])
            start_now = moved[tp][1] if tp in moved else row["logStartOffset"]
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
        if held and held.get(name):
            topic["heldBackBy"] = [dict(h) for h in held[name]]
        out.append(topic)
    for name, why in skipped.items():
        out.append(
            {
                "name": name,
                "partitions": 0,
                "recordsDeletedLastRun": 0,
                "recordsDeletedTotal": int(before.get(name, {}).get("recordsDeletedTotal", 0)),
                "note": f"skipped: {why}",
            }
        )
    ranked = sorted(out, key=lambda t: (-int(t.get("recordsDeletedTotal", 0)), t["name"]))
    return ranked[:MAX_TOPICS_LISTED]


MAX_GROUPS_LISTED = 100


def group_summary(
    rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """One entry per group the plan read (spec.deleteConsumed and spec.notify): the type
    it was read as (consumer, classic, share, streams, or none: no group of that id), on
    how many planned partitions it has a position (a commit, or a share group's start
    offset), and how many records it is behind there (high watermark minus position)."""
    per: dict[str, dict[str, Any]] = {
        g: {"name": g, "type": t, "partitions": 0, "withPosition": 0, "recordsBehind": 0}
        for g, t in sorted(types.items())
    }
    for row in rows:
        for g in row.get("groups") or []:
            entry = per.get(g["group"])
            if entry is None:
                continue
            entry["partitions"] += 1
            position = g["committedOffset"]
            if position is not None and row.get("highWatermark") is not None:
                entry["withPosition"] += 1
                entry["recordsBehind"] += max(0, int(row["highWatermark"]) - int(position))
    return list(per.values())[:MAX_GROUPS_LISTED]


def groups_line(summary: Sequence[Mapping[str, Any]], limit: int = 5) -> str:
    """`kubectl get`'s Groups column: each group with the type it was read as."""
    shown = [f"{g['name']} ({g['type']})" for g in summary[:limit]]
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


def deleted(
    rows: Sequence[Mapping[str, Any]], moved: Mapping[TopicPartition, tuple[int, int]]
) -> Deleted:
    """Records each log start moved past, and bytes by the plan's estimate for its row."""
    by_row = {(r["topic"], r["partition"]): r for r in rows}
    out = Deleted()
    for tp, (before, after) in moved.items():
        n = max(0, after - before)
        out.records += n
        out.by_topic[tp.topic] = out.by_topic.get(tp.topic, 0) + n
        out.partitions_cut += 1 if after > before else 0
        row = by_row[(tp.topic, tp.partition)]
        if row.get("recordsToDelete") and row.get("bytesToDeleteEstimate") is not None:
            out.bytes_estimate += int(row["bytesToDeleteEstimate"] * n / row["recordsToDelete"])
    return out


def run_status(
    status: Mapping[str, Any],
    generation: int | None,
    spec: PolicySpec,
    plan: PolicyPlan,
    rows: Sequence[Mapping[str, Any]],
    moved: Mapping[TopicPartition, tuple[int, int]],
    done: Deleted,
    lost: Sequence[Mapping[str, Any]],
    notes: Mapping[str, str],
    groups: Sequence[Mapping[str, Any]],
    *,
    started: datetime,
    finished: datetime,
    next_run: datetime,
    degraded: str,
    held: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The status a completed run writes (besides its watches' fields and conditions).
    `held`: who held the cuts back, per topic (status.topics[].heldBackBy)."""
    return {
        "observedGeneration": generation,
        "consecutiveFailures": 0,
        "topicCount": len({r["topic"] for r in rows} | set(plan.skipped)),
        "recordsDeletedTotal": int(status.get("recordsDeletedTotal") or 0) + done.records,
        "nextRunAt": cond.timestamp(next_run),
        "lastRun": {
            "startedAt": cond.timestamp(started),
            "completedAt": cond.timestamp(finished),
            "partitionsPlanned": len(plan.rows),
            "partitionsCut": done.partitions_cut,
            "recordsDeleted": done.records,
            "bytesReclaimedEstimate": done.bytes_estimate,
            "unconsumedDeleted": list(lost[:MAX_LOSSES_LISTED]),
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
        ),
        "groups": list(groups),
        "groupsRead": groups_line(groups) or None,
    }
