"""One RecordPurge object and the state it keeps in the API server: status, and the plan
in its own ConfigMaps (a plan of 100,000 partitions does not fit in status).

The plan is written before anything is deleted: its ConfigMaps (parts, then manifest),
then status pointing at them with phase Purging. A run that finds a stored plan reads it
back, checksum verified, and never plans again. Any write the API server refuses becomes
NotPersisted, carrying the API server's answer, so the caller can name the cause.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_states import Phase
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services import purge_report as report
from kafka_retention.services.ports import BlobStore, KafkaPlanner, StatusStore

if TYPE_CHECKING:
    from kafka_retention.adapters.kube import ApiException

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


def refusals() -> tuple[type[ApiException], ...]:
    """What the API server's refusal of a write is raised as: the Kubernetes client's
    ApiException. Looked up, not imported: `kafka-retention purge` keeps its state in
    memory and never loads that client (half a second of start-up), and a process that has
    not loaded it cannot have been refused by it."""
    client = sys.modules.get("kubernetes.client.exceptions")
    return (client.ApiException,) if client is not None else ()


class Unresolved(Exception):
    """The purge's cluster cannot be named yet (its Strimzi resources, or the Secret with
    its client settings, unreadable); `reason` says which. Tried again later."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class NotPersisted(Exception):
    """The API server refused to store the purge's state."""

    def __init__(self, what: str, exc: ApiException) -> None:
        body = str(exc.body or "")[:400]
        super().__init__(f"{what} not stored: HTTP {exc.status} {exc.reason}: {body}".strip())
        self.transient = exc.status in _TRANSIENT and _NEVER_FITS not in body


class PlanLost(Exception):
    """The plan a previous run stored cannot be read back. It is never planned again (that
    could widen the purge), so the purge ends here."""


def write_status(purge: Purge, what: str, status: Mapping[str, Any]) -> None:
    """Patch status; a refusal becomes NotPersisted naming `what` and the answer."""
    try:
        purge.store.patch(status)
    except refusals() as exc:
        raise NotPersisted(what, exc) from exc


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
    except refusals() as exc:
        raise NotPersisted("the plan", exc) from exc
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
