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
from devstack.kafka import ISOLATED_PORT_OFFSET, LOCAL_CLUSTER_ID, KafkaCluster, compat_ports
from devstack.kube import APISERVER_PORT, ETCD_CLIENT_PORT, ETCD_PEER_PORT, KubeApi
from devstack.node import (
    CONTAINERD_STREAM_PORT,
    CONTROLLER_MANAGER_PORT,
    KUBELET_HEALTHZ_PORT,
    KUBELET_PORT,
    NODE_IP,
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
            # The compatibility clusters' ports too (devstack.kafka.COMPAT_PORT_OFFSETS),
            # whether one runs or not: a test or `python -m devstack kafka-up` starts one
            # later, and a broker's own clients must never take its port as their source.
            self.node.claim_host(
                reserve_ports=[*self._ports(), *LOCAL_OVERLAY_PORTS, *compat_ports()]
            )
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

    def binds(self) -> list[Bind]:
        """Every port the stack listens on, bound as its server binds it."""
        binds = [Bind(port, jvm=True) for c in self.clusters for n in c.nodes for port in n.ports]
        binds += [Bind(p) for p in (ETCD_CLIENT_PORT, ETCD_PEER_PORT, APISERVER_PORT)]
        binds += [Bind(p) for p in (KUBELET_HEALTHZ_PORT, SCHEDULER_PORT, CONTROLLER_MANAGER_PORT)]
        # The kubelet answers on the node's own address only, added when the node starts.
        binds += [Bind(KUBELET_PORT, host=NODE_IP), Bind(CONTAINERD_STREAM_PORT)]
        return binds

    def _ports(self) -> list[int]:
        """Every port the stack listens on."""
        return [b.port for b in self.binds()]

    def _check_ports_free(self) -> None:
        check_binds_free(self.binds())

    def down(self) -> None:
        # Kafka first, while the node still reserves the stack's ports: a stopping broker's
        # clients reconnect to it over and over, and one whose connection ends on its own
        # side leaves a TIME-WAIT socket on its source port, which, were it one of the
        # stack's ports, would keep that port's server from binding it for a minute
        # (after `make dev-down`, `make dev-up` found the kubelet's port held that way).
        # Both clusters at once: each waits on its brokers' controlled shutdowns. Both
        # stops run to their end; the first error, if any, is raised after them. Their
        # data is not kept (the next start formats fresh log dirs), so a node still
        # stopping after a few seconds is killed: a controlled shutdown whose quorum left
        # first can wait 20-30 s for an answer (a run's stack stop: 9-11 s, once 34 s).
        with ThreadPoolExecutor(len(self.clusters)) as pool:
            stopping = [pool.submit(c.stop, patience=8) for c in self.clusters]
        # The node before the API server: its kubelet and controllers talk to the API
        # server until they stop. Its stop gives the port reservation back.
        try:
            self.node.stop()
        finally:
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


# Linux's IP_FREEBIND (the socket module does not name it): bind an address that is not
# (yet) on any interface, as the kubelet's will be once the node has added it.
IP_FREEBIND = 15
# How long Linux keeps a closed connection in TIME-WAIT (TCP_TIMEWAIT_LEN, fixed).
TIME_WAIT_SECONDS = 60


@dataclass(frozen=True)
class Bind:
    """How one of the stack's servers binds its port: on `host`, with SO_REUSEADDR (Go's
    listeners and Java's server sockets on Linux both set it). A JVM binds an IPv4
    address through an IPv6 socket (as `::ffff:127.0.0.1`), Go through an IPv4 one."""

    port: int
    host: str = "127.0.0.1"
    jvm: bool = False


def port_holder(bind: Bind | int) -> str | None:
    """What keeps `bind`'s server from binding its port, or None when nothing does.

    The server's own bind, tried, rather than a reading of the connection tables: the
    port may be the source port of some outgoing connection, which a connect does not
    see and which still keeps a server from binding it; and a closed connection's
    TIME-WAIT socket on the port counts only where the kernel counts it, for the same
    address and unless both sides set SO_REUSEADDR (a listening port's accepted
    connections do; a client's source port does not)."""
    if isinstance(bind, int):
        bind = Bind(bind)
    if bind.jvm:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        address: tuple[str, int] = (f"::ffff:{bind.host}", bind.port)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        address = (bind.host, bind.port)
    with sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        try:
            sock.bind(address)
        except OSError as e:
            found = "; ".join(_sockets_on(bind.port))
            return found or e.strerror or str(e)
    return None


def _sockets_on(port: int) -> list[str]:
    """`ss` lines of the TCP sockets whose local port is `port`, with their processes."""
    command = ["ss", "-Htanp", f"( sport = :{port} )"]
    try:
        lines = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        return []
    return [" ".join(line.split()) for line in lines.splitlines() if line.strip()]


def only_closing(holder: str) -> bool:
    """Whether `holder` names TIME-WAIT sockets and nothing else."""
    entries = holder.split("; ")
    return all(e.startswith("TIME-WAIT ") for e in entries)


def check_binds_free(binds: list[Bind], patience: float = TIME_WAIT_SECONDS + 5) -> None:
    """Raise StackError naming the holder of the first port a server could not bind.

    A port held only by TIME-WAIT sockets of closed connections that do block the bind
    (a client's, whose source port it was) is not a conflict with anything running:
    those sockets belong to no process, and are closed (`ss -K`) rather than waited out
    for up to a minute; where that is not allowed, they are waited out."""
    deadline = time.monotonic() + patience
    for bind in binds:
        holder = port_holder(bind)
        if holder is not None and only_closing(holder):
            subprocess.run(
                ["ss", "-K", "-Htan", "state", "time-wait", f"( sport = :{bind.port} )"],
                capture_output=True,
                check=False,
            )
            holder = port_holder(bind)
            if holder is not None and only_closing(holder):
                _say(f"port {bind.port} is held by closed connections (TIME-WAIT); waiting")
            while holder is not None and only_closing(holder) and time.monotonic() < deadline:
                time.sleep(1)
                holder = port_holder(bind)
        if holder is not None:
            raise StackError(
                f"port {bind.port} is already in use ({holder}); is a stack from another "
                "checkout running? Run `make dev-down` there first."
            )
