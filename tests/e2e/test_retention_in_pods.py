"""RetentionPolicy with --spark-mode spark-operator, end to end without a kubelet: the
operator creates the SparkApplication; the test plays the spark-operator and its driver
(runs the same plan job on the request ConfigMap, writes the plan ConfigMaps, marks the
application COMPLETED); the operator then applies the plan to the real cluster."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devstack.stack import Stack
from kafka_retention.adapters import kube
from retention_jobs import plan_job, sinks
from retention_jobs.request import PlanRequest
from tests.conftest import TopicFactory
from tests.support import (
    OperatorProcess,
    commit,
    get,
    install_spark_operator_crd,
    log_starts,
    produce,
    wait_for,
)


def sparkapplications(stack: Stack, namespace: str) -> list[dict[str, Any]]:
    done = stack.kubectl("get", "sparkapplications", "-n", namespace, "-o", "json")
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


@pytest.mark.stack
def test_policy_plans_through_a_spark_application_and_applies_its_plan(
    stack: Stack,
    spark: Any,
    namespace: str,
    admin: AdminClient,
    bootstrap: str,
    make_topic: TopicFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install_spark_operator_crd(stack)
    monkeypatch.setenv("KUBECONFIG", str(stack.kube.kubeconfig))
    monkeypatch.setattr(kube, "_api", None)
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, {0: 50, 1: 50})
    group = f"{topic}-g"
    commit(bootstrap, group, topic, {0: 30, 1: 10})
    operator = OperatorProcess(
        stack,
        [namespace],
        tmp_path / "operator.log",
        (
            "--spark-mode",
            "spark-operator",
            "--spark-image",
            "kafka-retention-operator:test",
            # Plan even this tiny policy with Spark, as a large one would be.
            "--in-process-max-partitions",
            "0",
        ),
    ).start()
    try:
        body = {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RetentionPolicy",
            "metadata": {"name": "in-pods", "namespace": namespace},
            "spec": {
                "cluster": {"bootstrapServers": bootstrap},
                "interval": "30s",
                "topics": {"names": [topic]},
                "deleteConsumed": {"groups": [group]},
            },
        }
        stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
        policy_uid = get(stack, "retentionpolicy", namespace, "in-pods")["metadata"]["uid"]
        deadline = time.monotonic() + 60
        while not (apps := sparkapplications(stack, namespace)):
            assert time.monotonic() < deadline, "no SparkApplication was created"
            time.sleep(0.5)
        (app,) = apps
        name = app["metadata"]["name"]
        assert name.startswith("kr-batch-")
        assert app["metadata"]["ownerReferences"][0]["uid"] == policy_uid
        assert app["spec"]["image"] == "kafka-retention-operator:test"
        assert log_starts(admin, topic, 2) == [0, 0]  # nothing before the plan exists

        # The spark-operator's part: run the driver's job on the run's request.
        args = dict(zip(app["spec"]["arguments"][::2], app["spec"]["arguments"][1::2], strict=True))
        request = PlanRequest.from_json(
            sinks.read_configmap_key(
                namespace, args["--request"].removeprefix("configmap:"), "request.json"
            )
        )
        assert request.connection.client_config == {}  # secrets never go in ConfigMaps
        assert [p.id for p in request.policies] == [f"{namespace}/in-pods"]
        results = plan_job.run_batch(spark, request)
        sinks.write_configmaps(
            args["--sink-configmaps"],
            namespace,
            plan_job.batch_lines(results),
            json.loads(args["--owner-references"]),
        )
        stack.kubectl(
            "patch",
            "sparkapplication",
            name,
            "-n",
            namespace,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"applicationState": {"state": "COMPLETED"}}}),
        )

        obj = wait_for(
            stack,
            "retentionpolicy",
            namespace,
            "in-pods",
            lambda o: o.get("status", {}).get("lastRun", {}).get("recordsDeleted") is not None,
            timeout=60,
        )
        assert log_starts(admin, topic, 2) == [30, 10]
        assert obj["status"]["lastRun"]["recordsDeleted"] == 40
        leftovers = stack.kubectl(
            "get",
            "configmaps",
            "-n",
            namespace,
            "-l",
            f"kafka-retention.io/run={name}",
            "-o",
            "name",
        ).stdout
        assert leftovers.strip() == ""  # the run's ConfigMaps were read and removed
    finally:
        stack.kubectl(
            "delete", "retentionpolicy", "in-pods", "-n", namespace, "--timeout=60s", check=False
        )
        assert operator.stop() == 0
