"""Pure builders for Spark runs outside the operator process (kubernetes and
spark-operator modes): deterministic names, owner references and manifests. The plan
comes back through chunked ConfigMaps (kube_objects.chunks), never pod logs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_retention.core.strimzi import StrimziRef
from kafka_retention.kube_objects.chunks import RUN_LABEL
from kafka_retention.kube_objects.owners import Owner

JOB_FILE = "local:///opt/kafka-retention/spark-jobs/retention_jobs/plan_job.py"


@dataclass(frozen=True)
class RunSpec:
    """One Spark run outside the operator process. A batch of policies planned together
    has every policy as an owner, so its objects go when the last of them goes; a run in
    the operator's namespace (bound policies) has none (owner references cannot cross
    namespaces)."""

    owners: tuple[Owner, ...]
    name: str
    namespace: str
    image: str
    service_account: str
    request_json: str
    executors: int = 2
    driver_memory: str = "1g"
    executor_memory: str = "1g"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    # The driver reads SASL/TLS settings from this Secret itself: they never go into the
    # request ConfigMap.
    client_config_secret: str | None = None
    # spec.cluster.strimzi: the driver resolves it the way the operator does (the CA and
    # the user's credentials are Secrets too).
    strimzi: StrimziRef | None = None

    def owner_references(self) -> list[dict[str, Any]]:
        # Kubernetes allows one controller among an object's owners.
        sole = len(self.owners) == 1
        return [o.reference(controller=sole) for o in self.owners]


def run_name(kind: str, name: str, generation: int, run_id: str = "") -> str:
    """`kr-<kind>-<name>-g<generation>[-<run>]`: the same object, generation and run always
    give the same name, so a restarted operator finds its run instead of starting a
    second one. Long names are cut and suffixed with a hash to stay a valid DNS label."""
    return _dns_label(f"kr-{kind.lower()}-{name}-g{generation}" + (f"-{run_id}" if run_id else ""))


def batch_run_name(members: Sequence[str], slot: str) -> str:
    """`kr-batch-<digest>-<slot>` for policies planned together: the same members (with
    their generations) in the same scheduled slot give the same name."""
    digest = hashlib.sha256("\n".join(sorted(members)).encode()).hexdigest()[:10]
    return _dns_label(f"kr-batch-{digest}-{slot}")


def _dns_label(base: str) -> str:
    base = base.lower()
    if len(base) <= 52:  # room for Spark's own "-driver" / "-exec-N" suffixes
        return base
    digest = hashlib.sha256(base.encode()).hexdigest()[:8]
    return f"{base[:43].rstrip('-')}-{digest}"


def _meta(spec: RunSpec, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": spec.namespace,
        "labels": {RUN_LABEL: spec.name, "app.kubernetes.io/managed-by": "kafka-retention"},
    }
    # A run without owners (a bound batch's, in the operator's namespace) is removed by
    # the operator itself.
    if spec.owners:
        meta["ownerReferences"] = spec.owner_references()
    return meta


def request_configmap(spec: RunSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(spec, f"{spec.name}-request"),
        "data": {"request.json": spec.request_json},
    }


def _job_args(spec: RunSpec) -> list[str]:
    return [
        "--request",
        f"configmap:{spec.name}-request",
        "--sink-configmaps",
        spec.name,
        "--namespace",
        spec.namespace,
        # The plan's ConfigMaps belong to the policies too, so they go when they go.
        "--owner-references",
        json.dumps(spec.owner_references(), sort_keys=True),
        *(
            ["--client-config-secret", spec.client_config_secret]
            if spec.client_config_secret
            else []
        ),
        *(["--strimzi", json.dumps(asdict(spec.strimzi), sort_keys=True)] if spec.strimzi else []),
    ]


def spark_submit_argv(
    spec: RunSpec,
    master: str,
    spark_submit: str = "spark-submit",
    ca_cert: str | None = None,
    token_file: str | None = None,
) -> list[str]:
    """spark-submit in cluster mode: the driver and executors are pods of the operator's
    image; spark-submit returns once the driver pod exists."""
    conf = {
        "spark.kubernetes.namespace": spec.namespace,
        "spark.kubernetes.container.image": spec.image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": spec.service_account,
        "spark.kubernetes.driver.pod.name": f"{spec.name}-driver",
        "spark.kubernetes.executor.podNamePrefix": spec.name,
        "spark.kubernetes.submission.waitAppCompletion": "false",
        f"spark.kubernetes.driver.label.{RUN_LABEL}": spec.name,
        f"spark.kubernetes.executor.label.{RUN_LABEL}": spec.name,
        "spark.executor.instances": str(spec.executors),
        "spark.driver.memory": spec.driver_memory,
        "spark.executor.memory": spec.executor_memory,
        "spark.app.name": spec.name,
        **spec.spark_conf,
    }
    if ca_cert:
        conf["spark.kubernetes.authenticate.submission.caCertFile"] = ca_cert
    if token_file:
        conf["spark.kubernetes.authenticate.submission.oauthTokenFile"] = token_file
    argv = [
        spark_submit,
        "--master",
        f"k8s://{master}",
        "--deploy-mode",
        "cluster",
        "--name",
        spec.name,
    ]
    for key, value in sorted(conf.items()):
        argv += ["--conf", f"{key}={value}"]
    return [*argv, JOB_FILE, *_job_args(spec)]


def spark_application(spec: RunSpec) -> dict[str, Any]:
    """The same run for the Kubeflow spark-operator (sparkoperator.k8s.io/v1beta2)."""
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": _meta(spec, spec.name),
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": spec.image,
            "mainApplicationFile": JOB_FILE,
            "arguments": _job_args(spec),
            "sparkVersion": "4.3.0",
            "sparkConf": dict(spec.spark_conf),
            "restartPolicy": {"type": "Never"},
            "driver": {
                "cores": 1,
                "memory": spec.driver_memory,
                "serviceAccount": spec.service_account,
                "labels": {RUN_LABEL: spec.name},
            },
            "executor": {
                "instances": spec.executors,
                "cores": 1,
                "memory": spec.executor_memory,
                "labels": {RUN_LABEL: spec.name},
            },
        },
    }
