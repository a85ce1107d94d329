"""Stages 4 to 6 of a RecordPurge: re-check each stored cut with the guard groups'
positions read now (a cut is only ever lowered, never raised), delete, and fold what
each partition's answer says into its entry.

Offsets are not read again: the broker checks them itself. DeleteRecords refuses a cut
above the high watermark (services.cutting then lowers it to the high watermark read at
that moment) and moves nothing for a cut at or below the log start, answering the log
start as it is. What the broker cannot know, where each protected or committedBy group
has read to, is read before the delete: here, or by the pipeline while it stores a new
plan (at most its FRESH_WITHIN_S older than reading it here would be).

Executing the same plan twice is safe: a cut at or below the current log start is done
already (or a no-op), so a retry or a restart simply runs the stored plan again. A run
that resumes a stored plan reads the log starts once, so that the partitions an earlier
run finished are counted from there and not sent again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.purge import PurgeRequest, recheck
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import State
from kafka_retention.core.topics import POLICY_VIOLATION
from kafka_retention.services.cutting import Applied, delete_and_verify
from kafka_retention.services.fresh import read_positions
from kafka_retention.services.ports import KafkaCutter, KafkaPlanner
from kafka_retention.services.purge.progress import DELETE_ROUND, Progress, Stage

# Each pending partition's guard groups and where they have read to (None: nowhere yet).
Positions = Mapping[TopicPartition, Mapping[str, int | None]]


def guard_positions(
    kafka: KafkaCutter, request: PurgeRequest, entries: list[PurgeEntry]
) -> Positions:
    """The guard groups' positions on the partitions still to cut, read now."""
    pending = [e.tp for e in entries if e.pending]
    return read_positions(kafka, pending, lambda tp: request.guard_groups(tp.topic))


def execute(
    kafka: KafkaCutter,
    request: PurgeRequest,
    entries: list[PurgeEntry],
    *,
    resumed: bool,
    positions: Positions | None = None,
    progress: Progress | None = None,
    round_size: int = DELETE_ROUND,
) -> list[PurgeEntry]:
    """The entries, with what happened to each pending partition. `resumed`: the plan was
        stored by an earlier run (a retry, a restart), which may have cut some already.
        `positions`: guard_positions of these entries, read after the plan was made (else
        read here). `progress` hears of the partitions done between rounds of deletes, of
    `round_size` partitions each."""
    pending = {e.tp: e for e in entries if e.pending}
    if not pending:
        return entries
    if positions is None:
        positions = guard_positions(kafka, request, entries)
    starts = _log_starts(kafka, list(pending)) if resumed else {}
    done: dict[TopicPartition, PurgeEntry] = {}
    cuts: dict[TopicPartition, int] = {}
    known: dict[TopicPartition, PartitionFacts] = {}

    def recheck_into(tp: TopicPartition, entry: PurgeEntry, facts: PartitionFacts) -> None:
        entry = _rechecked(request, entry, facts)
        if entry.target <= facts.log_start:
            done[tp] = entry.purged(facts.log_start)  # the plan cuts nothing here
            cuts.pop(tp, None)
        else:
            done[tp] = entry
            cuts[tp] = entry.target

    for tp, entry in pending.items():
        # The offsets as planned (the broker holds the cut to its own), or the log start
        # read now when an earlier run may have moved it.
        planned = entry.as_plan()
        start = max(planned.log_start, starts.get(tp, planned.log_start))
        known[tp] = PartitionFacts(tp, start, planned.high_watermark, positions[tp])
        recheck_into(tp, entry, known[tp])
    order = list(cuts)
    rounds = [order[i : i + round_size] for i in range(0, len(order), round_size)]
    # Done already: what an earlier run finished, and where the plan cuts nothing now.
    answered = len(entries) - len(cuts)
    for i, planned_round in enumerate(rounds):
        tps = planned_round
        if i:
            if progress is not None:
                progress.report(Stage.DELETING, answered, len(entries))
            # Earlier rounds took time: the guard groups are read again for this round's
            # partitions, and may only lower its cuts, as before the first.
            fresh = guard_positions(kafka, request, [done[tp] for tp in planned_round])
            for tp in planned_round:
                recheck_into(tp, done[tp], replace(known[tp], committed=fresh[tp]))
            tps = [tp for tp in planned_round if tp in cuts]
            answered += len(planned_round) - len(tps)
            if not tps:
                continue
        applied = delete_and_verify(kafka, {tp: cuts[tp] for tp in tps}, lower=True)
        for tp, outcome in applied.items():
            done[tp] = _answered(done[tp], outcome)
        answered += len(tps)
    return [done.get(e.tp, e) if e.pending else e for e in entries]


def _log_starts(kafka: KafkaCutter, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The log starts now. A partition that cannot be read is sent again as stored: a cut
    at or below its log start changes nothing (PurgeEntry refuses negative offsets)."""
    return {tp: s for tp, s in kafka.offsets(tps, "earliest").items() if isinstance(s, int)}


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
