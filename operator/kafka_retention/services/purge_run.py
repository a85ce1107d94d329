"""RecordPurge reconciliation, as a state machine over its phases:

    Pending -> Planning -> Purging -> Succeeded | PartiallySucceeded | Failed

The plan is persisted before anything is deleted: in the purge's own ConfigMaps (a plan
of 100,000 partitions does not fit in status), with status pointing at them. A run that
finds a stored plan (after a restart or a retry) executes that plan and never re-plans,
so `offset: -1` or a group's offset that moved on cannot widen a purge after the fact.
Each run re-reads offsets and committed offsets right before deleting and may only lower
a planned cut. State that cannot be stored stops the purge before any delete, with the
API server's answer in a condition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafka_retention.adapters.kafka import KafkaUnavailable
from kafka_retention.adapters.kube import ApiException, SecretUnavailable
from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.purge import PurgeRequest, parse_spec
from kafka_retention.core.purge_states import FINAL_PHASES, Phase, State
from kafka_retention.core.specs import SpecError
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services import purge_report as report
from kafka_retention.services.ports import BlobStore, KafkaPlanner, StatusStore
from kafka_retention.services.purge_execute import estimate, execute
from kafka_retention.services.purge_facts import plan_entries

# The largest purge the tests prove: 100,000 partitions through the service (unit test,
# in-memory Kafka); on the real local cluster 20,000 (e2e and `make bench`), which is
# what 3 brokers on one small machine serve reliably. Larger ones are refused before
# anything is deleted.
MAX_PLANNED_PARTITIONS = 100_000
# API server answers that mean "try again" rather than "this can never be stored".
_TRANSIENT = {409, 429, 500, 502, 503, 504}


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
    blobs: BlobStore
    connect: Callable[[PurgeRequest], KafkaPlanner]
    now: Callable[[], datetime]
    retry_delay: float = 10.0


class NotPersisted(Exception):
    """The API server refused to store the purge's state."""

    def __init__(self, what: str, exc: ApiException) -> None:
        body = str(exc.body or "")[:400]
        super().__init__(f"{what} not stored: HTTP {exc.status} {exc.reason}: {body}".strip())
        self.transient = exc.status in _TRANSIENT


class PlanLost(Exception):
    """The plan a previous run stored cannot be read back. It is never planned again (that
    could widen the purge), so the purge ends here."""


def reconcile(purge: Purge) -> Outcome:
    phase = purge.status.get("phase")
    if phase in FINAL_PHASES:
        return Outcome(str(phase), "already complete")
    try:
        request = parse_spec(purge.spec)
    except SpecError as err:
        outcome = refuse(purge, Reason.INVALID_SPEC, str(err), partitions=0)
        outcome.invalid_field = err.field
        return outcome
    base = {
        "observedGeneration": purge.generation,
        "startedAt": purge.status.get("startedAt") or cond.timestamp(purge.now()),
    }
    try:
        kafka = purge.connect(request)
        entries = stored_plan(purge)
        if entries is None:
            phase = Phase.PLANNING
            _patch(purge, "status", {**base, "phase": phase})
            entries = plan_entries(kafka, request)
            if len(entries) > MAX_PLANNED_PARTITIONS and not request.dry_run:
                return too_large(purge, len(entries))
            if request.dry_run:
                return finish(purge, base, estimate(kafka, entries), dry_run=True)
            store_plan(purge, base, entries)
            # From here on the stored plan is what runs: a failure below must leave the
            # phase at Purging, or the next run would plan anew from newer offsets.
            phase = Phase.PURGING
        entries = execute(kafka, request, entries)
    except PlanLost as err:
        return refuse(purge, Reason.STATE_NOT_PERSISTED, f"{err}; no further records deleted", 0)
    except NotPersisted as err:
        if err.transient:
            _ready(purge, base, phase, Reason.STATE_NOT_PERSISTED, str(err))
            raise Retry(f"{Reason.STATE_NOT_PERSISTED}: {err}", purge.retry_delay) from err
        return refuse(purge, Reason.STATE_NOT_PERSISTED, f"{err}; nothing was deleted", 0)
    except (KafkaUnavailable, SecretUnavailable) as err:
        reason = (
            Reason.SECRET_UNAVAILABLE
            if isinstance(err, SecretUnavailable)
            else Reason.KAFKA_UNAVAILABLE
        )
        _ready(purge, base, phase, reason, str(err))
        raise Retry(f"{reason}: {err}", purge.retry_delay) from err
    retrying = [e for e in entries if e["state"] == State.RETRYING]
    if retrying:
        purge.store.patch(
            {
                **base,
                "phase": Phase.PURGING,
                "results": report.fold_results(entries),
                "summary": report.summary(entries),
            }
        )
        names = ", ".join(f"{e['topic']}-{e['partition']}" for e in retrying[:10])
        raise Retry(
            f"{len(retrying)} partitions still pending ({names}): {retrying[0].get('error')}",
            purge.retry_delay,
        )
    return finish(purge, base, entries, dry_run=False)


