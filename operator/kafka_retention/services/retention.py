"""RetentionPolicy reconciliation: plan with the Spark pipeline, check every cut again with
fresh offsets through the same planning core, delete, verify, and report.

Safety, in order: nothing is deleted on an invalid spec or from a failed read; a planned
cut is re-checked against offsets and committed offsets read just before DeleteRecords
and may only be lowered there; where policies overlap on a partition the smallest cut
wins; dryRun deletes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from kafka_retention.adapters.kafka import KafkaUnavailable
from kafka_retention.adapters.kube import SecretUnavailable
from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.policy import plan_partition
from kafka_retention.core.policy_spec import PolicySpec, parse_policy_spec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.cutting import delete_and_verify
from kafka_retention.services.fresh import read_facts
from kafka_retention.services.ports import KafkaCutter, StatusStore

MAX_TOPICS_LISTED = 500
MAX_LOSSES_LISTED = 100


class Planned(Protocol):
    rows: list[dict[str, Any]]
    skipped: dict[str, str]


# --- overlapping policies ---------------------------------------------------------------


class OverlapRegistry:
    """The latest planned cut of every policy per partition, in this operator process.

    When two policies on the same cluster cut the same partition, each applies the smaller
    of its own cut and the other's latest: the more conservative cut wins for both.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cuts: dict[tuple[str, str, int], dict[str, int]] = {}

    def record(self, cluster: str, policy: str, cuts: Mapping[TopicPartition, int]) -> None:
        with self._lock:
            for entry in self._cuts.values():
                entry.pop(policy, None)
            for tp, offset in cuts.items():
                self._cuts.setdefault((cluster, tp.topic, tp.partition), {})[policy] = offset

    def forget(self, policy: str) -> None:
        with self._lock:
            for entry in self._cuts.values():
                entry.pop(policy, None)

    def others(self, cluster: str, policy: str, tp: TopicPartition) -> dict[str, int]:
        with self._lock:
            entry = self._cuts.get((cluster, tp.topic, tp.partition), {})
            return {p: o for p, o in entry.items() if p != policy}


OVERLAPS = OverlapRegistry()


# --- the run ------------------------------------------------------------------------------


class PlanFailed(RuntimeError):
    """The plan job failed (a Spark task error, a scan that timed out); nothing is deleted
    and the run is tried again after the retry delay."""


def _first_line(err: BaseException) -> str:
    """Spark wraps executor errors in long Java traces; the cause's own line is enough."""
    text = str(err)
    for line in text.splitlines():
        if "KafkaUnavailable" in line or "Error:" in line or "Exception:" in line:
            return line.strip()[:500]
    return (text.splitlines() or [type(err).__name__])[0][:500]


@dataclass
class Policy:
    key: str  # namespace/name
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    generation: int | None
    store: StatusStore
    client_config: Callable[[PolicySpec], dict[str, str]]
    connect: Callable[[PolicySpec, dict[str, str]], KafkaCutter]
    plan: Callable[[PolicySpec, dict[str, str], int], Planned]
    now: Callable[[], datetime]
    overlaps: OverlapRegistry = field(default_factory=lambda: OVERLAPS)


