"""Kopf glue for RetentionPolicy: the watch feeds one scheduler (services.policy.fleet, built
in handlers.wiring); what the fleet reports (each run's outcome, the scheduler's state)
becomes events and metrics here. No thread or daemon is held per policy."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

import kopf

from kafka_retention import metrics
from kafka_retention.adapters.kube import drop_finalizer
from kafka_retention.config import OperatorConfig
from kafka_retention.core.conditions import EventReason
from kafka_retention.core.loss import Loss, Risk
from kafka_retention.core.resources import FINALIZER, GROUP, RETENTION_POLICIES, VERSION
from kafka_retention.handlers.common import purge_ledger
from kafka_retention.handlers.wiring import build_fleet
from kafka_retention.services.policy.fleet import Fleet
from kafka_retention.services.policy.report import GroupSummary
from kafka_retention.services.policy.run import RunOutcome
from kafka_retention.services.watch.orphans import OrphanReport
from kafka_retention.services.watch.tombstones import TombstoneReport

KIND = "RetentionPolicy"
log = logging.getLogger(__name__)


@kopf.on.startup()
async def start_scheduler(memo: kopf.Memo, **_: Any) -> None:
    if "fleet" not in memo:
        cfg = memo.get("config") or OperatorConfig()
        memo["fleet"] = build_fleet(cfg, Reporting(), purge_ledger(memo))


@kopf.on.cleanup()
async def stop_scheduler(memo: kopf.Memo, **_: Any) -> None:
    fleet: Fleet | None = memo.get("fleet")
    if fleet is not None:
        await fleet.stop()


@kopf.on.event(GROUP, VERSION, RETENTION_POLICIES)
async def watch(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    fleet: Fleet = memo["fleet"]
    fleet.start()
    meta = body.get("metadata", {})
    if event.get("type") == "DELETED" or meta.get("deletionTimestamp"):
        fleet.remove(body)
        metrics.forget_policy(str(meta.get("namespace")), str(meta.get("name")))
        _forget_remote(str(meta.get("namespace")), str(meta.get("name")))
        if event.get("type") != "DELETED" and FINALIZER in (meta.get("finalizers") or []):
            # Policies run by earlier versions (a daemon each) carry Kopf's finalizer;
            # nothing holds them now, so let them go.
            await asyncio.to_thread(
                drop_finalizer,
                RETENTION_POLICIES,
                str(meta["namespace"]),
                str(meta["name"]),
                FINALIZER,
            )
    else:
        fleet.upsert(dict(body))


class Reporting:
    """The fleet's reports (services.policy.fleet.FleetReport) as metrics, and each run's
    outcome as events and metrics (`report`)."""

    def run(self, body: Mapping[str, Any], outcome: RunOutcome) -> None:
        report(body, outcome)

    def acting(self, acting: bool) -> None:
        metrics.ACTING.set(1 if acting else 0)

    def policies(self, count: int) -> None:
        metrics.POLICIES.set(count)

    def tick(self, queue_depth: int, running: int, late: int) -> None:
        metrics.QUEUE_DEPTH.set(queue_depth)
        metrics.RUNNING.set(running)
        metrics.LATE.set(late)

    def standing_by(self) -> None:
        metrics.QUEUE_DEPTH.set(0)

    def batch_started(self, late_by: Sequence[float]) -> None:
        for seconds in late_by:
            metrics.LATENESS.observe(seconds)
        metrics.BATCH_SIZE.observe(len(late_by))

    def batch_ended(self, seconds: float) -> None:
        metrics.RUN_SECONDS.labels(KIND).observe(seconds)


def report(raw: Mapping[str, Any], outcome: RunOutcome) -> None:
    """Events and metrics of one run (runs in the event loop, where Kopf posts events)."""
    body = kopf.Body(cast(kopf.RawBody, dict(raw)))
    meta = body.get("metadata") or {}
    namespace, name = str(meta.get("namespace")), str(meta.get("name"))
    if outcome.invalid_field is not None:
        kopf.warn(body, reason=EventReason.INVALID_SPEC, message=outcome.message)
        metrics.RUN_FAILURES.labels(namespace, name, EventReason.INVALID_SPEC).inc()
        return
    if not outcome.ok:
        kopf.warn(body, reason=EventReason.RUN_FAILED, message=outcome.message)
        metrics.RUN_FAILURES.labels(
            namespace, name, str(outcome.reason or EventReason.RUN_FAILED)
        ).inc()
        return
    log.info("%s/%s: %s", namespace, name, outcome.message)
    for topic, count in outcome.deleted_by_topic.items():
        metrics.RECORDS_DELETED.labels(KIND, namespace, name, topic).inc(count)
    metrics.BYTES_RECLAIMED.labels(KIND, namespace, name).inc(outcome.bytes_reclaimed)
    metrics.PARTITIONS_CUT.labels(KIND, namespace, name).inc(outcome.partitions_cut)
    if outcome.records_deleted:
        kopf.info(body, reason=EventReason.RECORDS_DELETED, message=outcome.message)
    for loss in outcome.losses:
        metrics.UNCONSUMED_DELETED.labels(namespace, name, loss.group, loss.topic).inc(loss.records)
        kopf.warn(
            body,
            reason=EventReason.UNCONSUMED_RECORDS_DELETED,
            message=f"group {loss.group} lost {loss.records} unread records of "
            f"{loss.topic} (maxRetention/deleteBefore)",
        )
    for lost in outcome.notify_losses:
        metrics.UNCONSUMED_LOST.labels(namespace, name, lost.group, lost.tp.topic, lost.cause).inc(
            lost.records
        )
        # One logfmt line a loss, for log pipelines to parse; keys stay in status/events.
        log.warning(
            "unread_records_lost policy=%s/%s group=%s topic=%s partition=%d "
            "from_offset=%d to_offset=%d records=%d cause=%s record_purge=%s",
            namespace,
            name,
            json.dumps(lost.group),
            json.dumps(lost.tp.topic),
            lost.tp.partition,
            lost.from_offset,
            lost.to_offset,
            lost.records,
            lost.cause,
            lost.by or "-",
        )
    if outcome.notify_losses:
        # One event a run, not one a partition: a dead group on thousands of partitions
        # would flood the namespace's events.
        records = sum(lost.records for lost in outcome.notify_losses)
        kopf.warn(
            body,
            reason=EventReason.UNCONSUMED_RECORDS_DELETED,
            message=f"{records} unread records lost on {len(outcome.notify_losses)} "
            f"partition(s), e.g. {_describe(outcome.notify_losses[0])}; see status.losses",
        )
    if outcome.at_risk is not None:
        _set_at_risk(namespace, name, outcome.at_risk)
    _set_groups_behind(namespace, name, outcome.groups)
    _set_remote(namespace, name, outcome)
    if outcome.tombstones is not None:
        _report_tombstones(body, namespace, name, outcome.tombstones)
    if outcome.orphans is not None:
        _report_orphans(body, namespace, name, outcome.orphans)
    for failure in outcome.failures[:10]:
        kopf.warn(body, reason=EventReason.PARTITION_FAILED, message=failure)


def _describe(lost: Loss) -> str:
    """One loss in words: who, how many, where, why, and the first keys when known."""
    cause = lost.cause if lost.by is None else f"{lost.cause} {lost.by}"
    keys = ", ".join(repr(k) for _, k in lost.sample)
    return (
        f"group {lost.group} lost {lost.records} unread records of {lost.tp} "
        f"(offsets {lost.from_offset}-{lost.to_offset - 1}, cause {cause}"
        + (f", keys {keys}" if keys else "")
        + ")"
    )


def _set_at_risk(namespace: str, name: str, risks: list[Risk]) -> None:
    soonest: dict[tuple[str, ...], int] = {}
    for risk in risks:
        key = (risk.group, risk.tp.topic)
        soonest[key] = min(soonest.get(key, risk.within_ms), risk.within_ms)
    metrics.AT_RISK_SERIES.replace(namespace, name, {k: ms / 1000 for k, ms in soonest.items()})


def _set_remote(namespace: str, name: str, outcome: RunOutcome) -> None:
    """The gauges while remote segments wait for deletion (none while none wait or while
    it is unknown, as a purge's); the lag once, at the run that found the deletion done."""
    if outcome.remote_pending_segments and outcome.remote_pending_bytes is not None:
        metrics.REMOTE_SEGMENTS_PENDING.labels(KIND, namespace, name).set(
            outcome.remote_pending_segments
        )
        metrics.REMOTE_BYTES_PENDING.labels(KIND, namespace, name).set(outcome.remote_pending_bytes)
    else:
        _forget_remote(namespace, name)
    if outcome.remote_deletion_lag_s is not None:
        metrics.REMOTE_DELETION_LAG.labels(KIND).observe(outcome.remote_deletion_lag_s)


def _forget_remote(namespace: str, name: str) -> None:
    for gauge in (metrics.REMOTE_SEGMENTS_PENDING, metrics.REMOTE_BYTES_PENDING):
        with contextlib.suppress(KeyError):  # none set: nothing to remove
            gauge.remove(KIND, namespace, name)


def _set_groups_behind(namespace: str, name: str, groups: list[GroupSummary]) -> None:
    # A group dropped from the spec, or read as another type, loses its old series.
    behind: dict[tuple[str, ...], float] = {
        (g.name, g.type): float(g.records_behind) for g in groups
    }
    metrics.BEHIND_SERIES.replace(namespace, name, behind)


def _report_tombstones(body: kopf.Body, namespace: str, name: str, report: TombstoneReport) -> None:
    margins: dict[tuple[str, ...], int] = {}
    for risk in report.risks:
        key = (risk.group, risk.tp.topic)
        margins[key] = min(margins.get(key, risk.margin_ms), risk.margin_ms)
    for group, topic in report.new_pairs:
        kopf.warn(
            body,
            reason=EventReason.TOMBSTONES_AT_RISK,
            message=f"group {group} lags past its share of delete.retention.ms on "
            f"compacted topic {topic} (margin {margins[(group, topic)] // 1000}s): it can "
            "miss deletes and keep stale keys",
        )
    for raised in report.raised:
        metrics.DELETE_RETENTION_RAISED.labels(namespace, name, raised.topic).inc()
        kopf.info(
            body,
            reason=EventReason.DELETE_RETENTION_RAISED,
            message=f"delete.retention.ms of {raised.topic} raised from {raised.from_ms} "
            f"to {raised.to_ms} so the slowest listed group stays inside it",
        )
    metrics.MARGIN_SERIES.replace(namespace, name, {k: ms / 1000 for k, ms in margins.items()})


def _report_orphans(body: kopf.Body, namespace: str, name: str, report: OrphanReport) -> None:
    """An event on every removal (KIP-370 asks for a record of each), and the gauges."""
    for removed in report.removed:
        metrics.ORPHAN_BYTES_RECLAIMED.labels(namespace, name, str(removed.broker)).inc(
            removed.size_bytes
        )
        kopf.info(
            body,
            reason=EventReason.ORPHAN_REMOVED,
            message=f"removed {removed.name} ({removed.size_bytes} bytes) from "
            f"{removed.log_dir} of broker {removed.broker}: {removed.reason}",
        )
    for broker, (count, size) in report.per_broker.items():
        metrics.ORPHAN_PARTITIONS.labels(namespace, name, str(broker)).set(count)
        metrics.ORPHAN_BYTES.labels(namespace, name, str(broker)).set(size)
