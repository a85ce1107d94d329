"""Objects on the stack's API server: applied, read, waited for, and their events."""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.paths import FIXTURES, REPO


def slug(request: pytest.FixtureRequest) -> str:
    """A name for the test's own objects: its name, cut to fit, and a random suffix."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return f"{name}-{uuid.uuid4().hex[:6]}".strip("-")


def apply_crds(stack: Stack) -> None:
    """The project's CRDs on the stack's API server, established."""
    stack.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds"))
    stack.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd",
        "-l",
        "app.kubernetes.io/part-of=kafka-retention-operator",
    )


def create_namespace(stack: Stack, name: str) -> None:
    """The namespace, once its default service account exists (the controller-manager
    adds it a moment after the namespace, and pods need it)."""
    stack.kubectl("create", "namespace", name)
    deadline = time.monotonic() + 30
    while stack.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode:
        assert time.monotonic() < deadline, f"no default service account in {name} after 30s"
        time.sleep(0.2)


def create_watched_namespace(stack: Stack, operator: OperatorProcess, name: str) -> None:
    """The namespace, once `operator` (watching a pattern that matches it) watches it.

    Kopf 1.45 can miss a namespace created while it starts: it lists the namespaces, then
    its namespace watcher lists them again and takes what that second listing holds as
    already known, so a namespace created between the two is served only once something
    modifies it (seen: 2 minutes late, a fleet test failing). A label is such a
    modification, added until the operator's log shows it watching."""
    since = operator.log_size()
    create_namespace(stack, name)
    deadline = time.monotonic() + 30
    nudge = time.monotonic() + 2
    while not operator.watching(name, since):
        assert time.monotonic() < deadline, f"operator not watching {name} after 30s"
        if time.monotonic() > nudge:
            stamp = f"kafka-retention.io/test-nudge={time.monotonic_ns()}"
            stack.kubectl("label", "namespace", name, stamp, "--overwrite")
            nudge = time.monotonic() + 2
        time.sleep(0.05)


API_VERSION = "kafka-retention.io/v1alpha1"
# spec.cluster of objects that must never reach a broker: nothing listens there.
NOWHERE = {"bootstrapServers": "127.0.0.1:1"}


def resource(kind: str, name: str, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    """One of the project's objects as its manifest: kind, name, namespace (none for a
    cluster-scoped kind), then its top-level fields (spec, ...)."""
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, **fields}


def apply(stack: Stack, obj: dict[str, Any]) -> None:
    """`kubectl apply` of one object (or a List), as its manifest would be applied."""
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def apply_refused(stack: Stack, obj: dict[str, Any]) -> str:
    """What the API server said when it refused to store the object (asserted refused)."""
    done = stack.kubectl("apply", "-f", "-", stdin=json.dumps(obj), check=False)
    assert done.returncode != 0, f"{obj['kind']}/{obj['metadata']['name']} was accepted"
    return done.stderr


@functools.cache
def _client(kubeconfig: Path, state: Path) -> Any:
    """One API client per test process, its discovery cached in the API server's state
    directory while the process lives. A kubectl run costs about 80 ms of CPU, and
    wait_for reads every 0.3 s: the parallel phase ran about 4 kubectl a second."""
    from kubernetes import config, dynamic

    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    cache = state / f"discovery-{os.getpid()}.json"
    atexit.register(cache.unlink, missing_ok=True)
    return dynamic.DynamicClient(api, cache_file=str(cache))  # type: ignore[no-untyped-call]


def get(stack: Stack, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """The object as `kubectl get -o json` shows it; `kind` as kubectl takes it, singular
    (retentionpolicy, configmap) or plural. Raises when there is no such object."""
    client = _client(stack.kube.kubeconfig, stack.kube.root)
    try:
        api = client.resources.get(singular_name=kind)
    except ResourceNotFoundError:
        api = client.resources.get(name=kind)
    result: dict[str, Any] = api.get(name=name, namespace=namespace).to_dict()
    result.get("metadata", {}).pop("managedFields", None)  # as kubectl prints it
    return result


def wait_for(
    stack: Stack,
    kind: str,
    namespace: str,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    timeout: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    obj = get(stack, kind, namespace, name)
    while not check(obj):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{kind}/{name} did not get there in {timeout}s: "
                f"{json.dumps(obj.get('status'), indent=1)}"
            )
        time.sleep(0.3)
        obj = get(stack, kind, namespace, name)
    return obj


def events(stack: Stack, namespace: str, name: str) -> list[dict[str, Any]]:
    done = stack.kubectl(
        "get",
        "events",
        "-n",
        namespace,
        "-o",
        "json",
        "--field-selector",
        f"involvedObject.name={name}",
    )
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def install_spark_operator_crd(stack: Stack) -> None:
    """The stand-in SparkApplication CRD (tests/fixtures), established and discoverable."""
    crd = FIXTURES / "sparkapplications-crd.yaml"
    stack.kubectl("apply", "--server-side", "-f", str(crd))
    stack.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/sparkapplications.sparkoperator.k8s.io",
    )
