"""Stage 7 of a RecordPurge, how a run ends: finished (phase, conditions, bounded results, the full
results beside them), refused before any delete, or pending with a reason to run again.

A final status the API server refuses is never left to a silent retry: the cause goes
into the Ready condition at once, beside the counts of what was deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge_entry import PurgeEntry, to_lines
from kafka_retention.core.purge_states import Phase, State
from kafka_retention.services.purge import report, timings
from kafka_retention.services.purge.progress import CLEARED
from kafka_retention.services.purge.store import NotPersisted, Purge, ready, write_status


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


def refuse(purge: Purge, reason: Reason, message: str, partitions: int) -> Outcome:
    """End the purge as Failed before anything was deleted, saying why in both conditions."""
    now = purge.now()
    conditions = ready(purge, "False", reason, message)
    conditions = cond.set_condition(
        conditions, "Succeeded", "False", reason, message, purge.generation, now
    )
    purge.store.patch(
        {
            "phase": Phase.FAILED,
            "observedGeneration": purge.generation,
            "completedAt": cond.timestamp(now),
            "conditions": conditions,
            "summary": {
                "partitions": partitions,
                "purged": 0,
                "failed": partitions,
                "recordsDeleted": 0,
            },
            **CLEARED,
        }
    )
    return Outcome(Phase.FAILED, message, finished=True, failures=[message])


def not_ready(
    purge: Purge, base: Mapping[str, Any], phase: str | None, reason: Reason, message: str
) -> None:
    purge.store.patch(
        {
            **base,
            "phase": phase or Phase.PENDING,
            "conditions": ready(purge, "False", reason, message),
            **CLEARED,
        }
    )


def pending(purge: Purge, base: Mapping[str, Any], entries: Sequence[PurgeEntry]) -> Retry:
    """Status for a run that left partitions to retry, and the Retry to raise."""
    retrying = [e for e in entries if e.state == State.RETRYING]
    names = ", ".join(f"{e.topic}-{e.partition}" for e in retrying[:10])
    message = f"{len(retrying)} partitions still pending ({names}): {retrying[0].error}"
    try:
        write_status(
            purge,
            "status",
            {
                **base,
                "phase": Phase.PURGING,
                "results": report.fold_results(entries),
                "summary": report.summary(entries),
                **CLEARED,
            },
        )
    except NotPersisted as err:
        not_ready(purge, base, Phase.PURGING, Reason.STATE_NOT_PERSISTED, str(err))
        message += f"; {err}"
    return Retry(message, purge.retry_delay)


def finish(
    purge: Purge, base: Mapping[str, Any], entries: Sequence[PurgeEntry], *, dry_run: bool
) -> Outcome:
    totals = report.summary(entries)
    failed, total = totals["failed"], totals["partitions"]
    ok: cond.ConditionStatus
    if dry_run:
        phase, ok, reason = Phase.SUCCEEDED, "True", Reason.DRY_RUN_COMPLETED
        message = (
            f"dry run: would delete {totals.get('recordsToDelete', 0)} records "
            f"(~{totals.get('bytesToDeleteEstimate', 0)} bytes) from {total} "
            "partitions; nothing deleted"
        )
    elif failed == 0:
        phase, ok = Phase.SUCCEEDED, "True"
        reason = Reason.PURGED if totals["recordsDeleted"] else Reason.NOTHING_TO_DELETE
        message = f"deleted {totals['recordsDeleted']} records from {total} partitions"
    else:
        phase = Phase.FAILED if failed == total else Phase.PARTIALLY_SUCCEEDED
        ok = "False"
        reason = Reason.FAILED if failed == total else Reason.PARTIALLY_FAILED
        first = next(e for e in entries if e.state == State.FAILED)
        message = (
            f"{failed} of {total} partitions failed, first "
            f"{first.topic}-{first.partition}: {first.error}; "
            f"deleted {totals['recordsDeleted']} records"
        )
    now = purge.now()
    conditions = ready(
        purge,
        "True",
        Reason.PLAN_APPLIED if not dry_run else Reason.PLANNED,
        "plan computed and applied" if not dry_run else "plan computed",
    )
    succeeded = cond.set_condition(
        conditions, "Succeeded", ok, reason, message, purge.generation, now
    )
    results, folded = report.status_results(entries)
    document: dict[str, Any] = {
        **base,
        "phase": phase,
        "completedAt": cond.timestamp(now),
        # A run that began marking its stages (pipeline.py): when each ended.
        **(
            {"timings": timings.final(base["timings"], purge.created, now)}
            if base.get("timings")
            else {}
        ),
        "results": results,
        "summary": totals,
        "conditions": succeeded,
        **CLEARED,
    }
    if folded:
        # Status holds the folded results; every partition's outcome is kept beside it.
        try:
            document["resultsRef"] = purge.blobs.save("results", to_lines(entries))
        except WriteRefused as exc:
            document["resultsRef"] = None
            message += f"; per-partition results not stored: HTTP {exc.status} {exc.reason}"
    try:
        write_status(purge, "the purge's outcome", document)
    except NotPersisted as err:
        message = _outcome_not_stored(purge, base, document, err, message, dry_run=dry_run)
    return Outcome(
        phase,
        message,
        finished=True,
        failures=[
            f"{e.topic}-{e.partition}: {e.error}" for e in entries if e.state == State.FAILED
        ],
        records_deleted=totals["recordsDeleted"],
        partitions_purged=totals["purged"],
        topics_deleted=report.topics_deleted(entries),
    )


def _outcome_not_stored(
    purge: Purge,
    base: Mapping[str, Any],
    document: Mapping[str, Any],
    err: NotPersisted,
    message: str,
    *,
    dry_run: bool,
) -> str:
    """The deletes are done (or, in a dry run, none were due) but the outcome was refused:
    a transient refusal runs again (the stored plan re-executes as a no-op and the outcome
    is written then); any other ends the purge with the smallest status that tells what
    happened, the cause in Ready."""
    done = "nothing was deleted (dry run)" if dry_run else "the planned deletes were applied"
    if err.transient:
        phase = Phase.PLANNING if dry_run else Phase.PURGING
        not_ready(purge, base, phase, Reason.STATE_NOT_PERSISTED, f"{err}; {done}")
        raise Retry(f"{Reason.STATE_NOT_PERSISTED}: {err}", purge.retry_delay) from err
    cause = f"{err}; {done}; per-partition results left out of status"
    purge.store.patch(
        {
            **document,
            "results": None,
            "conditions": cond.set_condition(
                document["conditions"],
                "Ready",
                "False",
                Reason.STATE_NOT_PERSISTED,
                cause,
                purge.generation,
                purge.now(),
            ),
        }
    )
    return f"{message}; {cause}"
