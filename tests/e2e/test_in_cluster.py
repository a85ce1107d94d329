"""The operator as users deploy it: the Deployment from manifests/ (local overlay), the
image built from the project's Dockerfile, on the local stack's real node. It reconciles
both kinds, plans a RetentionPolicy with spark-submit in cluster mode (a driver pod and
executor pods of the same image), and answers `kubectl exec`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.stack import Stack
from tests.helpers.deployment import OPERATOR_NS, deployed, local_overlay
from tests.helpers.kafka import Kafka
from tests.helpers.kube import create_namespace, get, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.paths import REPO
from tests.helpers.policies import apply_policy_on
from tests.helpers.purges import apply_purge, cuts, purge_finished

# It installs the operator in kafka-retention-system with cluster-wide RBAC, and deletes
# that namespace: beside any test but the others that do (helpers/sharing.py).
pytestmark = pytest.mark.stack

# Only namespaces named so: the session's own operator process watches `e2e-*`, and two
# operators must never reconcile the same object.
# One namespace, named exactly: the session's e2e operator watches `e2e-*`, and a replica
# with --peering (as the overlay runs it) takes plain namespace names, not patterns.
WATCHED = "incluster"


def rendered_overlay(stack: Stack) -> list[dict[str, Any]]:
    """The local overlay as kubectl renders it, watching WATCHED namespaces and planning
    every policy with Spark in pods (a large policy's path, taken by a tiny one)."""
    return local_overlay(
        stack,
        dropped_args=("--all-namespaces",),
        added_args=(
            f"--namespace={WATCHED}",
            "--spark-mode=kubernetes",
            "--in-process-max-partitions=0",
        ),
    )


@pytest.fixture(scope="module")
def in_cluster(stack: Stack) -> Iterator[str]:
    """The operator Deployment, Available, watching WATCHED (which exists before it starts:
    it creates its KopfPeering there); yields the name of its pod."""
    create_namespace(stack, WATCHED)
    # What a namespace needs for pod runs (docs/how-to/spark-on-kubernetes.md):
    # the driver's service account and role.
    stack.kubectl("apply", "-k", str(REPO / "manifests" / "spark-namespace"), "-n", WATCHED)
    with deployed(stack, rendered_overlay(stack), [WATCHED]) as pod:
        yield pod


@pytest.fixture
def ns(stack: Stack, in_cluster: str) -> Iterator[str]:
    """The watched namespace, emptied of this test's resources after it."""
    yield WATCHED
    stack.kubectl("delete", "retentionpolicies,recordpurges", "--all", "-n", WATCHED, check=False)


def test_operator_pod_runs_the_project_image_and_answers_exec(
    stack: Stack, in_cluster: str
) -> None:
    pod = get(stack, "pod", OPERATOR_NS, in_cluster)
    (status,) = pod["status"]["containerStatuses"]
    assert status["ready"] is True
    assert status["image"].endswith("kafka-retention-operator:0.1.0")
    done = stack.kubectl(
        "exec",
        "-n",
        OPERATOR_NS,
        in_cluster,
        "--",
        "python",
        "-c",
        "import os, retention_jobs.plan_job as j; print(os.getuid(), j.__name__)",
    )
    assert done.stdout.split() == ["10001", "retention_jobs.plan_job"]


def test_in_cluster_operator_purges_records(stack: Stack, ns: str, kafka: Kafka) -> None:
    topic = kafka.topic({0: 40, 1: 40})
    apply_purge(stack, ns, "purge", partitions=cuts(topic, {0: 25, 1: -1}))
    obj = purge_finished(stack, ns, "purge", timeout=90)
    assert obj["status"]["phase"] == "Succeeded"
    assert log_starts(kafka.admin, topic, 2) == [25, 40]


class PodWatch:
    """Every pod of a Spark run seen in a namespace while it ran, by role."""

    def __init__(self, stack: Stack, namespace: str) -> None:
        self.stack, self.namespace = stack, namespace
        self.seen: dict[str, dict[str, Any]] = {}
        self.owned_seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> PodWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def current(self) -> list[dict[str, Any]]:
        done = self.stack.kubectl(
            "get", "pods", "-n", self.namespace, "-l", "spark-role", "-o", "json", check=False
        )
        if done.returncode != 0:
            return []
        items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
        return items

    def _poll(self) -> None:
        while not self._stop.is_set():
            for pod in self.current():
                name = pod["metadata"]["name"]
                phase = pod.get("status", {}).get("phase")
                seen = self.seen.setdefault(
                    name, {"role": pod["metadata"]["labels"]["spark-role"], "phases": []}
                )
                if phase and (not seen["phases"] or seen["phases"][-1] != phase):
                    seen["phases"].append(phase)
            self.owned_seen.update(driver_owned(self.stack, self.namespace, check=False))
            time.sleep(0.5)

    def roles(self, phase: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pod in self.seen.values():
            if phase in pod["phases"]:
                counts[pod["role"]] = counts.get(pod["role"], 0) + 1
        return counts


def driver_owned(stack: Stack, namespace: str, check: bool = True) -> list[str]:
    """Objects in the namespace whose owner is a Spark driver pod."""
    done = stack.kubectl(
        "get", "services,networkpolicies,configmaps", "-n", namespace, "-o", "json", check=check
    )
    if done.returncode != 0:
        return []
    found = json.loads(done.stdout)["items"]
    return [
        f"{o['kind']}/{o['metadata']['name']}"
        for o in found
        if any(
            ref["kind"] == "Pod" and ref["name"].endswith("-driver")
            for ref in o["metadata"].get("ownerReferences", [])
        )
    ]


def test_policy_is_planned_by_spark_driver_and_executor_pods_and_its_cuts_applied(
    stack: Stack, ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 60, 1: 60, 2: 60})
    group = kafka.group_at(topic, "g", {0: 45, 1: 10, 2: 60})
    with PodWatch(stack, ns) as watch:
        apply_policy_on(
            stack, ns, "consumed", topic, interval="10m", deleteConsumed={"groups": [group]}
        )

        def deleted_or_failed(o: dict[str, Any]) -> bool:
            last_run = o.get("status", {}).get("lastRun", {})
            return last_run.get("recordsDeleted") is not None or last_run.get("error") is not None

        obj = wait_for(stack, "retentionpolicy", ns, "consumed", deleted_or_failed, timeout=300)
        # The run's pods go once the plan is read: executors when the driver stops,
        # the driver (and its service) when the operator deletes it.
        deadline = time.monotonic() + 120
        while watch.current() and time.monotonic() < deadline:
            time.sleep(1)
        leftover = [p["metadata"]["name"] for p in watch.current()]
        # What spark-submit made beside the driver (its service, its NetworkPolicy, its
        # ConfigMaps) is owned by the driver pod: the garbage collector takes it too.
        deadline = time.monotonic() + 60
        while (owned := driver_owned(stack, ns)) and time.monotonic() < deadline:
            time.sleep(1)
    assert obj["status"]["lastRun"].get("error") is None, obj["status"]["lastRun"]
    assert log_starts(kafka.admin, topic, 3) == [45, 10, 60]
    assert obj["status"]["lastRun"]["recordsDeleted"] == 115
    ran = watch.roles("Running")
    assert ran.get("driver") == 1, watch.seen
    assert ran.get("executor", 0) >= 1, watch.seen
    assert leftover == []
    kinds = {o.split("/")[0] for o in watch.owned_seen}
    assert {"Service", "NetworkPolicy", "ConfigMap"} <= kinds, watch.owned_seen
    assert owned == []