def stored_plan(purge: Purge) -> list[dict[str, Any]] | None:
    """The plan a previous run stored, or None when there is none yet."""
    if purge.status.get("phase") != Phase.PURGING:
        return None
    if purge.status.get("planRef"):
        try:
            payload = purge.blobs.load("plan")
        except SinkError as err:
            raise PlanLost(f"the stored plan is damaged ({err})") from err
        if payload is None:
            raise PlanLost(f"the stored plan {purge.status['planRef'].get('configMap')} is gone")
        return report.from_lines(payload)
    # Purges stored by earlier versions kept the plan in status.results.
    if purge.status.get("results"):
        return [dict(e) for e in purge.status["results"]]
    return None


def store_plan(purge: Purge, base: Mapping[str, Any], entries: list[dict[str, Any]]) -> None:
    """The plan in the purge's ConfigMaps, then status pointing at it: both before any
    delete."""
    try:
        ref = purge.blobs.save("plan", report.to_lines(entries))
    except ApiException as exc:
        raise NotPersisted("the plan", exc) from exc
    _patch(
        purge,
        "status with the plan",
        {
            **base,
            "phase": Phase.PURGING,
            "planRef": {**ref, "partitions": len(entries)},
            "results": report.fold_results(entries),
            "summary": report.summary(entries),
            "conditions": _conditions(
                purge, "True", Reason.PLANNED, f"planned {len(entries)} partitions"
            ),
        },
    )


def too_large(purge: Purge, planned: int) -> Outcome:
    message = (
        f"the purge covers {planned} partitions; at most {MAX_PLANNED_PARTITIONS} are "
        "supported in one RecordPurge: split it into several; nothing was deleted"
    )
    return refuse(purge, Reason.TOO_MANY_PARTITIONS, message, partitions=planned)


def refuse(purge: Purge, reason: Reason, message: str, partitions: int) -> Outcome:
    """End the purge as Failed before anything was deleted, saying why in both conditions."""
    now = purge.now()
    conditions = _conditions(purge, "False", reason, message)
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
        }
    )
    return Outcome(Phase.FAILED, message, finished=True, failures=[message])


def finish(
    purge: Purge, base: Mapping[str, Any], entries: list[dict[str, Any]], *, dry_run: bool
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
        first = next(e for e in entries if e["state"] == State.FAILED)
        message = (
            f"{failed} of {total} partitions failed, first "
            f"{first['topic']}-{first['partition']}: {first.get('error')}; "
            f"deleted {totals['recordsDeleted']} records"
        )
    now = purge.now()
    conditions = _conditions(
        purge,
        "True",
        Reason.PLAN_APPLIED if not dry_run else Reason.PLANNED,
        "plan computed and applied" if not dry_run else "plan computed",
    )
    conditions = cond.set_condition(
        conditions, "Succeeded", ok, reason, message, purge.generation, now
    )
    results = report.fold_results(entries)
    document: dict[str, Any] = {
        **base,
        "phase": phase,
        "completedAt": cond.timestamp(now),
        "results": results,
        "summary": totals,
        "conditions": conditions,
    }
    if len(results) < len(entries):
        # Status holds the folded results; every partition's outcome is kept beside it.
        try:
            document["resultsRef"] = purge.blobs.save("results", report.to_lines(entries))
        except ApiException as exc:
            document["resultsRef"] = None
            message += f"; per-partition results not stored: HTTP {exc.status} {exc.reason}"
    purge.store.patch(document)
    return Outcome(
        phase,
        message,
        finished=True,
        failures=[
            f"{e['topic']}-{e['partition']}: {e.get('error')}"
            for e in entries
            if e["state"] == State.FAILED
        ],
        records_deleted=totals["recordsDeleted"],
        partitions_purged=totals["purged"],
        topics_deleted=report.topics_deleted(entries),
    )


def _conditions(
    purge: Purge, status: cond.ConditionStatus, reason: Reason, message: str
) -> list[dict[str, Any]]:
    return cond.set_condition(
        purge.status.get("conditions"),
        "Ready",
        status,
        reason,
        message,
        purge.generation,
        purge.now(),
    )


def _ready(
    purge: Purge, base: Mapping[str, Any], phase: str | None, reason: Reason, message: str
) -> None:
    purge.store.patch(
        {
            **base,
            "phase": phase or Phase.PENDING,
            "conditions": _conditions(purge, "False", reason, message),
        }
    )


def _patch(purge: Purge, what: str, status: Mapping[str, Any]) -> None:
    try:
        purge.store.patch(status)
    except ApiException as exc:
        raise NotPersisted(what, exc) from exc
