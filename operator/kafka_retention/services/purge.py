"""RecordPurge reconciliation: plan, persist the plan, delete, verify, report.

The status is the purge's memory. The plan is written there before anything is deleted;
a run that finds a plan (after a restart or a retry) executes that plan and never
re-plans, so `offset: -1` or a group's offset that moved on cannot widen a purge after
the fact. Each run re-reads offsets and committed offsets right before deleting and may
only lower a planned cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from kafka_retention.adapters.kafka import KafkaFailure, KafkaUnavailable
from kafka_retention.adapters.kube import SecretUnavailable
from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.purge import (
    UNKNOWN_TOPIC_OR_PARTITION,
    PartitionPlan,
    PlanInput,
    PurgeRequest,
    parse_spec,
    plan_purge,
    recheck,
)
from kafka_retention.core.specs import SpecError
from kafka_retention.core.topics import POLICY_VIOLATION, delete_refusal
from kafka_retention.services.cutting import delete_and_verify
from kafka_retention.services.fresh import raise_if_retriable, read_facts
from kafka_retention.services.ports import KafkaPlanner, StatusStore

FINAL_PHASES = frozenset({"Succeeded", "PartiallySucceeded", "Failed"})
# Past this many results, successful partitions are folded into one entry per topic;
# failures are always listed one by one.
MAX_LISTED_RESULTS = 1000
# The stored plan lives in status.results until the purge ends (the CRD caps the list);
# a larger purge is refused before anything is deleted rather than run without a plan.
MAX_PLANNED_PARTITIONS = 10_000


class State(StrEnum):
    PLANNED = "Planned"
    PURGED = "Purged"
    RETRYING = "Retrying"
    FAILED = "Failed"
    DRY_RUN = "DryRun"


class Retry(Exception):
    """Not done yet; run again after `delay` seconds. The status says what is pending."""

    def __init__(self, message: str, delay: float) -> None:
        super().__init__(message)
        self.delay = delay


@dataclass
class Outcome:
    """What a run did, for the handler's events and metrics."""

    phase: str
    message: str
    finished: bool = False
    failures: list[str] = field(default_factory=list)
    records_deleted: int = 0
    partitions_purged: int = 0
    topics_deleted: dict[str, int] = field(default_factory=dict)
    invalid_field: str | None = None


@dataclass
class Purge:
    """One RecordPurge object, as the service needs it."""

    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    generation: int | None
    store: StatusStore
    connect: Callable[[PurgeRequest], KafkaPlanner]
    now: Callable[[], datetime]
    retry_delay: float = 10.0


def reconcile(p: Purge) -> Outcome:
    phase = p.status.get("phase")
    if phase in FINAL_PHASES:
        return Outcome(str(phase), "already complete")
    try:
        request = parse_spec(p.spec)
    except SpecError as err:
        return _invalid(p, err)
    conditions = p.status.get("conditions")
    base = {
        "observedGeneration": p.generation,
        "startedAt": p.status.get("startedAt") or cond.timestamp(p.now()),
    }
    try:
        kafka = p.connect(request)
        entries = _planned_entries(p.status)
        if entries is None:
            phase = "Planning"
            p.store.patch({**base, "phase": phase})
            entries = _plan(kafka, request)
            if len(entries) > MAX_PLANNED_PARTITIONS and not request.dry_run:
                return _too_large(p, len(entries))
            if request.dry_run:
                return _finish(p, base, conditions, _estimate(kafka, entries), dry_run=True)
            # From here on the stored plan is what runs: a failure below must leave the
            # phase at Purging, or the next run would plan anew from newer offsets.
            phase = "Purging"
            p.store.patch(
                {
                    **base,
                    "phase": phase,
                    "results": entries,
                    "summary": _summary(entries),
                    "conditions": _ready(
                        conditions, p, "True", Reason.PLANNED, f"planned {len(entries)} partitions"
                    ),
                }
            )
        entries = _execute(kafka, request, entries)
    except (KafkaUnavailable, SecretUnavailable) as err:
        reason = (
            Reason.SECRET_UNAVAILABLE
            if isinstance(err, SecretUnavailable)
            else Reason.KAFKA_UNAVAILABLE
        )
        p.store.patch(
            {
                **base,
                "phase": phase or "Pending",
                "conditions": _ready(conditions, p, "False", reason, str(err)),
            }
        )
        raise Retry(f"{reason}: {err}", p.retry_delay) from err
    retrying = [e for e in entries if e["state"] == State.RETRYING]
    if retrying:
        p.store.patch(
            {**base, "phase": "Purging", "results": entries, "summary": _summary(entries)}
        )
        names = ", ".join(f"{e['topic']}-{e['partition']}" for e in retrying[:10])
        raise Retry(
            f"{len(retrying)} partitions still pending ({names}): {retrying[0].get('error')}",
            p.retry_delay,
        )
    return _finish(p, base, conditions, entries, dry_run=False)


