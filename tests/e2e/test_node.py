"""The local stack's node: Ready, running pods, with the controllers that make a cluster a
cluster (garbage collection, namespace deletion), and gone without a trace when stopped."""

from __future__ import annotations

import json
import signal
import socket
import time

import pytest

from devstack.node import NODE_IP, NODE_NAME, HostState
from devstack.stack import Stack
from tests.helpers.kube import get

pytestmark = pytest.mark.stack

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


def test_node_is_ready(stack: Stack) -> None:
    node = json.loads(stack.kubectl("get", "node", NODE_NAME, "-o", "json").stdout)
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", ready
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == NODE_IP


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


@pytest.mark.serial  # stops the node under every pod
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


@pytest.mark.serial  # kills the kubelet, containerd and every shim
def test_a_node_whose_session_was_killed_is_cleaned_up_by_the_next_start(
    stack: Stack, namespace: str
) -> None:
    """A killed session takes containerd, the kubelet and the shims with it, but not the
    containers: runc moves them out of the session's cgroups. A hostNetwork pod of that
    node keeps its ports (the in-cluster operator's liveness port made a later stack's
    operator crash). The next start must find and stop them and put the host back before
    recording it again."""
    image = stack.env()["KAFKA_RETENTION_IMAGE"]
    port = free_port()
    listener = json.loads(pod("listener", namespace, image))
    listener["spec"]["containers"][0]["command"] = [
        "python",
        "-c",
        "import socket, time\n"
        f"s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen()\n"
        "time.sleep(3600)",
    ]
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(listener))
    stack.kubectl(
        "wait", "pod/listener", "-n", namespace, "--for=condition=Ready", "--timeout=120s"
    )
    before = HostState.load(stack.node.host_state_file)
    wait_until("the pod listens", lambda: port_taken(port), timeout=30)

    # What the end of a session does: SIGKILL to everything it started, nothing more.
    for proc in stack.node.processes:
        proc.signal(signal.SIGKILL)
    stack.node._kill_shims()
    for proc in stack.node.processes:
        proc.wait_gone(timeout=15)
    assert port_taken(port), "the pod died with the node: the test shows nothing"
    assert stack.node.leftovers(before) != []

    stack.node.start_again()
    assert not port_taken(port), "the abandoned pod still holds its port"
    # The record of the host is the one before the first start, not the changed host.
    assert HostState.load(stack.node.host_state_file) == before
    stack.node.wait_ready(stack.kube.kubectl)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
