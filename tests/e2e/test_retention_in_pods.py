"""RetentionPolicy with --spark-mode spark-operator, end to end without a kubelet: the
operator creates the SparkApplication; the test plays the spark-operator and its driver
(runs the same plan job on the request ConfigMap, writes the plan ConfigMaps, marks the
application COMPLETED); the operator then applies the plan to the real cluster.

Open tenancy (the operator these tests start by default) runs a policy's Spark in the
policy's namespace, owned by the policy; strict tenancy runs a bound policy's in the
operator's own namespace, where the tenant can write nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.adapters import kube
from kafka_retention.core.plan_request import PlanRequest
from kafka_retention.core.policy import PolicyPlan
from retention_jobs import plan_job, sinks
from tests.helpers import tenancy
from tests.helpers.commits import commit
from tests.helpers.forgery import forge_plan, run_configmaps, tenant_account
from tests.helpers.kafka import Kafka
from tests.helpers.kube import get, install_spark_operator_crd, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on
from tests.helpers.topics import cluster_id

pytestmark = pytest.mark.stack


@pytest.fixture
def playing_driver(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test plays the spark-operator and its driver: the SparkApplication CRD is
    served, and this process's Kubernetes adapter (the driver's ConfigMap sink) talks to
    the stack's API server."""
    install_spark_operator_crd(stack)
    monkeypatch.setenv("KUBECONFIG", str(stack.kube.kubeconfig))
    monkeypatch.setattr(kube, "_api", None)


def spark_operator_mode(
    stack: Stack, namespace: str, tmp_path: Path, *extra: str
) -> OperatorProcess:
    """An operator of the test's own that plans every policy, even a tiny one (as a large
    one would be), through a SparkApplication."""
    args = ("--spark-mode", "spark-operator", *extra, "--in-process-max-partitions", "0")
    return OperatorProcess(stack, [namespace], tmp_path / "operator.log", args).start()


def plan_applied(stack: Stack, namespace: str, name: str) -> dict[str, Any]:
    """The policy once its run applied the plan (lastRun.recordsDeleted is set)."""

    def applied(o: dict[str, Any]) -> bool:
        return o.get("status", {}).get("lastRun", {}).get("recordsDeleted") is not None

    return wait_for(stack, "retentionpolicy", namespace, name, applied, timeout=60)


def sparkapplications(stack: Stack, namespace: str) -> list[dict[str, Any]]:
    done = stack.kubectl("get", "sparkapplications", "-n", namespace, "-o", "json")
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def apply_policy_and_wait_for_run(
    stack: Stack,
    namespace: str,
    name: str,
    interval: str,
    topic: str,
    group: str,
    runs_in: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A deleteConsumed policy on `topic`, and the SparkApplication its first run makes
    (in `runs_in`, else the policy's namespace)."""
    apply_policy_on(
        stack, namespace, name, topic, interval=interval, deleteConsumed={"groups": [group]}, **spec
    )
    deadline = time.monotonic() + 60
    while not (apps := sparkapplications(stack, runs_in or namespace)):
        assert time.monotonic() < deadline, "no SparkApplication was created"
        time.sleep(0.5)
    (app,) = apps
    return app


def play_driver(
    stack: Stack,
    spark: Any,
    namespace: str,
    app: dict[str, Any],
    before_write: Callable[[dict[str, PolicyPlan]], None] | None = None,
) -> PlanRequest:
    """The spark-operator's and its driver's part: run the plan job on the run's request
    and write the plan ConfigMaps, as the driver pod does (`before_write` runs between
    the two, with the plan). Returns the request."""
    args = dict(zip(app["spec"]["arguments"][::2], app["spec"]["arguments"][1::2], strict=True))
    assert args["--namespace"] == namespace  # the driver reads and writes where it runs
    request = PlanRequest.from_json(
        sinks.read_configmap_key(
            namespace, args["--request"].removeprefix("configmap:"), "request.json"
        )
    )
    results = plan_job.run_batch(spark, request)
    if before_write is not None:
        before_write(results)
    sinks.write_configmaps(
        args["--sink-configmaps"],
        namespace,
        plan_job.batch_lines(results),
        json.loads(args["--owner-references"]),
    )
    return request


def complete(stack: Stack, namespace: str, name: str, plan_written: bool = False) -> None:
    """The spark-operator's part: the application COMPLETED. An answer other than NotFound
    (an API server timing out on a loaded machine; make test saw one, its words lost) is
    tried again, and a last failure says what the API server answered. Once the driver
    has written its plan (`plan_written`), the operator may take it and remove its run
    first (it reads the plan when the manifest ConfigMap appears, whatever the run's
    state): NotFound then means the run is over, as make test once found."""
    for attempt in range(3):
        done = stack.kubectl(
            "patch",
            "sparkapplication",
            name,
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"applicationState": {"state": "COMPLETED"}}}),
            check=False,
        )
        if done.returncode == 0:
            return
        if "NotFound" in done.stderr and plan_written:
            return
        if "NotFound" in done.stderr or attempt == 2:
            break
        time.sleep(2)
    raise AssertionError(f"completing {namespace}/{name}: {done.stderr.strip()}")


