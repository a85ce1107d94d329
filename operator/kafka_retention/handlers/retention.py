"""Kopf daemon for RetentionPolicy: one loop per policy, so runs never overlap for the same
policy; a spec change (new generation) starts a run at once instead of waiting."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import kopf

from kafka_retention import config, metrics
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kube import StatusWriter, read_client_config
from kafka_retention.adapters.spark import (
    KubernetesRuns,
    SparkOperatorRuns,
    plan_in_pods,
    plan_locally,
)
from kafka_retention.core import spark_runs
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.resources import API_VERSION, GROUP, RETENTION_POLICIES, VERSION
from kafka_retention.handlers.common import namespaced
from kafka_retention.services import retention as service

KIND = "RetentionPolicy"


class RememberingWriter:
    """Writes status and keeps what it wrote: the next run starts from the status this
    daemon last wrote even if the watch has not delivered it back yet."""

    def __init__(self, writer: StatusWriter, status: Mapping[str, Any]) -> None:
        self.writer = writer
        self.status: dict[str, Any] = dict(status)

    def patch(self, status: Mapping[str, Any]) -> None:
        self.writer.patch(status)
        self.status.update(status)


def _planner(
    body: kopf.Body, namespace: str, name: str, generation: int | None
) -> Callable[[PolicySpec, dict[str, str], int], Any]:
    """Where this run's plan is computed, by the operator's --spark-mode."""
    from retention_jobs.request import PlanRequest

    cfg = config.current
    if cfg.mode == "local":
        return lambda spec, client, now_ms: plan_locally(
            PlanRequest.for_policy(spec, client, now_ms)
        )

    def in_pods(spec: PolicySpec, _client: dict[str, str], now_ms: int) -> Any:
        # Secrets stay out of the request: the driver reads clientConfigSecret itself.
        request = PlanRequest.for_policy(spec, {}, now_ms)
        run = spark_runs.RunSpec(
            spark_runs.Owner(API_VERSION, KIND, name, str(body["metadata"]["uid"])),
            namespace,
            generation or 0,
            cfg.image,
            cfg.service_account,
            request.to_json(),
            executors=cfg.executors,
            client_config_secret=spec.client_config_secret,
            # One run per scheduled slot: a restarted operator waits for the run it started.
            run_id=f"r{now_ms // spec.interval_ms}",
        )
        runs: KubernetesRuns | SparkOperatorRuns = (
            KubernetesRuns(cfg.master, cfg.ca_cert, cfg.token_file)
            if cfg.mode == "kubernetes"
            else SparkOperatorRuns()
        )
        return plan_in_pods(runs, run, cfg.run_timeout_s)

    return in_pods


@kopf.daemon(
    GROUP,
    VERSION,
    RETENTION_POLICIES,
    id="retention",
    # A run in progress (a Spark job) may finish for 30 s before it is cancelled.
    cancellation_backoff=30.0,
    cancellation_timeout=120.0,
)
def retention(
    stopped: kopf.DaemonStopped,
    body: kopf.Body,
    meta: kopf.Meta,
    spec: kopf.Spec,
    status: kopf.Status,
    namespace: str | None,
    name: str,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    namespace = namespaced(namespace)
    key = f"{namespace}/{name}"
    store = RememberingWriter(StatusWriter(RETENTION_POLICIES, namespace, name), status)

    def client_config(policy: PolicySpec) -> dict[str, str]:
        secret = policy.client_config_secret
        return read_client_config(namespace, secret) if secret else {}

    def connect(policy: PolicySpec, config: dict[str, str]) -> KafkaAdmin:
        return KafkaAdmin(policy.bootstrap_servers, config)

    try:
        while not stopped:
            generation = meta.get("generation")
            started = time.monotonic()
            try:
                outcome = service.run_policy(
                    service.Policy(
                        key=key,
                        spec=dict(spec),
                        status=store.status,
                        generation=generation,
                        store=store,
                        client_config=client_config,
                        connect=connect,
                        plan=_planner(body, namespace, name, generation),
                        now=lambda: datetime.now(UTC),
                    )
                )
            except Exception as err:
                logger.exception("policy run failed")
                outcome = service.RunOutcome(False, f"RunFailed: {err}", next_run_in=30.0)
            metrics.RUN_SECONDS.labels(KIND).observe(time.monotonic() - started)
            _report(body, namespace, name, outcome, logger)
            # Sleep until the next run, waking early for a new generation of the spec.
            wait = outcome.next_run_in if outcome.invalid_field is None else float("inf")
            deadline = time.monotonic() + wait
            while not stopped and time.monotonic() < deadline:
                if meta.get("generation") != generation:
                    break
                stopped.wait(min(1.0, max(0.0, deadline - time.monotonic())))
    finally:
        service.OVERLAPS.forget(key)


def _report(
    body: kopf.Body, namespace: str, name: str, outcome: service.RunOutcome, logger: kopf.Logger
) -> None:
    if outcome.invalid_field is not None:
        kopf.warn(body, reason="InvalidSpec", message=outcome.message)
        metrics.RUN_FAILURES.labels(namespace, name, "InvalidSpec").inc()
        return
    if not outcome.ok:
        kopf.warn(body, reason="RunFailed", message=outcome.message)
        metrics.RUN_FAILURES.labels(namespace, name, outcome.message.split(":")[0]).inc()
        return
    logger.info(outcome.message)
    for topic, count in outcome.deleted_by_topic.items():
        metrics.RECORDS_DELETED.labels(KIND, namespace, name, topic).inc(count)
    metrics.BYTES_RECLAIMED.labels(KIND, namespace, name).inc(outcome.bytes_reclaimed)
    metrics.PARTITIONS_CUT.labels(KIND, namespace, name).inc(outcome.partitions_cut)
    if outcome.records_deleted:
        kopf.info(body, reason="RecordsDeleted", message=outcome.message)
    for loss in outcome.losses:
        metrics.UNCONSUMED_DELETED.labels(namespace, name, loss["group"], loss["topic"]).inc(
            loss["records"]
        )
        kopf.warn(
            body,
            reason="UnconsumedRecordsDeleted",
            message=f"group {loss['group']} lost {loss['records']} unread records of "
            f"{loss['topic']} (maxRetention/deleteBefore)",
        )
    for failure in outcome.failures[:10]:
        kopf.warn(body, reason="PartitionFailed", message=failure)
