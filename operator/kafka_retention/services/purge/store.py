"""Stage 3 of a RecordPurge, and what every later stage writes through: one RecordPurge
object and the state it keeps in the API server, status and the plan in its own
ConfigMaps (a plan of 100,000 partitions does not fit in status).

The plan is written before anything is deleted: its ConfigMaps (parts, then manifest),
then status pointing at them with phase Purging. A run that finds a stored plan reads it
back, checksum verified, and never plans again. Any write the API server refuses
(core.failures.WriteRefused) becomes NotPersisted, carrying the API server's answer, so
the caller can name the cause.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_entry import PurgeEntry, from_lines, to_lines
from kafka_retention.core.purge_states import Phase
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services.ports import BlobStore, KafkaPlanner, StatusStore
from kafka_retention.services.purge import report
from kafka_retention.services.purge.progress import DELETE_ROUND, PROGRESS_EVERY_S

# API server answers that mean "try again" rather than "this can never be stored".
_TRANSIENT = {409, 429, 500, 502, 503, 504}
# etcd's refusal of an oversized write comes back as a 500, yet retrying cannot help.
_NEVER_FITS = "request is too large"


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
    # Tenancy (services.tenancy), asked before anything is contacted: raises Refused or
    # BindingUnavailable for a purge its namespace may not run, else returns the most
    # partitions it may cut. None: no tenancy (the CLI, service tests).
    admit: Callable[[Mapping[str, Any], PurgeRequest], int] | None = None
    # The least time between two writes of status.progress of their own, and the cuts
    # sent in one DeleteRecords call (progress.py).
    progress_every_s: float = PROGRESS_EVERY_S
    delete_round: int = DELETE_ROUND
    # metadata.creationTimestamp: where status.timings counts the pick-up from.
    created: datetime | None = None


class Unresolved(Exception):
    """The purge's cluster cannot be named yet (its Strimzi resources, or the Secret with
    its client settings, unreadable); `reason` says which. Tried again later."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class NotPersisted(Exception):
    """The API server refused to store the purge's state."""

    def __init__(self, what: str, refused: WriteRefused) -> None:
        answer = f"HTTP {refused.status} {refused.reason}: {refused.body}"
        super().__init__(f"{what} not stored: {answer}".strip())
        self.transient = refused.status in _TRANSIENT and _NEVER_FITS not in refused.body


class PlanLost(Exception):
    """The plan a previous run stored cannot be read back. It is never planned again (that
    could widen the purge), so the purge ends here."""


def write_status(purge: Purge, what: str, status: Mapping[str, Any]) -> None:
    """Patch status; a refusal becomes NotPersisted naming `what` and the answer."""
    try:
        purge.store.patch(status)
    except WriteRefused as refused:
        raise NotPersisted(what, refused) from refused


def stored_plan(purge: Purge) -> list[PurgeEntry] | None:
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
        try:
            return from_lines(payload)
        except ValueError as err:
            raise PlanLost(f"the stored plan cannot be read ({err})") from err
    # Purges stored by earlier versions kept the plan in status.results.
    if purge.status.get("results"):
        try:
            return [PurgeEntry.from_status(e) for e in purge.status["results"]]
        except ValueError as err:
            raise PlanLost(f"the plan in status.results cannot be read ({err})") from err
    return None


def store_plan(
    purge: Purge,
    base: Mapping[str, Any],
    entries: Sequence[PurgeEntry],
    progress: Mapping[str, Any] | None = None,
) -> None:
    """The plan in the purge's ConfigMaps, then status pointing at it (and `progress`, a
    status.progress document): both before any delete."""
    try:
        ref = purge.blobs.save("plan", to_lines(entries))
    except WriteRefused as refused:
        raise NotPersisted("the plan", refused) from refused
    write_status(
        purge,
        "status with the plan",
        {
            **base,
            "phase": Phase.PURGING,
            "planRef": {**ref, "partitions": len(entries)},
            "results": report.fold_results(entries),
            "summary": report.summary(entries),
            "conditions": ready(
                purge, "True", Reason.PLANNED, f"planned {len(entries)} partitions"
            ),
            **(progress or {}),
        },
    )


def ready(
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
