"""Kopf glue for RetentionPolicy: the watch feeds one scheduler (services.policy.fleet); each
run's outcome becomes events and metrics here. No thread or daemon is held per policy."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

import kopf

from kafka_retention import metrics
from kafka_retention.adapters.broker_volumes import ExecVolumes, LocalVolumes
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kube import drop_finalizer, list_custom_objects, read_peering
from kafka_retention.adapters.kube_clusters import resolve_cluster
from kafka_retention.adapters.kube_exec import exec_in_pod, running_pods
from kafka_retention.adapters.policy_status import PolicyStatus
from kafka_retention.adapters.spark import SparkBatchPlanner
from kafka_retention.config import OperatorConfig
from kafka_retention.core.conditions import EventReason
from kafka_retention.core.loss import Loss, Risk
from kafka_retention.core.policy_spec import UNBOUND, OrphanSpec
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.core.resources import FINALIZER, GROUP, RETENTION_POLICIES, VERSION
from kafka_retention.core.specs import ClusterRef
from kafka_retention.handlers.common import purge_ledger, tenancy
from kafka_retention.services.cluster_ids import ClusterIds
from kafka_retention.services.leadership import Leadership
from kafka_retention.services.policy.batches import Environment
from kafka_retention.services.policy.fleet import Fleet
from kafka_retention.services.policy.run import RunOutcome
from kafka_retention.services.ports import BrokerVolumes
from kafka_retention.services.watch.orphans import OrphanReport, VolumeFinder
from kafka_retention.services.watch.tombstones import TombstoneReport

KIND = "RetentionPolicy"
log = logging.getLogger(__name__)


def _volume_finder(cfg: OperatorConfig) -> VolumeFinder:
    def find(want: OrphanSpec, namespace: str) -> list[BrokerVolumes]:
        brokers = want.brokers
        if brokers.access == UNBOUND:
            # services.tenancy fills in the binding's brokers when it admits a run; a spec
            # that reaches here without them must not fall back to anything.
            raise PermissionError("the policy's KafkaClusterBinding brokers were not applied")
        if brokers.access == "local":
            if not cfg.local_broker_volumes:
                raise PermissionError(
                    "spec.cluster.brokers.access local is off in this operator "
                    "(run it with --local-broker-volumes)"
                )
            return [LocalVolumes()]
        ns = brokers.namespace or namespace
        pods = running_pods(ns, dict(brokers.match_labels))
        if not pods:
            raise LookupError(f"no running pod in {ns} matches {dict(brokers.match_labels)}")
        return [ExecVolumes(partial(exec_in_pod, ns, pod, brokers.container)) for pod in pods]

    return find


def build_fleet(cfg: OperatorConfig, purges: PurgeLedger | None = None) -> Fleet:
    sched = cfg.scheduling
    rules = tenancy(cfg)
    # Overlap and loss blame compare clusters by Kafka's own id, not by how specs name them.
    ids = ClusterIds(resolve_cluster, KafkaAdmin)

    def cluster_of(namespace: str, ref: ClusterRef) -> str | None:
        # A bound resource's id is its binding's: no Secret read, no connection, and none
        # at all for a namespace the binding does not admit.
        if ref.binding is not None:
            return rules.bound_cluster_id(namespace, ref)
        return ids.of(namespace, ref)

    if purges is not None:
        purges.resolve_with(cluster_of)
    env = Environment(
        connection=lambda spec, namespace: rules.connection(namespace, spec.cluster),
        tenancy=rules,
        connect=KafkaAdmin,
        spark=SparkBatchPlanner(cfg.spark),
        in_process_max_partitions=cfg.in_process_max_partitions(),
        apply_workers=sched.apply_workers,
        purges=purges,
        find_volumes=_volume_finder(cfg),
        cluster_ids=ids,
    )
    leadership, resync = None, None
    if cfg.peering is not None:
        me = cfg.peering
        leadership = Leadership(me, read_peering, lambda: datetime.now(UTC))

        def resync() -> list[dict[str, Any]]:
            return [b for ns in me.scopes for b in list_custom_objects(RETENTION_POLICIES, ns)]

    return Fleet(
        env,
        report,
        workers=sched.workers,
        window=sched.batch_window_s,
        per_namespace=cfg.spark.mode != "local",
        leadership=leadership,
        resync=resync,
        status_store=PolicyStatus,
    )


@kopf.on.startup()
async def start_scheduler(memo: kopf.Memo, **_: Any) -> None:
    if "fleet" not in memo:
        memo["fleet"] = build_fleet(memo.get("config") or OperatorConfig(), purge_ledger(memo))


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
        metrics.UNCONSUMED_DELETED.labels(namespace, name, loss["group"], loss["topic"]).inc(
            loss["records"]
        )
        kopf.warn(
            body,
            reason=EventReason.UNCONSUMED_RECORDS_DELETED,
            message=f"group {loss['group']} lost {loss['records']} unread records of "
            f"{loss['topic']} (maxRetention/deleteBefore)",
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


def _set_groups_behind(namespace: str, name: str, groups: list[dict[str, Any]]) -> None:
    # A group dropped from the spec, or read as another type, loses its old series.
    behind: dict[tuple[str, ...], float] = {
        (str(g["name"]), str(g["type"])): float(g["recordsBehind"]) for g in groups
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
