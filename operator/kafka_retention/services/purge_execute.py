"""Apply a stored RecordPurge plan: re-read offsets and committed offsets, lower any cut
that must be lowered (never raise one), delete, and read the log starts back.

Executing the same plan twice is safe: a cut at or below the current log start is done
already (or a no-op), so a retry or a restart simply runs the stored plan again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.purge import PartitionPlan, PurgeRequest, recheck
from kafka_retention.core.purge_states import State
from kafka_retention.core.topics import POLICY_VIOLATION
from kafka_retention.services.cutting import delete_and_verify
from kafka_retention.services.ports import KafkaPlanner
from kafka_retention.services.purge_facts import read_partition_facts, tp_of


def execute(
    kafka: KafkaPlanner, request: PurgeRequest, entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The entries, updated in place with what happened to each pending partition."""
    pending = {tp_of(e): e for e in entries if e["state"] in (State.PLANNED, State.RETRYING)}
    if not pending:
        return entries
    errors: dict[TopicPartition, str] = {}
    fresh = read_partition_facts(kafka, request, list(pending), errors)
    for tp, message in errors.items():
        pending[tp] |= {"state": str(State.FAILED), "error": message}
    cuts: dict[TopicPartition, int] = {}
    for tp, facts in fresh.items():
        item = pending[tp]
        planned = PartitionPlan(
            tp,
            item["logStartBefore"],
            item["highWatermark"],
            item["requestedOffset"],
            item.get("reason", ""),
        )
        safe = recheck(request, planned, facts)
        if safe.target < planned.target:
            item["note"] = "; ".join(
                filter(
                    None,
                    [item.get("note"), f"lowered from {planned.target} at purge time", *safe.notes],
                )
            )
            item["requestedOffset"] = safe.target
        if safe.target <= facts.log_start:
            purged(item, facts.log_start)  # nothing left to do: done before, or a no-op
        else:
            cuts[tp] = safe.target
    for tp, applied in delete_and_verify(kafka, cuts).items():
        item = pending[tp]
        if applied.failure is not None:
            failed(item, applied.failure)
        elif applied.done and applied.log_start_after is not None:
            purged(item, applied.log_start_after)
        else:
            item |= {"state": str(State.RETRYING), "error": applied.unverified}
    return entries


def purged(item: dict[str, Any], low_watermark: int) -> None:
    item.pop("error", None)
    deleted = max(0, min(low_watermark, item["requestedOffset"]) - item["logStartBefore"])
    item |= {"state": str(State.PURGED), "lowWatermark": low_watermark, "recordsDeleted": deleted}


def failed(item: dict[str, Any], failure: KafkaFailure) -> None:
    message = str(failure)
    if failure.code == POLICY_VIOLATION:
        message += " (the topic's cleanup.policy does not include delete)"
    state = State.RETRYING if failure.retriable else State.FAILED
    item |= {"state": str(state), "error": message}


def estimate(kafka: KafkaPlanner, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A dry run's entries: what each cut would delete, with bytes estimated from a sample
    of records at the log start."""
    ranges = {
        tp_of(e): (e["logStartBefore"], e["requestedOffset"])
        for e in entries
        if e["state"] == State.PLANNED and e["recordsToDelete"] > 0
    }
    averages: Mapping[TopicPartition, float] = kafka.average_record_bytes(ranges)
    out = []
    for e in entries:
        item = dict(e)
        if item["state"] == State.PLANNED:
            item["state"] = str(State.DRY_RUN)
            avg = averages.get(tp_of(item))
            if avg is not None:
                item["bytesToDeleteEstimate"] = int(avg * item["recordsToDelete"])
        out.append(item)
    return out
