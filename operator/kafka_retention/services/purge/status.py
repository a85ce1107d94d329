"""The one status writer of a RecordPurge: each stage's outcome (outcomes.py) becomes
the status patch here, and nowhere else in the purge is the StatusStore written.

    write ......... Planning, Stored: a refusal raises NotPersisted, and the pipeline
                    decides (a transient one retries, any other refuses the purge)
    end ........... Refusal, Finished: the purge's final status; the handler's Outcome
    retry ......... NotReady, Pending: the status of a run to be tried again; its Retry
    write_progress  status.progress between rounds of deletes: informational, so a
                    write that fails is skipped (a refusal quietly, any other failure
                    with a warning in the log)
    write_remote .. a finished purge's remote deletion checked again (tiers.check):
                    status.tiered and RemoteDeletionPending

A final status the API server refuses is never left to a silent retry: the cause goes
into the Ready condition at once, beside the counts of what was deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge_states import Phase
from kafka_retention.services.purge import report, timings
from kafka_retention.services.purge.inputs import Purge
from kafka_retention.services.purge.outcomes import (
    Finished,
    NotPersisted,
    NotReady,
    Outcome,
    Pending,
    Planning,
    Refusal,
    Retry,
    Run,
    Stored,
)
from kafka_retention.services.purge.progress import ProgressMark
from kafka_retention.services.purge.tiers import RemoteCheck

log = logging.getLogger(__name__)

# What a run leaves in status.progress when it ends (merge patch: the field is removed).
_CLEARED: Mapping[str, Any] = {"progress": None}


def write(purge: Purge, step: Planning | Stored) -> None:
    """The status of a run under way; a refusal raises NotPersisted."""
    if isinstance(step, Planning):
        _stored(
            purge, "status", {**_run(step.run), "phase": Phase.PLANNING, **_progress(step.progress)}
        )
        return
    entries = step.entries
    _stored(
        purge,
        "status with the plan",
        {
            **_run(step.run),
            "phase": Phase.PURGING,
            "planRef": {**step.plan_ref, "partitions": len(entries)},
            "results": report.fold_results(entries),
            "summary": report.summary(entries),
            "conditions": _ready(
                purge, "True", Reason.PLANNED, f"planned {len(entries)} partitions"
            ),
            **_progress(step.progress),
        },
    )


def end(purge: Purge, ending: Refusal | Finished) -> Outcome:
    """The purge's final status, and what the run did for the handler."""
    if isinstance(ending, Refusal):
        return _refused(purge, ending)
    return _finished(purge, ending)


def retry(purge: Purge, waiting: NotReady | Pending) -> Retry:
    """The status of a run to be tried again, and the Retry for the caller to raise."""
    if isinstance(waiting, NotReady):
        _not_ready(purge, waiting)
        return Retry(f"{waiting.reason}: {waiting.message}", purge.retry_delay)
    message = waiting.message
    try:
        _stored(
            purge,
            "status",
            {
                **_run(waiting.run),
                "phase": Phase.PURGING,
                "results": report.fold_results(waiting.entries),
                "summary": report.summary(waiting.entries),
                **_CLEARED,
            },
        )
    except NotPersisted as err:
        _not_ready(
            purge, NotReady(waiting.run, Phase.PURGING, Reason.STATE_NOT_PERSISTED, str(err))
        )
        message += f"; {err}"
    return Retry(message, purge.retry_delay)


def write_remote(purge: Purge, found: RemoteCheck) -> None:
    """A finished purge's remote deletion, checked again (tiers.check): status.tiered and
    RemoteDeletionPending. A refusal raises WriteRefused: the timer tries again."""
    conditions = cond.stamp(
        purge.status.get("conditions"), found.condition, purge.generation, found.now
    )
    purge.store.patch({"tiered": dict(found.tiered), "conditions": conditions})


def write_progress(purge: Purge, progress: ProgressMark) -> None:
    """A progress patch, which only informs: between two rounds of deletes it must not end
    the purge half-way. The run's next status write, which must be stored, says whether
    the object and the API server are still there."""
    _informing(purge, "progress", _progress(progress))


def write_kafka(purge: Purge, kafka: Mapping[str, object] | None) -> None:
    """status.kafka alone, read after the run's last status write; left out when it could
    not be read."""
    if kafka is not None:
        _informing(purge, "status.kafka", {"kafka": dict(kafka)})


def _informing(purge: Purge, what: str, status: Mapping[str, Any]) -> None:
    """A patch that only informs: one the API server refuses, or that never reaches it (a
    timeout, a reset connection), is left out."""
    try:
        purge.store.patch(status)
    except WriteRefused:
        pass
    except Exception as err:  # the status store's transport: any failure, not only Kafka's
        log.warning("%s of a RecordPurge not written: %s", what, err)


