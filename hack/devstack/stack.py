"""The whole local stack: build or find the parts, start them, write `.dev/env`, stop them."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from devstack import build, image, paths
from devstack.kafka import ISOLATED_PORT_OFFSET, LOCAL_CLUSTER_ID, KafkaCluster
from devstack.kube import APISERVER_PORT, ETCD_CLIENT_PORT, ETCD_PEER_PORT, KubeApi
from devstack.node import (
    CONTAINERD_STREAM_PORT,
    CONTROLLER_MANAGER_PORT,
    KUBELET_HEALTHZ_PORT,
    KUBELET_PORT,
    SCHEDULER_PORT,
    Node,
    recover_abandoned_node,
)
from devstack.procs import StackError

# The in-cluster operator's health and metrics ports (manifests/overlays/local): the
# kubelet's liveness probe dials the first while the operator starts.
LOCAL_OVERLAY_PORTS = (36180, 36102)


def _say(msg: str) -> None:
    print(f"[dev] {msg}", file=sys.stderr, flush=True)


@dataclass
class Stack:
    dev: Path = field(default_factory=paths.dev_dir)

    def __post_init__(self) -> None:
        self.kafka = KafkaCluster(self.dev, cluster_id=LOCAL_CLUSTER_ID)
        # A second cluster for the tests that freeze, kill or restart brokers, or plant
        # directories in their log dirs (tests/helpers/sharing.py): with it they run
        # beside the tests on the first one instead of after them, alone.
        self.isolated_kafka = KafkaCluster(
            self.dev, "kafka-isolated", port_offset=ISOLATED_PORT_OFFSET, heap="512m"
        )
        self.kube = KubeApi(self.dev)
        self.node = Node(self.dev, self.kube.kubeconfig, self.kube.root / "certs")

    @property
    def clusters(self) -> tuple[KafkaCluster, KafkaCluster]:
        return (self.kafka, self.isolated_kafka)

    @property
    def env_file(self) -> Path:
        return self.dev / "env"

    def running(self) -> bool:
        return (
            all(c.running() for c in self.clusters) and self.kube.running() and self.node.running()
        )

    def anything_running(self) -> bool:
        procs = [self.kube.etcd, self.kube.apiserver, *self.node.processes]
        procs += [c.process(n) for c in self.clusters for n in c.node_ids]
        return any(p.running() for p in procs)

    def up(self) -> bool:
        """Start whatever is not running; return True when this call started the stack.

        A stack found running is reused as it is. A cold start begins from empty data
        directories, so every test session and demo sees the same clean cluster.
        """
        if self.running():
            for cluster in self.clusters:
                cluster.wait_ready()
            self.write_env()
            _say("stack already running; reusing it")
            return False
        if self.anything_running():
            _say("stack partly running; stopping it for a clean start")
            self.down()
        build.setup()
        images = image.node_images()
        recover_abandoned_node()  # before the port check: its pods may hold ports
        self._check_ports_free()
        started = time.monotonic()
        for state in (*(c.root for c in self.clusters), self.kube.root):
            shutil.rmtree(state, ignore_errors=True)
        self.dev.mkdir(parents=True, exist_ok=True)
        try:
            self.node.claim_host(reserve_ports=[*self._ports(), *LOCAL_OVERLAY_PORTS])
            self.kube.prepare()
            for cluster in self.clusters:
                cluster.prepare()
                for n in cluster.node_ids:
                    cluster.start_node(n)  # JVMs warm up while etcd and the API server start
            self.kube.start()
            self.node.start([(i.archive, i.name) for i in images.load], images.pause.name)
            for cluster in self.clusters:
                cluster.wait_ready()
            self.node.wait_ready(self.kube.kubectl)
        except BaseException:
            # A half-started stack would hold its ports, the node's host changes and the
            # port reservation until someone ran `down`: the caller only sees the error.
            self.down()
            raise
        self.write_env()
        _say(f"stack up in {time.monotonic() - started:.0f}s; `. {self.env_file}` to use it")
        return True

    def _ports(self) -> list[int]:
        """Every port the stack listens on."""
        ports = [port for c in self.clusters for n in c.nodes for port in n.ports]
        ports += [ETCD_CLIENT_PORT, ETCD_PEER_PORT, APISERVER_PORT]
        ports += [KUBELET_PORT, KUBELET_HEALTHZ_PORT, SCHEDULER_PORT, CONTROLLER_MANAGER_PORT]
        ports += [CONTAINERD_STREAM_PORT]
        return ports

    def _check_ports_free(self) -> None:
        for port in self._ports():
            holder = port_holder(port)
            if holder is not None:
                raise StackError(
                    f"port {port} is already in use ({holder}); is a stack from another "
                    "checkout running? Run `make dev-down` there first."
                )

    def down(self) -> None:
        # The node first: its kubelet and controllers talk to the API server until they stop.
        self.node.stop()
        # Both clusters at once: each waits on its brokers' controlled shutdowns. Both
        # stops run to their end; the first error, if any, is raised after them. Their
        # data is not kept (the next start formats fresh log dirs), so a node still
        # stopping after a few seconds is killed: a controlled shutdown whose quorum left
        # first can wait 20-30 s for an answer (a run's stack stop: 9-11 s, once 34 s).
        with ThreadPoolExecutor(len(self.clusters)) as pool:
            stopping = [pool.submit(c.stop, patience=8) for c in self.clusters]
        for stopped in stopping:
            stopped.result()
        self.kube.stop()
        _say("stack stopped")

    def restart_control_plane(self, down_for: float = 0) -> None:
        """The API server down for `down_for` seconds and back, then the node's scheduler
        and controller-manager restarted. Left running, their informers come back only
        after client-go's reconnect back-off, which grows through the outage: a namespace
        made 15 s after the API server was back got its default service account 9-20 s
        later, and one made by the next test in a CI run had none after 30 s."""
        self.kube.restart_apiserver(down_for)
        if self.node.running():
            self.node.restart_controllers()

    def env(self) -> dict[str, str]:
        env = {
            "KUBECONFIG": str(self.kube.kubeconfig),
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka.bootstrap_servers,
            "KAFKA_RETENTION_KAFKA_LIBS": str(paths.kafka_libs()),
            # Spark's Kafka source for the scans of an operator started here (local mode).
            "KAFKA_RETENTION_SPARK_JARS": str(paths.spark_kafka_jars()),
            "KAFKA_RETENTION_GROUP_READER": str(paths.group_reader_jars()),
            # kubectl built at the pinned version comes first on PATH.
            "KAFKA_RETENTION_KUBE_BIN": str(paths.kube_bin()),
            # helm at the pinned version, which `make setup` builds: the README's quick
            # start runs `helm install` after `. .dev/env`.
            "KAFKA_RETENTION_HELM_BIN": str(build.helm_bin().parent),
            "KAFKA_RETENTION_IMAGE": image.OPERATOR_IMAGE,
            "CONTAINERD_ADDRESS": str(self.node.socket),
        }
        for node in self.kafka.nodes:
            env[f"KAFKA_LOG_DIR_{node.node_id}"] = str(node.log_dir)
        return env

    def write_env(self) -> None:
        lines = [f"export {k}={shlex.quote(v)}" for k, v in self.env().items()]
        lines.append('export PATH="$KAFKA_RETENTION_KUBE_BIN:$KAFKA_RETENTION_HELM_BIN:$PATH"')
        self.env_file.write_text("\n".join(lines) + "\n")

    def status(self) -> str:
        rows = [("etcd", self.kube.etcd.pid()), ("kube-apiserver", self.kube.apiserver.pid())]
        rows += [(p.name, p.pid()) for p in self.node.processes]
        rows += [(c.process(n).name, c.process(n).pid()) for c in self.clusters for n in c.node_ids]
        return "\n".join(
            f"{name:<16} {'running pid ' + str(pid) if pid else 'stopped'}" for name, pid in rows
        )

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.kube.kubectl), "--kubeconfig", str(self.kube.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=check,
        )


def port_holder(port: int) -> str | None:
    """What holds `port`, or None when the stack can bind it. A bind, not a connect: the
    port may be the source port of some outgoing connection, which a connect does not
    see and which still keeps a server from binding it. SO_REUSEADDR, as the servers
    set it, so a closed connection's TIME_WAIT does not count."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))  # noqa: S104 - never listens; sees every address
        except OSError as e:
            try:
                sockets = subprocess.run(
                    ["ss", "-Htanp", f"( sport = :{port} )"],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout.splitlines()
            except FileNotFoundError:
                sockets = []
            found = "; ".join(" ".join(line.split()) for line in sockets if line.strip())
            return found or e.strerror or str(e)
    return None
