"""The local stack's node: Ready, running pods, with the controllers that make a cluster a
cluster (garbage collection, namespace deletion), and gone without a trace when stopped."""

from __future__ import annotations

import json
import time

import pytest

from devstack.node import NODE_IP, NODE_NAME, HostState
from devstack.stack import Stack
from tests.support import get

PAUSE_PROBE = "sleep-probe"


def pod(name: str, namespace: str, image: str, owner: dict[str, str] | None = None) -> str:
    meta: dict[str, object] = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", **owner}]
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "hostNetwork": True,
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "main",
                        "image": image,
                        "imagePullPolicy": "Never",
                        "command": ["python", "-c", "import time; time.sleep(3600)"],
                    }
                ],
            },
        }
    )


def wait_until(what: str, check: object, timeout: float = 90) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} not within {timeout}s"
        time.sleep(0.5)


@pytest.mark.stack
def test_node_is_ready(stack: Stack) -> None:
    node = json.loads(stack.kubectl("get", "node", NODE_NAME, "-o", "json").stdout)
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", ready
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == NODE_IP


@pytest.mark.stack
def test_pod_is_garbage_collected_with_its_owner(stack: Stack, namespace: str) -> None:
    stack.kubectl("create", "configmap", "owner", "-n", namespace)
    uid = get(stack, "configmap", namespace, "owner")["metadata"]["uid"]
    stack.kubectl(
        "apply",
        "-f",
        "-",
        stdin=pod(
            "owned", namespace, stack.env()["KAFKA_RETENTION_IMAGE"], {"name": "owner", "uid": uid}
        ),
    )
    stack.kubectl("wait", "pod/owned", "-n", namespace, "--for=condition=Ready", "--timeout=120s")
    stack.kubectl("delete", "configmap", "owner", "-n", namespace)

    def gone() -> bool:
        done = stack.kubectl("get", "pod", "owned", "-n", namespace, check=False)
        return done.returncode != 0 and "NotFound" in done.stderr

    wait_until("pod owned by a deleted ConfigMap garbage-collected", gone)


@pytest.mark.stack
def test_deleted_namespace_finishes_terminating(stack: Stack, namespace: str) -> None:
    stack.kubectl("create", "configmap", "content", "-n", namespace)
    stack.kubectl(
        "apply", "-f", "-", stdin=pod("running", namespace, stack.env()["KAFKA_RETENTION_IMAGE"])
    )
    stack.kubectl("wait", "pod/running", "-n", namespace, "--for=condition=Ready", "--timeout=120s")
    stack.kubectl("delete", "namespace", namespace, "--wait=false")

    def gone() -> bool:
        done = stack.kubectl("get", "namespace", namespace, check=False)
        return done.returncode != 0 and "NotFound" in done.stderr

    wait_until(f"namespace {namespace} deleted", gone, timeout=120)


@pytest.mark.stack
def test_stopping_the_node_leaves_the_host_as_it_was(stack: Stack, namespace: str) -> None:
    """Stops the node with a pod running (and a bridge pod, so the CNI bridge and a
    network namespace exist), checks every host change is undone, and starts it again
    for the tests after this one."""
    image = stack.env()["KAFKA_RETENTION_IMAGE"]
    stack.kubectl("apply", "-f", "-", stdin=pod("host-net", namespace, image))
    bridged = json.loads(pod("bridged", namespace, image))
    bridged["spec"]["hostNetwork"] = False
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(bridged))
    for name in ("host-net", "bridged"):
        stack.kubectl(
            "wait", f"pod/{name}", "-n", namespace, "--for=condition=Ready", "--timeout=120s"
        )
    before = HostState.load(stack.node.host_state_file)
    during = HostState.read(stack.node.root)
    # The test can fail: with pods running, the host is not as it was.
    assert before.differences(during), "a running node changed nothing on the host"

    stack.node.stop()
    assert stack.node.leftovers(before) == []

    stack.node.start_again()
    stack.node.wait_ready(stack.kube.kubectl)
