"""Stages 4 to 6 of a RecordPurge: re-check each stored cut with offsets and group
positions read now (a cut is only ever lowered, never raised), delete, and fold what
each partition's answer says into its entry.

Executing the same plan twice is safe: a cut at or below the current log start is done
already (or a no-op), so a retry or a restart simply runs the stored plan again.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.purge import PurgeRequest, recheck
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import State
from kafka_retention.core.topics import POLICY_VIOLATION
from kafka_retention.services.cutting import Applied, delete_and_verify
from kafka_retention.services.fresh import read_facts
from kafka_retention.services.ports import KafkaCutter, KafkaPlanner


def execute(
    kafka: KafkaCutter, request: PurgeRequest, entries: list[PurgeEntry]
) -> list[PurgeEntry]:
    """The entries, with what happened to each pending partition."""
    pending = {e.tp: e for e in entries if e.pending}
    if not pending:
        return entries
    fresh = read_facts(kafka, list(pending), lambda tp: request.guard_groups(tp.topic))
    done: dict[TopicPartition, PurgeEntry] = {
        tp: pending[tp].failed(message) for tp, message in fresh.errors.items()
    }
    cuts: dict[TopicPartition, int] = {}
    for tp, facts in fresh.facts.items():
        entry = _rechecked(request, pending[tp], facts)
        if entry.target <= facts.log_start:
            done[tp] = entry.purged(facts.log_start)  # nothing left: done before, or a no-op
        else:
            done[tp] = entry
            cuts[tp] = entry.target
    for tp, applied in delete_and_verify(kafka, cuts).items():
        done[tp] = _answered(done[tp], applied)
    return [done.get(e.tp, e) if e.pending else e for e in entries]


def _rechecked(request: PurgeRequest, entry: PurgeEntry, facts: PartitionFacts) -> PurgeEntry:
    safe = recheck(request, entry.as_plan(), facts)
    return entry.lowered(safe.target, safe.notes) if safe.target < entry.target else entry


def _answered(entry: PurgeEntry, applied: Applied) -> PurgeEntry:
    if applied.target < entry.target:
        dropped = f"the high watermark dropped to {applied.target} before the delete"
        entry = entry.lowered(applied.target, [dropped])
    if applied.failure is not None:
        return entry.failed(_wording(applied.failure), retriable=applied.failure.retriable)
    if applied.done and applied.log_start_after is not None:
        return entry.purged(applied.log_start_after)
    return entry.failed(applied.unverified or "not verified", retriable=True)


def _wording(failure: KafkaFailure) -> str:
    message = str(failure)
    if failure.code == POLICY_VIOLATION:
        message += " (the topic's cleanup.policy does not include delete)"
    return message


def estimate(kafka: KafkaPlanner, entries: list[PurgeEntry]) -> list[PurgeEntry]:
    """A dry run's entries: what each cut would delete, with bytes estimated from a sample
    of records at the log start."""
    ranges = {
        e.tp: (e.log_start_before or 0, e.target)
        for e in entries
        if e.state == State.PLANNED and (e.records_to_delete or 0) > 0
    }
    averages: Mapping[TopicPartition, float] = kafka.average_record_bytes(ranges)
    return [e.dry_run(averages.get(e.tp)) if e.state == State.PLANNED else e for e in entries]
