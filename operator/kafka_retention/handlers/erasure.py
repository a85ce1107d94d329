"""Kopf handler for RecordErasure: wire the service (services.erasure) to Kubernetes and
Kafka, run one step per call, and report with events. Events and log lines carry digests
and counts only, never a key."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from functools import partial
from typing import Any

import kopf

from kafka_retention import metrics
from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.adapters.ledger_store import KubeLedger
from kafka_retention.adapters.receipt_keys import read_signing_key
from kafka_retention.adapters.spark_erasure import SparkErasureAdmin
from kafka_retention.config import SparkConfig
from kafka_retention.core.bindings import Grant
from kafka_retention.core.conditions import EventReason
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_request import Connection
from kafka_retention.core.resources import GROUP, RECORD_ERASURES, VERSION
from kafka_retention.handlers import common
from kafka_retention.handlers.common import config, tenancy
from kafka_retention.handlers.erasure_logs import WAITING
from kafka_retention.services import erasure as service
from kafka_retention.services.fair_slots import FairSlots
from kafka_retention.services.tenancy import Tenancy

KIND = "RecordErasure"
# Erasures that run at once (each scan reads whole partitions in a worker thread): fewer
# than purges, so that erasures cannot starve them.
SLOTS = 2

log = logging.getLogger(__name__)


def erasure_slots(memo: kopf.Memo) -> FairSlots:
    slots: FairSlots = memo.setdefault("erasure_slots", FairSlots(SLOTS))
    return slots


def _admitter(rules: Tenancy, namespace: str) -> Any:
    """Asked before anything is contacted: strict tenancy's refusal of an inline cluster,
    then the binding's word on the namespace, the operation and every topic named."""

    def admit(spec: Mapping[str, Any], request: ErasureRequest) -> Grant | None:
        rules.check_spec(spec)
        return rules.admit_erasure(namespace, request)

    return admit


def erasure_scan_job(
    spark: Any,
    conn: Connection,
    ranges: Mapping[TopicPartition, tuple[int, int]],
    digests: AbstractSet[str],
) -> dict[TopicPartition, PartitionScan]:
    """The Spark erasure scan, for the local session (adapters.spark_erasure.ErasureScanJob)."""
    # Imported at the first scan on Spark: pyspark is not loaded before one.
    from retention_jobs.erasure_scan import scan_keys

    return scan_keys(spark, conn, ranges, digests)


def source_usable(spark: Any, conn: Connection) -> bool:
    """Spark's Kafka source serves this connection (adapters.spark_erasure.SourceCheck)."""
    from retention_jobs.kafka_source import usable

    return usable(spark, conn)


def admin_maker(cfg: SparkConfig) -> Callable[[str, dict[str, str]], ErasureAdmin]:
    """ErasureAdmin, whose scans run in this process; in local mode, one whose scans
    spanning cfg.erasure_min_records offsets or more run on the local Spark session. Pod
    modes keep the in-process scan: an erasure scan on pods is not built (its answer
    would come back through objects that must first be made tenant-proof)."""
    if cfg.mode != "local":
        return ErasureAdmin
    return partial(
        SparkErasureAdmin,
        job=erasure_scan_job,
        usable=source_usable,
        min_records=cfg.erasure_min_records,
    )


def _connector(rules: Tenancy, namespace: str, cfg: SparkConfig) -> Any:
    make = admin_maker(cfg)

    def connect(request: ErasureRequest) -> ErasureAdmin:
        return common.connect(rules, namespace, request.cluster, make)

    return connect


@kopf.on.create(GROUP, VERSION, RECORD_ERASURES, id="erasure")
async def erasure(**kwargs: Any) -> None:
    created = common.Created.of(kwargs)
    if service.finished(created.status):
        return
    async with erasure_slots(created.memo).slot(created.namespace):
        await asyncio.to_thread(_erase, created)


def _erase(created: common.Created) -> None:
    body, spec, status, meta, namespace, name, memo = created.parts()
    cfg = config(memo)
    rules = tenancy(cfg).once()
    if not status.get("startedAt"):
        kopf.info(
            body,
            reason=EventReason.ERASURE_STARTED,
            message="scanning for the listed digests"
            + (" (dry run)" if spec.get("dryRun") else ""),
        )
    uid = str(meta.get("uid"))
    # The receipt and evidence beyond status live in ConfigMaps it owns.
    store, blobs = created.stores(RECORD_ERASURES, KIND)
    started = time.monotonic()
    try:
        outcome = service.reconcile(
            service.Erasure(
                spec=spec,
                status=status,
                generation=meta.get("generation"),
                uid=uid,
                name=name,
                namespace=namespace,
                store=store,
                blobs=blobs,
                connect=_connector(rules, namespace, cfg.spark),
                admit=_admitter(rules, namespace),
                signing_key=lambda: read_signing_key(
                    cfg.operator_namespace, cfg.erasure_signing_secret
                ),
                now=lambda: datetime.now(UTC),
                retry_delay=created.retry_delay,
                created=created.created_at,
                # The erased digests, per cluster, in the operator's namespace.
                ledger=KubeLedger(cfg.operator_namespace),
            )
        )
    except service.Retry as pending:
        _post(body, pending.events, namespace, name)
        if pending.quiet:
            # Waiting on the cleaner or on retention: kopf's own line, made quiet.
            raise kopf.TemporaryError(f"{WAITING} {pending}", delay=pending.delay) from None
        kopf.warn(body, reason=f"Erasure{Phase.PENDING}", message=str(pending))
        raise kopf.TemporaryError(str(pending), delay=pending.delay) from None
    finally:
        metrics.RUN_SECONDS.labels(KIND).observe(time.monotonic() - started)

    _post(body, outcome.events, namespace, name)
    if outcome.invalid_field is not None:
        # The refusal's own reason (NotPermitted, CollateralAboveLimit, ...), as the Ready
        # condition says it.
        reason = str(outcome.reason or EventReason.INVALID_SPEC)
        kopf.warn(body, reason=reason, message=outcome.message)
        raise kopf.PermanentError(outcome.message)
    if outcome.phase == Phase.FAILED:
        kopf.warn(body, reason=f"Erasure{Phase.FAILED}", message=outcome.message)


def _post(
    body: kopf.Body, events: list[tuple[EventReason, str]], namespace: str, name: str
) -> None:
    """The run's events, each also a log line (digests and counts only)."""
    for reason, message in events:
        log.info("RecordErasure %s/%s %s: %s", namespace, name, reason, message)
        if reason in (EventReason.ERASURE_DEADLINE_AT_RISK, EventReason.CUT_HELD):
            kopf.warn(body, reason=reason, message=message)
        else:
            kopf.info(body, reason=reason, message=message)
