"""The local stack starts again at once after it stopped: `make dev-down` then `make dev-up`
(as after `make test`, then `make demo`) once failed on `port 36250 is already in use
(TIME-WAIT ... [::ffff:127.0.0.1]:36250 ...)` and worked a minute later."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from contextlib import closing

import pytest

from devstack.node import (
    CONTAINERD_STREAM_PORT,
    CONTROLLER_MANAGER_PORT,
    KUBELET_HEALTHZ_PORT,
    KUBELET_PORT,
    SCHEDULER_PORT,
)
from devstack.stack import Stack, check_binds_free
from tests.helpers.kube import apply_crds

pytestmark = pytest.mark.stack

NODE_PORTS = {
    KUBELET_PORT,
    KUBELET_HEALTHZ_PORT,
    SCHEDULER_PORT,
    CONTROLLER_MANAGER_PORT,
    CONTAINERD_STREAM_PORT,
}


def time_wait_from(source_port: int) -> None:
    """What a stopping broker's client leaves behind when the kernel gave it `source_port`:
    a JVM's socket (IPv6, v4-mapped, no SO_REUSEADDR) on `[::ffff:127.0.0.1]:source_port`,
    closed by the client first, so in TIME-WAIT for a minute."""
    with closing(socket.socket(socket.AF_INET6, socket.SOCK_STREAM)) as server:
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        server.bind(("::ffff:127.0.0.1", 0))
        server.listen()
        with closing(socket.socket(socket.AF_INET6, socket.SOCK_STREAM)) as client:
            client.bind(("::ffff:127.0.0.1", source_port))
            client.connect(server.getsockname())
            accepted, _ = server.accept()
        with closing(accepted):
            accepted.recv(1)  # the client's FIN
    deadline = time.monotonic() + 5
    while True:
        shown = subprocess.run(
            ["ss", "-Htan", "state", "time-wait", f"( sport = :{source_port} )"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if f"[::ffff:127.0.0.1]:{source_port}" in shown:
            return
        assert time.monotonic() < deadline, f"no TIME-WAIT socket on port {source_port}"
        time.sleep(0.05)


@pytest.mark.serial  # stops the node under every pod
def test_the_node_starts_again_at_once_beside_a_closed_connection_on_the_kubelets_port(
    stack: Stack,
) -> None:
    """The issue's very socket: the kubelet binds its port on the node's address only, so
    a client's TIME-WAIT on 127.0.0.1 and that port is no conflict, and the node's start
    right after its stop (make dev-up after make dev-down) neither refuses nor waits."""
    stack.node.stop()
    try:
        time_wait_from(KUBELET_PORT)
        began = time.monotonic()
        check_binds_free([b for b in stack.binds() if b.port in NODE_PORTS], patience=0)
        assert time.monotonic() - began < 5
    finally:
        stack.node.start_again()
    stack.node.wait_ready(stack.kube.kubectl)
    listening = subprocess.run(
        ["ss", "-Hltn", f"( sport = :{KUBELET_PORT} )"], capture_output=True, text=True, check=True
    ).stdout
    assert f":{KUBELET_PORT}" in listening, "the kubelet does not listen on its port"


@pytest.mark.serial  # stops and starts the whole stack
@pytest.mark.skipif(
    bool(os.environ.get("KAFKA_RETENTION_SHARED_STACK")),
    reason="make test's sessions share the stack and never stop it; run this file alone",
)
def test_dev_down_then_dev_up_at_once_brings_the_whole_stack_up(stack: Stack) -> None:
    """`make dev-down` then `make dev-up`, with no wait between: the same calls as the
    make targets (python -m devstack down, up), on the session's own stack, which is
    left running with the CRDs applied, as the session fixture left it."""
    stack.down()
    began = time.monotonic()
    assert stack.up(), "the stack was found running right after it was stopped"
    assert stack.running(), stack.status()
    apply_crds(stack)
    print(f"stack up again in {time.monotonic() - began:.0f}s")