def test_policy_plans_through_a_spark_application_and_applies_its_plan(
    stack: Stack,
    spark: Any,
    namespace: str,
    kafka: Kafka,
    tmp_path: Path,
    playing_driver: None,
) -> None:
    topic = kafka.topic({0: 50, 1: 50})
    group = kafka.group_at(topic, "g", {0: 30, 1: 10})
    operator = spark_operator_mode(
        stack, namespace, tmp_path, "--spark-image", "kafka-retention-operator:test"
    )
    try:
        app = apply_policy_and_wait_for_run(stack, namespace, "in-pods", "30s", topic, group)
        policy_uid = get(stack, "retentionpolicy", namespace, "in-pods")["metadata"]["uid"]
        name = app["metadata"]["name"]
        assert name.startswith("kr-batch-")
        assert app["metadata"]["ownerReferences"][0]["uid"] == policy_uid
        assert app["spec"]["image"] == "kafka-retention-operator:test"
        assert log_starts(kafka.admin, topic, 2) == [0, 0]  # nothing before the plan exists

        request = play_driver(stack, spark, namespace, app)
        assert request.connection.client_config == {}  # secrets never go in ConfigMaps
        assert [p.id for p in request.policies] == [f"{namespace}/in-pods"]
        complete(stack, namespace, name, plan_written=True)

        obj = plan_applied(stack, namespace, "in-pods")
        assert log_starts(kafka.admin, topic, 2) == [30, 10]
        assert obj["status"]["lastRun"]["recordsDeleted"] == 40
        leftovers = run_configmaps(stack, namespace, name)
        assert leftovers == []  # the run's ConfigMaps were read and removed
    finally:
        stack.kubectl(
            "delete", "retentionpolicy", "in-pods", "-n", namespace, "--timeout=60s", check=False
        )
        assert operator.stop() == 0


def test_minRecords_crosses_to_the_driver_and_its_plan_keeps_the_last_records(
    stack: Stack,
    spark: Any,
    namespace: str,
    kafka: Kafka,
    tmp_path: Path,
    playing_driver: None,
) -> None:
    """spec.minRecords reaches the driver in the run's request ConfigMap (PlanRequest's
    JSON), and the plan made there keeps the last 15 records of a partition its group read
    to the end. The plan is checked as the driver made it, before the operator's own
    fresh re-check (which would lower the cut by the same rule) can hide a rule lost on
    the way; then the operator applies it and status names the guard."""
    topic = kafka.topic({0: 50, 1: 50})
    group = kafka.group_at(topic, "g", {0: 50, 1: 20})
    operator = spark_operator_mode(stack, namespace, tmp_path)
    try:
        app = apply_policy_and_wait_for_run(
            stack, namespace, "buffer", "1h", topic, group, minRecords=15
        )
        planned: dict[int, tuple[int | None, list[str]]] = {}

        def look(results: dict[str, PolicyPlan]) -> None:
            (result,) = results.values()
            planned.update({r.partition: (r.target_offset, list(r.guards)) for r in result.rows})

        request = play_driver(stack, spark, namespace, app, before_write=look)
        (policy,) = request.policies
        assert policy.rules.min_records == 15
        complete(stack, namespace, app["metadata"]["name"], plan_written=True)
        assert planned == {0: (35, ["minRecords"]), 1: (20, [])}
        obj = plan_applied(stack, namespace, "buffer")
        assert log_starts(kafka.admin, topic, 2) == [35, 20]
        assert obj["status"]["lastRun"]["recordsDeleted"] == 55
        (summary,) = obj["status"]["topics"]
        limits = {lim["guard"]: lim for lim in summary["cut"]["limits"]}
        assert limits["minRecords"]["partitions"] == 1
        assert limits["minRecords"]["detail"] == (
            "minRecords keeps the last 15 records (from offset 35)"
        )
    finally:
        stack.kubectl(
            "delete", "retentionpolicy", "buffer", "-n", namespace, "--timeout=60s", check=False
        )
        assert operator.stop() == 0


