"""The RetentionPolicy fleet wired to the world: the operator's flags turned into the
adapters each policy run reaches Kafka, Kubernetes, Spark and broker volumes through. The
Kopf handlers and what they report are in handlers.retention."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from kafka_retention.adapters.broker_volumes import ExecVolumes, LocalVolumes
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kube import list_custom_objects, read_peering
from kafka_retention.adapters.kube_clusters import resolve_cluster
from kafka_retention.adapters.kube_exec import exec_in_pod, running_pods
from kafka_retention.adapters.policy_status import PolicyStatus
from kafka_retention.adapters.spark import SparkBatchPlanner
from kafka_retention.config import OperatorConfig
from kafka_retention.core.plan_request import PlanRequest
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import UNBOUND, OrphanSpec
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.core.resources import RETENTION_POLICIES
from kafka_retention.core.specs import ClusterRef
from kafka_retention.handlers.common import tenancy
from kafka_retention.services.cluster_ids import ClusterIds
from kafka_retention.services.leadership import Leadership
from kafka_retention.services.policy.batches import Environment
from kafka_retention.services.policy.fleet import Fleet, FleetReport
from kafka_retention.services.ports import BrokerVolumes
from kafka_retention.services.watch.orphans import VolumeFinder


def plan_job(spark: Any, request: PlanRequest) -> dict[str, PolicyPlan]:
    """The Spark plan job, for the local session (adapters.spark.PlanJob)."""
    # Imported at the first batch planned in Spark: pyspark is not loaded before one.
    from retention_jobs.plan_job import run_batch

    return run_batch(spark, request)


def volume_finder(cfg: OperatorConfig) -> VolumeFinder:
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


def build_fleet(
    cfg: OperatorConfig, report: FleetReport, purges: PurgeLedger | None = None
) -> Fleet:
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
        spark=SparkBatchPlanner(cfg.spark, plan_job),
        in_process_max_partitions=cfg.in_process_max_partitions(),
        apply_workers=sched.apply_workers,
        purges=purges,
        find_volumes=volume_finder(cfg),
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
