"""What a tenant can write in its own namespace, played with its own service account: a
Spark run's plan ConfigMaps, forged under the run's name; and the ConfigMaps found under
a run's name, forged or not."""

from __future__ import annotations

import json

from devstack.stack import Stack
from kafka_retention.core.plan_lines import to_json_lines
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.kube_objects.chunks import RUN_LABEL, sink_configmaps


def tenant_account(stack: Stack, namespace: str) -> str:
    """A service account of the tenant's with what a tenant has in its own namespace:
    ConfigMaps and pods. Returns the user name for `kubectl --as`."""
    rules = [{"apiGroups": [""], "resources": ["configmaps", "pods"], "verbs": ["*"]}]
    rbac = "rbac.authorization.k8s.io"
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant"}},
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": "tenant"},
            "rules": rules,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "tenant"},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "tenant"},
            "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}],
        },
    ]
    for doc in docs:
        stack.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(doc))
    return f"system:serviceaccount:{namespace}:tenant"


def forge_plan(
    stack: Stack, namespace: str, account: str, run: str, policy: str, cuts: dict[str, list[int]]
) -> None:
    """The run's plan ConfigMaps (`<run>-plan-0000`, `<run>-plan`) in `namespace`, written
    as `account`, cutting each topic's partitions at the given offsets (index: partition)."""
    rows = [
        PlanRow(topic, p, target_offset=offset)
        for topic, offsets in cuts.items()
        for p, offset in enumerate(offsets)
    ]
    forged = to_json_lines(rows, {}, [], policy=policy)
    for obj in sink_configmaps(run, namespace, forged):
        done = stack.kubectl(
            "create",
            "--as",
            account,
            "-n",
            namespace,
            "-f",
            "-",
            stdin=json.dumps(obj),
            check=False,
        )
        assert done.returncode == 0, done.stderr


def run_configmaps(stack: Stack, namespace: str, run: str) -> list[str]:
    """The names of the ConfigMaps labelled as the run's in `namespace`."""
    label = f"{RUN_LABEL}={run}"
    done = stack.kubectl("get", "configmaps", "-n", namespace, "-l", label, "-o", "name")
    return done.stdout.split()
