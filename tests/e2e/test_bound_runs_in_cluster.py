"""A bound policy's Spark run on the local node, with the operator as deployed (the local
overlay back to strict tenancy, --spark-mode kubernetes): the driver and executor pods
run in the operator's namespace, owned by nothing there, and nothing the tenant writes
in its own namespace reaches the run. The tenant's own service account has written the
run's `<run>-plan` ConfigMaps there before the run started, under the names its runs
would take; the cuts made are the driver's, and the run is removed after."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devstack.stack import Stack
from kafka_retention.core.durations import parse_duration_ms
from kafka_retention.kube_objects.chunks import RUN_LABEL
from kafka_retention.kube_objects.spark_runs import batch_run_name
from tests.helpers import tenancy
from tests.helpers.deployment import OPERATOR_NS, deployed, local_overlay
from tests.helpers.forgery import forge_plan, run_configmaps, tenant_account
from tests.helpers.kafka import Kafka
from tests.helpers.kube import apply, create_namespace, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on
from tests.helpers.topics import cluster_id

# It installs the operator in kafka-retention-system, as test_in_cluster does: beside any
# test but the others that do (helpers/sharing.py).
pytestmark = pytest.mark.stack

# A plain name (a replica with --peering takes no patterns), watched by no other operator.
TENANT = "icbound"
OPEN_TENANCY = "kafka-retention-open-tenancy"
INTERVAL = "10m"


@pytest.fixture(scope="module")
def strict_in_pods(stack: Stack) -> Iterator[str]:
    """The local overlay, strict, planning every policy with Spark in pods. No
    manifests/spark-namespace in the tenant's namespace: bound runs never go there."""
    create_namespace(stack, TENANT)
    docs = local_overlay(
        stack,
        dropped_args=("--all-namespaces", "--tenancy=open"),
        added_args=(
            "--tenancy=strict",
            f"--namespace={TENANT}",
            "--spark-mode=kubernetes",
            "--in-process-max-partitions=0",
        ),
        dropped_objects=(OPEN_TENANCY,),
    )
    with deployed(stack, docs, [TENANT]) as pod:
        yield pod


def spark_pods(stack: Stack, namespace: str) -> list[dict[str, Any]]:
    done = stack.kubectl("get", "pods", "-n", namespace, "-l", "spark-role", "-o", "json")
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def test_a_bound_policy_plans_in_pods_in_the_operators_namespace_whatever_its_tenant_forges(
    stack: Stack, admin: AdminClient, strict_in_pods: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 60, 1: 60, 2: 60})
    group = kafka.group_at(topic, "g", {0: 45, 1: 10, 2: 60})
    binding = f"icbound-{uuid.uuid4().hex[:6]}"
    apply(stack, tenancy.binding(binding, cluster_id(admin), stack.kafka.bootstrap_servers, TENANT))
    account = tenant_account(stack, TENANT)
    # The names the run can take (this slot and the next): forged before it starts, as a
    # tenant who read the operator's naming would. A plan may only lower a cut: one at
    # offset 1, if read, would show as log starts of 1.
    slot = time.time_ns() // 1_000_000 // parse_duration_ms(INTERVAL)
    runs = [batch_run_name([f"{TENANT}/consumed@1"], f"r{s}") for s in (slot, slot + 1)]
    for run in runs:
        forge_plan(stack, TENANT, account, run, f"{TENANT}/consumed", {topic: [1, 1, 1]})
    try:
        apply_policy_on(
            stack,
            TENANT,
            "consumed",
            topic,
            interval=INTERVAL,
            cluster={"clusterRef": binding},
            deleteConsumed={"groups": [group]},
        )
        drivers: list[dict[str, Any]] = []
        deadline = time.monotonic() + 180
        while not (drivers := spark_pods(stack, OPERATOR_NS)):
            assert not spark_pods(stack, TENANT), "a bound run went to the tenant's namespace"
            assert time.monotonic() < deadline, (
                "no Spark pod in the operator's namespace: "
                + stack.kubectl(
                    "get", "retentionpolicy", "consumed", "-n", TENANT, "-o", "json"
                ).stdout[-3000:]
                + stack.kubectl("get", "events", "-n", OPERATOR_NS, check=False).stdout[-3000:]
            )
            time.sleep(0.5)
        (driver,) = [p for p in drivers if p["metadata"]["labels"]["spark-role"] == "driver"]
        run = driver["metadata"]["labels"][RUN_LABEL]
        assert run in runs
        assert "ownerReferences" not in driver["metadata"]

        def finished(o: dict[str, Any]) -> bool:
            last_run = o.get("status", {}).get("lastRun", {})
            return last_run.get("recordsDeleted") is not None or last_run.get("error") is not None

        obj = wait_for(stack, "retentionpolicy", TENANT, "consumed", finished, timeout=300)
        assert obj["status"]["lastRun"].get("error") is None, obj["status"]["lastRun"]
        assert log_starts(kafka.admin, topic, 3) == [45, 10, 60]  # the driver's plan
        assert obj["status"]["lastRun"]["recordsDeleted"] == 115
        assert spark_pods(stack, TENANT) == []
        # Nothing owns the run, so the operator removed it: its pods and ConfigMaps.
        deadline = time.monotonic() + 120
        while spark_pods(stack, OPERATOR_NS) or run_configmaps(stack, OPERATOR_NS, run):
            assert time.monotonic() < deadline, "the run was left in the operator's namespace"
            time.sleep(1)
        # The tenant's forgeries are its own: untouched, and unread.
        assert len(run_configmaps(stack, TENANT, run)) == 2
    finally:
        stack.kubectl("delete", "retentionpolicies", "--all", "-n", TENANT, check=False)
        stack.kubectl("delete", "kafkaclusterbinding", binding, check=False)