@dataclass
class RunOutcome:
    ok: bool
    message: str
    next_run_in: float
    invalid_field: str | None = None
    records_deleted: int = 0
    bytes_reclaimed: int = 0
    partitions_cut: int = 0
    deleted_by_topic: dict[str, int] = field(default_factory=dict)
    losses: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def run_policy(p: Policy, retry_delay: float = 15.0) -> RunOutcome:
    started = p.now()
    try:
        spec = parse_policy_spec(p.spec)
    except SpecError as err:
        p.store.patch(
            {
                "observedGeneration": p.generation,
                "conditions": _conds(p, "False", Reason.INVALID_SPEC, str(err), degraded=None),
            }
        )
        p.overlaps.forget(p.key)
        return RunOutcome(False, str(err), next_run_in=0, invalid_field=err.field)
    interval = spec.interval_ms / 1000
    try:
        config = p.client_config(spec)
        try:
            planned = p.plan(spec, config, int(started.timestamp() * 1000))
        except (KafkaUnavailable, SecretUnavailable):
            raise
        except Exception as err:
            raise PlanFailed(_first_line(err)) from err
        kafka = p.connect(spec, config)
        rows = [r for r in planned.rows if not r.get("error")]
        failures = [
            f"{r['topic']}-{r['partition']}: {r['error']}" for r in planned.rows if r.get("error")
        ]
        cuts, notes = _safe_cuts(p, spec, kafka, rows, started)
        deleted, delete_failures = _delete(kafka, cuts, spec.dry_run)
        failures += delete_failures
    except (KafkaUnavailable, SecretUnavailable, PlanFailed) as err:
        reason = (
            Reason.SECRET_UNAVAILABLE
            if isinstance(err, SecretUnavailable)
            else Reason.PLAN_FAILED
            if isinstance(err, PlanFailed)
            else Reason.KAFKA_UNAVAILABLE
        )
        delay = min(retry_delay, interval)
        p.store.patch(
            {
                "observedGeneration": p.generation,
                "nextRunAt": cond.timestamp(started + timedelta(seconds=delay)),
                "lastRun": {**(p.status.get("lastRun") or {}), "error": str(err)},
                "conditions": _conds(p, "False", reason, str(err), degraded=None),
            }
        )
        return RunOutcome(False, f"{reason}: {err}", next_run_in=delay)

    finished = p.now()
    by_row = {(r["topic"], r["partition"]): r for r in rows}
    records = bytes_ = 0
    by_topic: dict[str, int] = {}
    for tp, (before, after) in deleted.items():
        n = max(0, after - before)
        records += n
        by_topic[tp.topic] = by_topic.get(tp.topic, 0) + n
        row = by_row[(tp.topic, tp.partition)]
        if row.get("recordsToDelete") and row.get("bytesToDeleteEstimate") is not None:
            bytes_ += int(row["bytesToDeleteEstimate"] * n / row["recordsToDelete"])
    partitions_cut = sum(1 for before, after in deleted.values() if after > before)
    losses = _losses(rows, cuts, deleted, spec)
    topics = _topic_summary(p, spec, planned, rows, deleted, by_topic, notes)
    total = int(p.status.get("recordsDeletedTotal") or 0) + records
    degraded = bool(failures)
    if spec.dry_run:
        would = sum(target - before for before, target in cuts.values())
        message = f"dry run: would delete {would} records from {len(cuts)} partitions"
    else:
        message = f"deleted {records} records from {len(by_topic)} topics"
    p.store.patch(
        {
            "observedGeneration": p.generation,
            "topicCount": len({r["topic"] for r in rows} | set(planned.skipped)),
            "recordsDeletedTotal": total,
            "nextRunAt": cond.timestamp(finished + timedelta(seconds=interval)),
            "lastRun": {
                "startedAt": cond.timestamp(started),
                "completedAt": cond.timestamp(finished),
                "partitionsPlanned": len(planned.rows),
                "partitionsCut": partitions_cut,
                "recordsDeleted": records,
                "bytesReclaimedEstimate": bytes_,
                "unconsumedDeleted": losses[:MAX_LOSSES_LISTED],
                # A merge patch keeps fields it does not name: null clears an old error.
                "error": "; ".join(failures[:5]) if failures else None,
            },
            "topics": topics[:MAX_TOPICS_LISTED],
            "conditions": _conds(
                p,
                "True",
                Reason.PLANNED,
                message,
                degraded="; ".join(failures[:5]) if degraded else "",
            ),
        }
    )
    return RunOutcome(
        True,
        message,
        next_run_in=interval,
        records_deleted=records,
        bytes_reclaimed=bytes_,
        partitions_cut=partitions_cut,
        deleted_by_topic=by_topic,
        losses=losses,
        failures=failures,
    )


def _conds(
    p: Policy, ready: cond.ConditionStatus, reason: Reason, message: str, degraded: str | None
) -> list[dict[str, Any]]:
    now = p.now()
    out = cond.set_condition(
        p.status.get("conditions"), "Ready", ready, reason, message, p.generation, now
    )
    if degraded is not None:
        out = cond.set_condition(
            out,
            "Degraded",
            "True" if degraded else "False",
            Reason.PARTIALLY_FAILED if degraded else Reason.PLANNED,
            degraded or "every partition planned and applied",
            p.generation,
            now,
        )
    return out


def _safe_cuts(
    p: Policy, spec: PolicySpec, kafka: KafkaCutter, rows: Sequence[dict[str, Any]], now: datetime
) -> tuple[dict[TopicPartition, tuple[int, int]], dict[str, str]]:
    """(log start, cut) per partition worth cutting, after the fresh re-check and the
    overlap rule; plus a note per topic where another policy held a cut back."""
    wanted = {
        TopicPartition(r["topic"], r["partition"]): r
        for r in rows
        if r["targetOffset"] is not None and r["targetOffset"] > r["logStartOffset"]
    }
    cluster = spec.bootstrap_servers
    planned = {
        TopicPartition(r["topic"], r["partition"]): r["targetOffset"]
        for r in rows
        if r["targetOffset"] is not None
    }
    p.overlaps.record(cluster, p.key, planned)
    notes: dict[str, str] = {}
    for tp in planned:
        others = p.overlaps.others(cluster, p.key, tp)
        if others:
            notes[tp.topic] = (
                f"overlaps with policy {', '.join(sorted(others))} on this "
                "topic: the more conservative cut applies to both"
            )
    if not wanted:
        return {}, notes
    groups = spec.rules.groups()
    fresh_facts, errors = read_facts(kafka, list(wanted), lambda _tp: groups)
    if errors:
        tp, problem = next(iter(errors.items()))
        raise KafkaUnavailable(f"fresh offsets of {tp}: {problem}")
    now_ms = int(now.timestamp() * 1000)
    cuts: dict[TopicPartition, tuple[int, int]] = {}
    for tp, row in wanted.items():
        facts = fresh_facts[tp]
        times = {int(k): v for k, v in (row.get("timeOffsets") or {}).items()}
        fresh = plan_partition(replace(facts, offsets_for_times=times), spec.rules, now_ms)
        target = min(int(row["targetOffset"]), fresh.target)
        others = p.overlaps.others(cluster, p.key, tp)
        if others:
            target = min(target, *others.values())
        if target > facts.log_start:
            cuts[tp] = (facts.log_start, target)
    return cuts, notes