def test_an_operator_stopped_while_its_spark_application_runs_exits_at_once(
    stack: Stack, namespace: str, kafka: Kafka, tmp_path: Path
) -> None:
    """Nobody plays the spark-operator here, so the run stays in flight. SIGTERM must end
    the operator's wait for the plan at once (a waiting pool thread would hold the process
    for the whole run timeout, an hour here), write no failure, and leave the run in the
    cluster for the next operator."""
    install_spark_operator_crd(stack)
    topic = kafka.topic({0: 5, 1: 5})
    operator = spark_operator_mode(stack, namespace, tmp_path, "--spark-run-timeout", "3600")
    try:
        app = apply_policy_and_wait_for_run(
            stack, namespace, "in-flight", "30s", topic, f"{topic}-g"
        )
        time.sleep(3)  # the operator is in its wait loop now, polling every 2 s
        assert operator.proc is not None
        operator.proc.send_signal(signal.SIGTERM)
        try:
            code = operator.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the operator did not exit within 30 s of SIGTERM: {operator.tail()}")
        assert code == 0, operator.tail()
        assert f"Spark run {app['metadata']['name']} left running" in operator.log.read_text()
        status = get(stack, "retentionpolicy", namespace, "in-flight").get("status") or {}
        assert "error" not in (status.get("lastRun") or {}), status
        assert all(c.get("reason") != "PlanFailed" for c in status.get("conditions") or []), status
        # Left for the next operator, which finds it by the same name.
        left = [a["metadata"]["name"] for a in sparkapplications(stack, namespace)]
        assert left == [app["metadata"]["name"]]
    finally:
        if operator.running():
            operator.kill()
        stack.kubectl(
            "delete", "retentionpolicy", "in-flight", "-n", namespace, "--timeout=60s", check=False
        )


def test_a_group_rewinding_its_commit_after_the_plan_holds_the_cut_back(
    stack: Stack,
    spark: Any,
    namespace: str,
    kafka: Kafka,
    tmp_path: Path,
    playing_driver: None,
) -> None:
    """The plan is made while the group stands at 30; the group then rewinds partition 0
    to 10 (a consumer reset, a replay) before the operator applies the plan. The fresh
    read before the delete must see 10: cutting at the planned 30 would delete 20 records
    the group is about to read again."""
    topic = kafka.topic({0: 50, 1: 50})
    group = kafka.group_at(topic, "g", {0: 30, 1: 30})
    operator = spark_operator_mode(stack, namespace, tmp_path)
    try:
        app = apply_policy_and_wait_for_run(stack, namespace, "rewind", "1h", topic, group)
        planned: dict[int, int] = {}

        def rewind(results: dict[str, PolicyPlan]) -> None:
            (result,) = results.values()
            planned.update({r.partition: r.target_offset or 0 for r in result.rows})
            commit(kafka.bootstrap, group, topic, {0: 10})

        play_driver(stack, spark, namespace, app, before_write=rewind)
        complete(stack, namespace, app["metadata"]["name"], plan_written=True)
        assert planned == {0: 30, 1: 30}  # the plan was made before the rewind
        obj = plan_applied(stack, namespace, "rewind")
        assert log_starts(kafka.admin, topic, 2) == [10, 30]
        assert obj["status"]["lastRun"]["recordsDeleted"] == 40
    finally:
        stack.kubectl(
            "delete", "retentionpolicy", "rewind", "-n", namespace, "--timeout=60s", check=False
        )
        assert operator.stop() == 0