def _refused(purge: Purge, refusal: Refusal) -> Outcome:
    """Failed before anything was deleted, saying why in both conditions."""
    now = purge.now()
    conditions = _ready(purge, "False", refusal.reason, refusal.message)
    conditions = cond.set_condition(
        conditions, "Succeeded", "False", refusal.reason, refusal.message, purge.generation, now
    )
    purge.store.patch(
        {
            "phase": Phase.FAILED,
            "observedGeneration": purge.generation,
            "completedAt": cond.timestamp(now),
            "conditions": conditions,
            "summary": {
                "partitions": refusal.partitions,
                "purged": 0,
                "failed": refusal.partitions,
                "recordsDeleted": 0,
            },
            **_CLEARED,
        }
    )
    return Outcome(
        Phase.FAILED,
        refusal.message,
        finished=True,
        failures=[refusal.message],
        invalid_field=refusal.invalid_field,
    )


def _not_ready(purge: Purge, not_ready: NotReady) -> None:
    purge.store.patch(
        {
            **_run(not_ready.run),
            "phase": not_ready.phase or Phase.PENDING,
            "conditions": _ready(purge, "False", not_ready.reason, not_ready.message),
            **_CLEARED,
        }
    )


def _finished(purge: Purge, finished: Finished) -> Outcome:
    dry_run, now = finished.dry_run, finished.completed_at
    conditions = _ready(
        purge,
        "True",
        Reason.PLAN_APPLIED if not dry_run else Reason.PLANNED,
        "plan computed and applied" if not dry_run else "plan computed",
    )
    succeeded = cond.set_condition(
        conditions,
        "Succeeded",
        finished.succeeded,
        finished.reason,
        finished.message,
        purge.generation,
        now,
    )
    tiered = finished.tiered
    if tiered is not None and tiered.condition is not None:
        succeeded = cond.stamp(succeeded, tiered.condition, purge.generation, now)
    marks = finished.run.timings.marks
    document: dict[str, Any] = {
        **_run(finished.run),
        "phase": finished.phase,
        "completedAt": cond.timestamp(now),
        # A run that began marking its stages (pipeline.py): when each ended.
        **({"timings": timings.final(marks, purge.created, now)} if marks else {}),
        "results": list(finished.results),
        "summary": dict(finished.summary),
        "conditions": succeeded,
        **({"tiered": dict(tiered.status)} if tiered is not None else {}),
        **_CLEARED,
    }
    if finished.folded:
        document["resultsRef"] = finished.results_ref
    message = finished.message + finished.results_note
    try:
        _stored(purge, "the purge's outcome", document)
    except NotPersisted as err:
        message = _outcome_not_stored(purge, finished, document, err, message)
    return Outcome(
        finished.phase,
        message,
        finished=True,
        failures=list(finished.failures),
        records_deleted=finished.summary["recordsDeleted"],
        partitions_purged=finished.summary["purged"],
        topics_deleted=dict(finished.topics_deleted),
        remote=tiered.report if tiered is not None else None,
    )


def _outcome_not_stored(
    purge: Purge,
    finished: Finished,
    document: Mapping[str, Any],
    err: NotPersisted,
    message: str,
) -> str:
    """The deletes are done (or, in a dry run, none were due) but the outcome was refused:
    a transient refusal runs again (the stored plan re-executes as a no-op and the outcome
    is written then); any other ends the purge with the smallest status that tells what
    happened, the cause in Ready."""
    dry_run = finished.dry_run
    done = "nothing was deleted (dry run)" if dry_run else "the planned deletes were applied"
    if err.transient:
        phase = Phase.PLANNING if dry_run else Phase.PURGING
        _not_ready(
            purge, NotReady(finished.run, phase, Reason.STATE_NOT_PERSISTED, f"{err}; {done}")
        )
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


def _stored(purge: Purge, what: str, status: Mapping[str, Any]) -> None:
    """Patch status; a refusal becomes NotPersisted naming `what` and the answer."""
    try:
        purge.store.patch(status)
    except WriteRefused as refused:
        raise NotPersisted(what, refused) from refused


def _run(run: Run) -> dict[str, Any]:
    """What every status write of a run carries."""
    fields: dict[str, Any] = {
        "observedGeneration": run.generation,
        "startedAt": run.started_at,
        # The marks so far, written with every status write of this run (timings.py).
        "timings": dict(run.timings.marks),
    }
    if run.groups is not None:
        fields["groups"] = [
            {"name": g.name, "type": g.type, **({"note": g.note} if g.note else {})}
            for g in run.groups
        ]
    if run.kafka is not None:
        fields["kafka"] = dict(run.kafka)
    return fields


def _progress(progress: ProgressMark) -> dict[str, Any]:
    return {"progress": progress.to_status()}


def _ready(
    purge: Purge, status: cond.ConditionStatus, reason: Reason, message: str
) -> list[dict[str, Any]]:
    """The purge's conditions with Ready set."""
    return cond.set_condition(
        purge.status.get("conditions"),
        "Ready",
        status,
        reason,
        message,
        purge.generation,
        purge.now(),
    )
