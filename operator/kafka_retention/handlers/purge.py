"""Kopf handler for RecordPurge: parse, call the service, report with events and metrics."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import kopf

from kafka_retention import metrics
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.conditions import EventReason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_ledger import purge_done
from kafka_retention.core.purge_states import FINAL_PHASES, Phase
from kafka_retention.core.resources import GROUP, RECORD_PURGES, VERSION
from kafka_retention.handlers import common, remote_deletion
from kafka_retention.handlers.common import config, purge_ledger, tenancy
from kafka_retention.services import purge as service
from kafka_retention.services.fair_slots import FairSlots
from kafka_retention.services.purge.tiers import CHECK_EVERY_S
from kafka_retention.services.tenancy import Tenancy

KIND = "RecordPurge"
log = logging.getLogger(__name__)
MAX_FAILURE_EVENTS = 20


def _admitter(rules: Tenancy, namespace: str) -> Any:
    """Asked before anything is contacted: strict tenancy's refusal of an inline cluster,
    then the binding's word on the namespace, the operation and every topic named."""

    def admit(spec: Mapping[str, Any], request: PurgeRequest) -> int:
        rules.check_spec(spec)
        binding = rules.admit_purge(namespace, request)
        return service.MAX_PLANNED_PARTITIONS if binding is None else binding.partitions_per_purge

    return admit


def _connector(rules: Tenancy, namespace: str) -> Any:
    def connect(request: PurgeRequest) -> KafkaAdmin:
        return common.connect(rules, namespace, request.cluster, KafkaAdmin)

    return connect


# Purges that run at once (each in a worker thread); more wait, namespaces in turn.
PURGE_SLOTS = 4


def purge_slots(memo: kopf.Memo) -> FairSlots:
    slots: FairSlots = memo.setdefault("purge_slots", FairSlots(PURGE_SLOTS))
    return slots


@kopf.on.create(GROUP, VERSION, RECORD_PURGES, id="purge")
async def purge(**kwargs: Any) -> None:
    created = common.Created.of(kwargs)
    if created.status.get("phase") in FINAL_PHASES:
        return
    # Waiting for a slot holds no thread, and namespaces take the slots in turn: one
    # namespace's thousand purges do not make another's wait for all of them.
    async with purge_slots(created.memo).slot(created.namespace):
        await asyncio.to_thread(_purge, created)


def _purge(created: common.Created) -> None:
    body, spec, status, _meta, namespace, name, memo = created.parts()
    # One read of the binding for admission, connection and the cluster id check.
    rules = tenancy(config(memo)).once()
    if not status.get("startedAt"):
        kopf.info(
            body,
            reason=EventReason.PURGE_STARTED,
            message="planning cuts" + (" (dry run)" if spec.get("dryRun") else ""),
        )
    started = time.monotonic()
    try:
        outcome = service.reconcile(_input(created, rules))
    except service.Retry as pending:
        kopf.warn(body, reason=EventReason.PURGE_PENDING, message=str(pending))
        raise kopf.TemporaryError(str(pending), delay=pending.delay) from None
    finally:
        metrics.RUN_SECONDS.labels(KIND).observe(time.monotonic() - started)

    if outcome.invalid_field is not None:
        kopf.warn(body, reason=EventReason.INVALID_SPEC, message=outcome.message)
        raise kopf.PermanentError(outcome.message)
    for topic, count in outcome.topics_deleted.items():
        metrics.RECORDS_DELETED.labels(KIND, namespace, name, topic).inc(count)
    metrics.PARTITIONS_PURGED.labels(KIND, namespace, name).inc(outcome.partitions_purged)
    metrics.PARTITION_FAILURES.labels(KIND, namespace, name).inc(len(outcome.failures))
    for failure in outcome.failures[:MAX_FAILURE_EVENTS]:
        kopf.warn(body, reason=EventReason.PARTITION_FAILED, message=failure)
    if len(outcome.failures) > MAX_FAILURE_EVENTS:
        kopf.warn(
            body,
            reason=EventReason.PARTITION_FAILED,
            message=f"... and {len(outcome.failures) - MAX_FAILURE_EVENTS} more; "
            "see status.results",
        )
    if outcome.phase == Phase.SUCCEEDED:
        kopf.info(body, reason=EventReason.PURGE_SUCCEEDED, message=outcome.message)
    else:
        kopf.warn(body, reason=f"Purge{outcome.phase}", message=outcome.message)
    if outcome.remote is not None:
        _remote(body, namespace, name, outcome.remote)


def _input(created: common.Created, rules: Tenancy) -> service.Purge:
    """The purge as the service takes it, for the main handler and the remote-deletion
    timer alike. The plan and full results live in ConfigMaps the purge owns."""
    _body, spec, status, meta, namespace, _name, _memo = created.parts()
    store, blobs = created.stores(RECORD_PURGES, KIND)
    return service.Purge(
        spec=spec,
        status=status,
        generation=meta.get("generation"),
        store=store,
        blobs=blobs,
        connect=_connector(rules, namespace),
        admit=_admitter(rules, namespace),
        now=lambda: datetime.now(UTC),
        retry_delay=created.retry_delay,
        created=created.created_at,
    )


def _remote(body: kopf.Body, namespace: str, name: str, report: service.RemoteReport) -> None:
    """Metrics and the Event of where the remote deletion below a purge's cuts stands."""
    remote_deletion.SERIES.report(namespace, name, report)
    remote_deletion.post(
        report,
        lambda reason, message: kopf.info(body, reason=reason, message=message),
        lambda reason, message: kopf.warn(body, reason=reason, message=message),
    )


def _remote_watched(status: kopf.Status, **_: Any) -> bool:
    return service.watched(status)


@kopf.timer(
    GROUP,
    VERSION,
    RECORD_PURGES,
    id="remote-deletion",
    interval=CHECK_EVERY_S,
    when=_remote_watched,
)
def remote_deletion_check(**kwargs: Any) -> None:
    """A finished purge of a tiered topic, while remote segments below its cuts wait for
    the brokers to delete them (RemoteDeletionPending True, or the remote log unreadable):
    the remote log read again when a check is due, status and metrics updated. It never
    deletes anything; Kopf runs it only while the condition is watched, and the service
    gives up after Purge.remote_watch_s."""
    created = common.Created.of(kwargs)
    body, _spec, _status, _meta, namespace, name, memo = created.parts()
    try:
        report = service.follow_remote(_input(created, tenancy(config(memo)).once()))
    except WriteRefused as err:
        log.warning(
            "%s/%s: remote deletion check not stored (tried again): %s", namespace, name, err
        )
        return
    if report is not None:
        _remote(body, namespace, name, report)


@kopf.on.event(GROUP, VERSION, RECORD_PURGES)
def remember(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Keep what each purge deleted where policy runs can see it (the same watch as the
    purge handler: no extra API calls)."""
    meta = body.get("metadata") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    if event.get("type") == "DELETED":
        purge_ledger(memo).remove(key)
        remote_deletion.SERIES.forget(str(meta.get("namespace")), str(meta.get("name")))
    else:
        purge_ledger(memo).put(key, purge_done(body))