def test_a_bound_policy_plans_in_the_operators_namespace_and_a_plan_forged_by_its_tenant_is_ignored(
    stack: Stack,
    spark: Any,
    namespace: str,
    kafka: Kafka,
    tmp_path: Path,
    playing_driver: None,
) -> None:
    """Strict tenancy: the run of a policy bound by a KafkaClusterBinding is a
    SparkApplication in the operator's namespace, owned by nothing there (an owner in
    another namespace would be taken as gone). The tenant's own service account writes a
    forged plan under the run's name in its namespace, cutting at offset 1 (a plan may
    only lower a cut, so this one would hold back what the group consumed) and pre-creates
    the SparkApplication there: neither has any effect. The operator reads the plan the
    driver wrote in its namespace, applies it, and removes the run."""
    operator_ns = f"{namespace}-ops"
    stack.kubectl("create", "namespace", operator_ns)
    binding_name = f"pods-{uuid.uuid4().hex[:6]}"
    topic = kafka.topic({0: 50, 1: 50})
    group = kafka.group_at(topic, "g", {0: 30, 1: 10})
    stack.kubectl(
        "apply",
        "-f",
        "-",
        stdin=json.dumps(
            tenancy.binding(binding_name, cluster_id(kafka.admin), kafka.bootstrap, namespace)
        ),
    )
    tenant = tenant_account(stack, namespace)
    operator = OperatorProcess(
        stack,
        [namespace],
        tmp_path / "operator.log",
        (
            "--spark-mode",
            "spark-operator",
            "--in-process-max-partitions",
            "0",
            "--operator-namespace",
            operator_ns,
        ),
        tenancy="strict",
    ).start()
    try:
        app = apply_policy_and_wait_for_run(
            stack,
            namespace,
            "bound",
            "1h",
            topic,
            group,
            runs_in=operator_ns,
            cluster={"clusterRef": binding_name},
        )
        name = app["metadata"]["name"]
        assert "ownerReferences" not in app["metadata"]
        assert sparkapplications(stack, namespace) == []
        # The tenant forges the run's plan and its application in its own namespace.
        forge_plan(stack, namespace, tenant, name, f"{namespace}/bound", {topic: [1, 1]})
        decoy = {**app, "metadata": {"name": name, "namespace": namespace}}
        decoy.pop("status", None)
        stack.kubectl("create", "-f", "-", stdin=json.dumps(decoy))
        complete(stack, namespace, name)
        time.sleep(3)  # a poll or two of the operator's, which must not take the forgery
        assert log_starts(kafka.admin, topic, 2) == [0, 0]

        play_driver(stack, spark, operator_ns, app)
        complete(stack, operator_ns, name, plan_written=True)
        obj = plan_applied(stack, namespace, "bound")
        assert log_starts(kafka.admin, topic, 2) == [30, 10]  # the driver's plan, not 1 and 1
        assert obj["status"]["lastRun"]["recordsDeleted"] == 40
        # The operator removed its run (nothing owns it), and left the tenant's objects be.
        deadline = time.monotonic() + 30
        while sparkapplications(stack, operator_ns):
            assert time.monotonic() < deadline, "the run's SparkApplication was left behind"
            time.sleep(0.5)
        assert run_configmaps(stack, operator_ns, name) == []
        assert len(run_configmaps(stack, namespace, name)) == 2
    finally:
        stack.kubectl(
            "delete", "retentionpolicy", "bound", "-n", namespace, "--timeout=60s", check=False
        )
        assert operator.stop() == 0
        stack.kubectl("delete", "kafkaclusterbinding", binding_name, check=False)
        stack.kubectl("delete", "namespace", operator_ns, "--wait=false", check=False)
