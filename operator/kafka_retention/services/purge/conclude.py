"""Stage 7 of a RecordPurge, how a run ends, as a value for status.py to write: Finished
(phase, conditions' reason and message, bounded results, the full results stored beside
them) or Pending (partitions left to retry). Refusals and retries before this stage are
the pipeline's (outcomes.Refusal, outcomes.NotReady).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import Phase, State
from kafka_retention.services.purge import report
from kafka_retention.services.purge.inputs import Purge
from kafka_retention.services.purge.outcomes import Finished, Pending, Run
from kafka_retention.services.purge.store import store_results
from kafka_retention.services.purge.tiers import TieredCut


def pending(run: Run, entries: Sequence[PurgeEntry]) -> Pending:
    """A run that left partitions to retry."""
    retrying = [e for e in entries if e.state == State.RETRYING]
    names = ", ".join(f"{e.topic}-{e.partition}" for e in retrying[:10])
    message = f"{len(retrying)} partitions still pending ({names}): {retrying[0].error}"
    return Pending(run, entries, message)


def finish(
    purge: Purge,
    run: Run,
    entries: Sequence[PurgeEntry],
    *,
    dry_run: bool,
    tiered: TieredCut | None = None,
) -> Finished:
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
    completed_at = purge.now()
    results, folded = report.status_results(entries)
    results_ref: Mapping[str, Any] | None = None
    results_note = ""
    if folded:
        # Status holds the folded results; every partition's outcome is kept beside it.
        try:
            results_ref = store_results(purge, entries)
        except WriteRefused as exc:
            results_note = f"; per-partition results not stored: HTTP {exc.status} {exc.reason}"
    return Finished(
        run,
        dry_run=dry_run,
        phase=phase,
        succeeded=ok,
        reason=reason,
        message=message,
        results_note=results_note,
        completed_at=completed_at,
        summary=totals,
        results=results,
        folded=folded,
        results_ref=results_ref,
        failures=tuple(
            f"{e.topic}-{e.partition}: {e.error}" for e in entries if e.state == State.FAILED
        ),
        topics_deleted=report.topics_deleted(entries),
        tiered=tiered,
    )