def _invalid(p: Purge, err: SpecError) -> Outcome:
    outcome = _refuse(p, Reason.INVALID_SPEC, str(err), partitions=0)
    outcome.invalid_field = err.field
    return outcome


def _too_large(p: Purge, planned: int) -> Outcome:
    message = (
        f"the purge covers {planned} partitions; at most {MAX_PLANNED_PARTITIONS} fit "
        "in one RecordPurge's stored plan: split it into several; nothing was deleted"
    )
    return _refuse(p, Reason.TOO_MANY_PARTITIONS, message, partitions=planned)


def _refuse(p: Purge, reason: Reason, message: str, partitions: int) -> Outcome:
    """End the purge as Failed before anything was deleted, saying why in both conditions."""
    now = p.now()
    conditions = _ready(p.status.get("conditions"), p, "False", reason, message)
    conditions = cond.set_condition(
        conditions, "Succeeded", "False", reason, message, p.generation, now
    )
    p.store.patch(
        {
            "phase": "Failed",
            "observedGeneration": p.generation,
            "completedAt": cond.timestamp(now),
            "conditions": conditions,
            "summary": {
                "partitions": partitions,
                "purged": 0,
                "failed": partitions,
                "recordsDeleted": 0,
            },
        }
    )
    return Outcome("Failed", message, finished=True, failures=[message])


def _ready(
    conditions: Any, p: Purge, status: cond.ConditionStatus, reason: Reason, message: str
) -> list[dict[str, Any]]:
    return cond.set_condition(conditions, "Ready", status, reason, message, p.generation, p.now())


# --- planning -------------------------------------------------------------------------


def _plan(kafka: KafkaPlanner, request: PurgeRequest) -> list[dict[str, Any]]:
    given = gather_facts(kafka, request)
    return [_entry(plan) for plan in plan_purge(request, given)]


def gather_facts(kafka: KafkaPlanner, request: PurgeRequest) -> PlanInput:
    """Every fact the plan depends on, read now. Retriable trouble aborts the whole read
    (KafkaUnavailable) so that nothing is ever planned from a partial picture."""
    given = PlanInput()
    topics = sorted(request.topic_names())
    for topic, parts in kafka.topic_partitions(topics).items():
        if isinstance(parts, KafkaFailure):
            raise_if_retriable(parts)
            given.topic_errors[topic] = str(parts)
        else:
            given.topic_partitions[topic] = parts
    existing = [t for t in topics if t in given.topic_partitions]
    for topic, config in kafka.topic_configs(existing).items():
        if isinstance(config, KafkaFailure):
            raise_if_retriable(config)
            given.topic_errors[topic] = str(config)
            continue
        refusal = delete_refusal(topic, config)
        if refusal is not None:
            given.topic_errors[topic] = refusal
    tps: list[TopicPartition] = []
    for cut in request.partitions:
        known = given.topic_partitions.get(cut.tp.topic)
        if known is not None and cut.tp.partition not in known:
            given.partition_errors[cut.tp] = (
                f"{UNKNOWN_TOPIC_OR_PARTITION}: topic {cut.tp.topic} has no partition "
                f"{cut.tp.partition} (it has {len(known)})"
            )
        elif known is not None:
            tps.append(cut.tp)
    for tcut in request.topics:
        if tcut.topic not in given.topic_errors:
            tps += [
                TopicPartition(tcut.topic, p) for p in given.topic_partitions.get(tcut.topic, [])
            ]
    by_timestamp: dict[int, list[TopicPartition]] = {}
    for tcut in request.topics:
        if tcut.timestamp_ms is not None and tcut.topic not in given.topic_errors:
            by_timestamp.setdefault(tcut.timestamp_ms, []).extend(
                tp for tp in tps if tp.topic == tcut.topic
            )
    for_times: dict[TopicPartition, dict[int, int | None]] = {}
    for ts, ts_tps in by_timestamp.items():
        for tp, off in kafka.offsets_for_timestamp(ts_tps, ts).items():
            if isinstance(off, KafkaFailure):
                raise_if_retriable(off)
                given.partition_errors[tp] = str(off)
            else:
                for_times.setdefault(tp, {})[ts] = off if off >= 0 else None
    given.facts = read_partition_facts(kafka, request, tps, given.partition_errors)
    for tp, fact in given.facts.items():
        if tp in for_times:
            given.facts[tp] = replace(fact, offsets_for_times=for_times[tp])
    return given