def _delete(
    kafka: KafkaCutter, cuts: Mapping[TopicPartition, tuple[int, int]], dry_run: bool
) -> tuple[dict[TopicPartition, tuple[int, int]], list[str]]:
    """(log start before, after) per partition; dry runs and failures move nothing."""
    if dry_run or not cuts:
        return {tp: (b, b) for tp, (b, _) in cuts.items()}, []
    out: dict[TopicPartition, tuple[int, int]] = {}
    failures = []
    applied = delete_and_verify(kafka, {tp: target for tp, (_, target) in cuts.items()})
    for tp, (before, _) in cuts.items():
        result = applied[tp]
        if result.failure is not None:
            failures.append(f"{tp}: {result.failure}")
            out[tp] = (before, before)
        elif result.log_start_after is not None:
            out[tp] = (before, result.log_start_after)
        else:
            failures.append(f"{tp}: {result.unverified}")
            out[tp] = (before, before)
    return out, failures


def _losses(
    rows: Sequence[dict[str, Any]],
    cuts: Mapping[TopicPartition, tuple[int, int]],
    deleted: Mapping[TopicPartition, tuple[int, int]],
    spec: PolicySpec,
) -> list[dict[str, Any]]:
    """Records deleted (or, in a dry run, to be deleted) that a deleteConsumed group had
    not read: only maxRetention and deleteBefore can cause that."""
    per: dict[tuple[str, str], int] = {}
    for row in rows:
        tp = TopicPartition(row["topic"], row["partition"])
        if tp not in cuts:
            continue
        before, after = deleted.get(tp, cuts[tp])
        applied = cuts[tp][1] if spec.dry_run else after
        for g in row.get("groups") or []:
            if g["group"] not in spec.rules.consumed_groups:
                continue
            read_to = max(
                before, g["committedOffset"] if g["committedOffset"] is not None else before
            )
            lost = max(0, applied - read_to)
            if lost:
                per[(g["group"], tp.topic)] = per.get((g["group"], tp.topic), 0) + lost
    return [{"group": g, "topic": t, "records": n} for (g, t), n in sorted(per.items())]


def _topic_summary(
    p: Policy,
    spec: PolicySpec,
    planned: Planned,
    rows: Sequence[dict[str, Any]],
    deleted: Mapping[TopicPartition, tuple[int, int]],
    deleted_by_topic: Mapping[str, int],
    notes: Mapping[str, str],
) -> list[dict[str, Any]]:
    previous = {t["name"]: t for t in p.status.get("topics") or []}
    per: dict[str, dict[str, Any]] = {}
    for row in rows:
        t = per.setdefault(row["topic"], {"name": row["topic"], "partitions": 0, "logStartLag": 0})
        t["partitions"] += 1
        committed = [
            g["committedOffset"]
            for g in row.get("groups") or []
            if g["group"] in spec.rules.consumed_groups
        ]
        if committed and None not in committed:
            slowest = min(c for c in committed if c is not None)
            tp = TopicPartition(row["topic"], row["partition"])
            start_now = deleted[tp][1] if tp in deleted else row["logStartOffset"]
            t["logStartLag"] += max(0, slowest - start_now)
    out = []
    for name, t in per.items():
        last = deleted_by_topic.get(name, 0)
        t["recordsDeletedLastRun"] = last
        t["recordsDeletedTotal"] = int(previous.get(name, {}).get("recordsDeletedTotal", 0)) + last
        if name in notes:
            t["note"] = notes[name]
        out.append(t)
    for name, why in planned.skipped.items():
        out.append(
            {
                "name": name,
                "partitions": 0,
                "recordsDeletedLastRun": 0,
                "recordsDeletedTotal": int(previous.get(name, {}).get("recordsDeletedTotal", 0)),
                "note": f"skipped: {why}",
            }
        )
    return sorted(out, key=lambda t: (-int(t.get("recordsDeletedTotal", 0)), t["name"]))
