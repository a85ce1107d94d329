"""Spark runs as pods, against the real API server and node: objects are created once,
their states are read, failures come back with their message, and the plan travels back
through checksummed ConfigMaps. tests/e2e/test_in_cluster.py runs a whole plan in pods."""

from __future__ import annotations

import json
import secrets
import time

import pytest

from devstack.stack import Stack
from kafka_retention.adapters import kube
from kafka_retention.adapters.spark import (
    KubernetesRuns,
    SparkOperatorRuns,
    plan_in_pods,
    read_plan,
)
from kafka_retention.core.plan_lines import to_json_lines
from kafka_retention.core.plan_request import PlanRequest
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.kube_objects.chunks import RUN_LABEL, SinkError
from kafka_retention.kube_objects.owners import Owner
from kafka_retention.kube_objects.spark_runs import RunSpec, run_name
from retention_jobs import sinks
from tests.helpers.kube import install_spark_operator_crd


@pytest.fixture
def kubeconfig(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process Kubernetes client talks to the local API server for this test."""
    monkeypatch.setenv("KUBECONFIG", str(stack.kube.kubeconfig))
    monkeypatch.setattr(kube, "_api", None)


def owner_policy(stack: Stack, namespace: str) -> Owner:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "pipeline", "namespace": namespace},
        "spec": {
            "cluster": {"bootstrapServers": "127.0.0.1:39091"},
            "topics": {"names": ["t"]},
            "maxRetention": "7d",
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    got = json.loads(
        stack.kubectl("get", "retentionpolicy", "pipeline", "-n", namespace, "-o", "json").stdout
    )
    return Owner(
        "kafka-retention.io/v1alpha1", "RetentionPolicy", "pipeline", got["metadata"]["uid"]
    )


def run_spec(owner: Owner | None, namespace: str) -> RunSpec:
    policy = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "127.0.0.1:39091"},
            "topics": {"names": ["t"]},
            "maxRetention": "1d",
        }
    )
    request = PlanRequest.for_policy(policy, {}, 1_800_000_000_000, policy_id=f"{namespace}/t")
    return RunSpec(
        (owner,) if owner is not None else (),
        run_name("RetentionPolicy", "pipeline", 1),
        namespace,
        "kafka-retention-operator:test",
        "default",
        request.to_json(),
        # Never reach for a registry: tests talk to this machine only.
        spark_conf={"spark.kubernetes.container.image.pullPolicy": "Never"},
    )


@pytest.mark.stack
def test_kubernetes_mode_creates_one_driver_pod_and_reports_why_it_cannot_start(
    stack: Stack, namespace: str, kubeconfig: None
) -> None:
    spec = run_spec(owner_policy(stack, namespace), namespace)
    runs = kubernetes_runs(stack)
    assert runs.submit(spec) is True
    pod = json.loads(
        stack.kubectl("get", "pod", f"{spec.name}-driver", "-n", namespace, "-o", "json").stdout
    )
    assert pod["spec"]["containers"][0]["image"] == "kafka-retention-operator:test"
    assert pod["metadata"]["labels"][RUN_LABEL] == spec.name
    args = pod["spec"]["containers"][0]["args"]
    assert "--sink-configmaps" in args
    request = json.loads(
        stack.kubectl(
            "get", "configmap", f"{spec.name}-request", "-n", namespace, "-o", "json"
        ).stdout
    )
    assert request["metadata"]["ownerReferences"][0]["uid"] == spec.owners[0].uid
    (policy,) = json.loads(request["data"]["request.json"])["policies"]
    assert policy["topics"]["names"] == ["t"]
    # The image is not on the node and may never be pulled: the node says so.
    deadline = time.monotonic() + 90
    while "ErrImageNeverPull" not in (state := runs.state(spec)).message:
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert state.phase == "Pending"
    assert not state.finished
    assert runs.submit(spec) is False  # same object and generation: same run, no new pod
    drivers = stack.kubectl(
        "get", "pods", "-n", namespace, "-l", "spark-role=driver", "-o", "name"
    ).stdout.split()
    assert drivers == [f"pod/{spec.name}-driver"]


def kubernetes_runs(stack: Stack) -> KubernetesRuns:
    return KubernetesRuns(
        stack.kube.server,
        ca_cert=str(stack.kube.root / "certs" / "apiserver.crt"),
        token_file=str(stack.kube.root / "token"),
    )


@pytest.mark.stack
def test_a_run_in_the_operators_namespace_is_owned_by_nothing_and_removed_when_it_fails(
    stack: Stack, namespace: str, kubeconfig: None
) -> None:
    """A bound batch's run (in the operator's namespace: here the test's own) names no
    owner, which the garbage collector would take as gone across namespaces and delete
    the driver at once. Nothing else would remove it either: a run that gives no plan is
    removed by the operator, its driver and its request ConfigMap."""
    spec = run_spec(None, namespace)
    runs = kubernetes_runs(stack)
    assert runs.submit(spec) is True
    pod = json.loads(
        stack.kubectl("get", "pod", f"{spec.name}-driver", "-n", namespace, "-o", "json").stdout
    )
    assert "ownerReferences" not in pod["metadata"]
    request = json.loads(
        stack.kubectl(
            "get", "configmap", f"{spec.name}-request", "-n", namespace, "-o", "json"
        ).stdout
    )
    assert "ownerReferences" not in request["metadata"]
    time.sleep(5)  # the garbage collector's pass: an ownerless driver stays
    assert runs.state(spec).phase != "Unknown"
    with pytest.raises(RuntimeError, match="gave no plan within 0s"):
        plan_in_pods(runs, spec, timeout_s=0, poll_s=0)
    deadline = time.monotonic() + 60
    while True:
        left = stack.kubectl(
            "get",
            "pods,configmaps",
            "-n",
            namespace,
            "-l",
            f"{RUN_LABEL}={spec.name}",
            "-o",
            "name",
        ).stdout.split()
        if not left:
            break
        assert time.monotonic() < deadline, f"left behind: {left}"
        time.sleep(0.5)


@pytest.mark.stack
def test_spark_operator_mode_creates_an_owned_application_and_surfaces_its_failure(
    stack: Stack, namespace: str, kubeconfig: None
) -> None:
    install_spark_operator_crd(stack)
    spec = run_spec(owner_policy(stack, namespace), namespace)
    runs = SparkOperatorRuns()
    for _ in range(50):  # discovery of a just-established CRD can lag a moment
        try:
            assert runs.submit(spec) is True
            break
        except kube.ApiException as exc:
            if exc.status != 404:
                raise
            time.sleep(0.2)
    app = json.loads(
        stack.kubectl("get", "sparkapplication", spec.name, "-n", namespace, "-o", "json").stdout
    )
    assert app["metadata"]["ownerReferences"][0]["uid"] == spec.owners[0].uid
    assert app["spec"]["image"] == "kafka-retention-operator:test"
    assert runs.state(spec).phase == "Pending"
    assert runs.submit(spec) is False
    # What the spark-operator writes when the driver dies:
    stack.kubectl(
        "patch",
        "sparkapplication",
        spec.name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(
            {
                "status": {
                    "applicationState": {
                        "state": "FAILED",
                        "errorMessage": "driver container OOMKilled",
                    }
                }
            }
        ),
    )
    state = runs.state(spec)
    assert state.phase == "Failed"
    assert state.finished
    assert state.message == "driver container OOMKilled"


@pytest.mark.stack
def test_plan_comes_back_through_configmaps_and_a_missing_part_is_refused(
    stack: Stack, namespace: str, kubeconfig: None
) -> None:
    owner = owner_policy(stack, namespace)
    # Random padding: the driver gzips its plan, so repeated bytes would fit in one part.
    rows = [
        PlanRow("t", p, target_offset=p * 10, reason=secrets.token_urlsafe(2250))
        for p in range(1000)
    ]  # about 3 MB, 2.3 MB gzipped: three parts
    payload = to_json_lines(rows, {"c": "compact"}, [])
    run = "kr-test-sink-g1"
    written = sinks.write_configmaps(run, namespace, payload, [owner.reference()])
    assert written >= 3
    assert read_plan(namespace, run) == payload
    stack.kubectl("delete", "configmap", f"{run}-plan-0001", "-n", namespace)
    with pytest.raises(SinkError, match="expected"):
        read_plan(namespace, run)
    assert read_plan(namespace, "kr-never-ran-g1") is None