def read_partition_facts(
    kafka: KafkaPlanner,
    request: PurgeRequest,
    tps: Sequence[TopicPartition],
    errors: dict[TopicPartition, str],
) -> dict[TopicPartition, PartitionFacts]:
    """Log start, high watermark and the guard groups' committed offsets, read now."""
    facts, failed = read_facts(kafka, tps, lambda tp: request.guard_groups(tp.topic))
    errors.update(failed)
    return facts


def _entry(plan: PartitionPlan) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "topic": plan.tp.topic,
        "partition": plan.tp.partition,
        "state": str(State.FAILED if plan.error else State.PLANNED),
    }
    if plan.error:
        entry["error"] = plan.error
    else:
        entry |= {
            "requestedOffset": plan.target,
            "logStartBefore": plan.log_start,
            "highWatermark": plan.high_watermark,
            "recordsToDelete": plan.records_to_delete,
            "reason": plan.reason,
        }
    if plan.notes:
        entry["note"] = "; ".join(plan.notes)
    return entry


def _estimate(kafka: KafkaPlanner, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ranges = {
        _tp(e): (e["logStartBefore"], e["requestedOffset"])
        for e in entries
        if e["state"] == State.PLANNED and e["recordsToDelete"] > 0
    }
    averages = kafka.average_record_bytes(ranges)
    out = []
    for e in entries:
        e = dict(e)
        if e["state"] == State.PLANNED:
            e["state"] = str(State.DRY_RUN)
            avg = averages.get(_tp(e))
            if avg is not None:
                e["bytesToDeleteEstimate"] = int(avg * e["recordsToDelete"])
        out.append(e)
    return out


def _tp(entry: Mapping[str, Any]) -> TopicPartition:
    return TopicPartition(str(entry["topic"]), int(entry["partition"]))


def _planned_entries(status: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    if status.get("phase") != "Purging" or not status.get("results"):
        return None
    return [dict(e) for e in status["results"]]


# --- executing ------------------------------------------------------------------------


def _execute(
    kafka: KafkaPlanner, request: PurgeRequest, entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    pending = {_tp(e): e for e in entries if e["state"] in (State.PLANNED, State.RETRYING)}
    if not pending:
        return entries
    errors: dict[TopicPartition, str] = {}
    fresh = read_partition_facts(kafka, request, list(pending), errors)
    for tp, message in errors.items():
        pending[tp] |= {"state": str(State.FAILED), "error": message}
    cuts: dict[TopicPartition, int] = {}
    for tp, facts in fresh.items():
        e = pending[tp]
        planned = PartitionPlan(
            tp, e["logStartBefore"], e["highWatermark"], e["requestedOffset"], e.get("reason", "")
        )
        safe = recheck(request, planned, facts)
        if safe.target < planned.target:
            e["note"] = "; ".join(
                filter(
                    None,
                    [e.get("note"), f"lowered from {planned.target} at purge time", *safe.notes],
                )
            )
            e["requestedOffset"] = safe.target
        if safe.target <= facts.log_start:
            _purged(e, facts.log_start)  # nothing left to do: done before, or a no-op
        else:
            cuts[tp] = safe.target
    for tp, applied in delete_and_verify(kafka, cuts).items():
        e = pending[tp]
        if applied.failure is not None:
            _failed(e, applied.failure)
        elif applied.done and applied.log_start_after is not None:
            _purged(e, applied.log_start_after)
        else:
            e |= {"state": str(State.RETRYING), "error": applied.unverified}
    return entries


def _purged(entry: dict[str, Any], low_watermark: int) -> None:
    entry.pop("error", None)
    deleted = max(0, min(low_watermark, entry["requestedOffset"]) - entry["logStartBefore"])
    entry |= {"state": str(State.PURGED), "lowWatermark": low_watermark, "recordsDeleted": deleted}


def _failed(entry: dict[str, Any], failure: KafkaFailure) -> None:
    message = str(failure)
    if failure.code == POLICY_VIOLATION:
        message += " (the topic's cleanup.policy does not include delete)"
    entry |= {"state": str(State.RETRYING if failure.retriable else State.FAILED), "error": message}


# --- reporting ------------------------------------------------------------------------


def _summary(entries: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    summary = {
        "partitions": sum(1 for e in entries if e["partition"] >= 0 or e["state"] == "Failed"),
        "purged": sum(1 for e in entries if e["state"] == State.PURGED),
        "failed": sum(1 for e in entries if e["state"] == State.FAILED),
        "recordsDeleted": sum(int(e.get("recordsDeleted", 0)) for e in entries),
    }
    if any(e["state"] == State.DRY_RUN for e in entries):
        summary["recordsToDelete"] = sum(int(e.get("recordsToDelete", 0)) for e in entries)
        summary["bytesToDeleteEstimate"] = sum(
            int(e.get("bytesToDeleteEstimate", 0)) for e in entries
        )
    return summary


def fold_results(
    entries: Sequence[Mapping[str, Any]], limit: int = MAX_LISTED_RESULTS
) -> list[dict[str, Any]]:
    """Keep status bounded: every failure listed, successes per topic once past `limit`."""
    if len(entries) <= limit:
        return [dict(e) for e in entries]
    failures = [dict(e) for e in entries if e["state"] == State.FAILED]
    folded: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e["state"] == State.FAILED:
            continue
        agg = folded.setdefault(
            str(e["topic"]),
            {
                "topic": e["topic"],
                "partition": -1,
                "state": e["state"],
                "recordsDeleted": 0,
                "recordsToDelete": 0,
                "partitions": 0,
            },
        )
        agg["partitions"] += 1
        agg["recordsDeleted"] += int(e.get("recordsDeleted", 0))
        agg["recordsToDelete"] += int(e.get("recordsToDelete", 0))
    for agg in folded.values():
        agg["note"] = f"summary of {agg.pop('partitions')} partitions"
    return failures + list(folded.values())


def _finish(
    p: Purge,
    base: Mapping[str, Any],
    conditions: Any,
    entries: list[dict[str, Any]],
    *,
    dry_run: bool,
) -> Outcome:
    summary = _summary(entries)
    failed, total = summary["failed"], summary["partitions"]
    ok: cond.ConditionStatus
    if dry_run:
        phase, ok, reason = "Succeeded", "True", Reason.DRY_RUN_COMPLETED
        message = (
            f"dry run: would delete {summary.get('recordsToDelete', 0)} records "
            f"(~{summary.get('bytesToDeleteEstimate', 0)} bytes) from {total} "
            "partitions; nothing deleted"
        )
    elif failed == 0:
        phase, ok = "Succeeded", "True"
        reason = Reason.PURGED if summary["recordsDeleted"] else Reason.NOTHING_TO_DELETE
        message = f"deleted {summary['recordsDeleted']} records from {total} partitions"
    else:
        phase = "Failed" if failed == total else "PartiallySucceeded"
        ok = "False"
        reason = Reason.FAILED if failed == total else Reason.PARTIALLY_FAILED
        first = next(e for e in entries if e["state"] == State.FAILED)
        message = (
            f"{failed} of {total} partitions failed, first "
            f"{first['topic']}-{first['partition']}: {first.get('error')}; "
            f"deleted {summary['recordsDeleted']} records"
        )
    now = p.now()
    conds = _ready(
        conditions,
        p,
        "True",
        Reason.PLANNED,
        "plan computed and applied" if not dry_run else "plan computed",
    )
    conds = cond.set_condition(conds, "Succeeded", ok, reason, message, p.generation, now)
    p.store.patch(
        {
            **base,
            "phase": phase,
            "completedAt": cond.timestamp(now),
            "results": fold_results(entries),
            "summary": summary,
            "conditions": conds,
        }
    )
    topics: dict[str, int] = {}
    for e in entries:
        if e.get("recordsDeleted"):
            topics[e["topic"]] = topics.get(e["topic"], 0) + int(e["recordsDeleted"])
    return Outcome(
        phase,
        message,
        finished=True,
        failures=[
            f"{e['topic']}-{e['partition']}: {e.get('error')}"
            for e in entries
            if e["state"] == State.FAILED
        ],
        records_deleted=summary["recordsDeleted"],
        partitions_purged=summary["purged"],
        topics_deleted=topics,
    )
