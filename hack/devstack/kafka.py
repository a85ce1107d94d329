"""Three Apache Kafka nodes in KRaft combined mode (broker + controller) on 127.0.0.1.

The stack runs two such clusters: the one every test shares, and an isolated one on other
ports for the tests that freeze, kill or restart brokers, or plant directories in their
log dirs. Those run one after another, beside the tests that share the first cluster.

Node ids 1, 2, 3 form a static controller quorum, so losing one node keeps both the
quorum and (with min.insync.replicas=2) acks=all produce working.

Besides the PLAINTEXT listener every test uses (and inter-broker traffic), each broker
has a SASL_PLAINTEXT listener (SCRAM-SHA-512 and PLAIN, one user created at format
time) and an SSL listener that requires a client certificate; the CA, the brokers' and
a client's certificate are made anew at each format, so that client properties with
SASL, truststores and keystores are tried against real brokers.

Compatibility clusters (issue #50) run the same layout on other Kafka releases
(COMPAT_VERSIONS), each on ports of its own, from that release's jars
(build.kafka_jars(version)); without tiered storage unless the release is the pinned
one, the only one whose LocalTieredStorage test jars are collected.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import shutil
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from devstack import paths
from devstack.procs import Process, StackError, run, wait_for

NODE_IDS = (1, 2, 3)  # the controller quorum, and the nodes of a three-broker cluster
BROKER_PORT_BASE = 39090  # node n listens on BROKER_PORT_BASE + n
CONTROLLER_PORT_BASE = 39190
# Below the kernel's ephemeral range (32768-60999): these listeners bind late in a broker's
# start, after its peers have opened many connections, and a port in that range can be
# taken as the source port of one of them first ("Address already in use", seen once
# before the node's port reservation, which comes later in `up`, was in place).
SASL_PORT_BASE = 29290  # SASL_PLAINTEXT: SCRAM-SHA-512 and PLAIN
SSL_PORT_BASE = 29390  # SSL with client certificates
# The isolated cluster's ports: each base above plus this (39101-39103 for its brokers).
ISOLATED_PORT_OFFSET = 10
# The compatibility clusters' releases, oldest first, and their port offsets: one per
# release, so that any of them runs beside the stack's two clusters and one another.
# An offset below 100 - the node count keeps every base's ports apart from the next
# base's (brokers 39091-39163 < controllers 39191-39263; SASL 29291-29363 < SSL 29391-).
COMPAT_PORT_OFFSETS = {"3.9.2": 20, "4.0.1": 30, "4.1.1": 40, "4.3.1": 50, "4.4.0": 60}
COMPAT_VERSIONS = tuple(COMPAT_PORT_OFFSETS)
# The main local cluster's id, the same at every cold start (the bytes
# "kafka-retention\x01"): a KafkaClusterBinding names its cluster by id, and the README's
# quick start applies examples/quickstart/binding.yaml as it is. Other clusters (the
# isolated one, bench's) take a fresh random id, so a binding of one never matches another.
LOCAL_CLUSTER_ID = "a2Fma2EtcmV0ZW50aW9uAQ"

# The one SASL user of the dev brokers (a local test stack's, no secret).
SASL_USER = "retention"
SASL_PASSWORD = "retention-secret"  # noqa: S105 - the local stack's test user
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""
# The same for Kafka 3, which logs through Log4j 1.2 (its own reload4j).
LOG4J1 = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""
# The tiered-storage settings (the last ones of KafkaNode.properties), left out without it.
TIERED_PREFIXES = ("remote.", "rsm.config.", "rlmm.config.")
# Broker settings a release before 4.0 does not know (it would log them as unused).
SINCE_4 = (
    "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr",
)


@dataclass(frozen=True)
class KafkaNode:
    node_id: int
    root: Path  # .dev/<cluster>/<id>
    port_offset: int = 0  # added to every port base: 0, ISOLATED_PORT_OFFSET, a compat one
    version: str | None = None  # the Kafka release; None: the pinned one
    tiered: bool = True  # LocalTieredStorage as the remote store (its jars must be there)

    @property
    def broker_port(self) -> int:
        return BROKER_PORT_BASE + self.port_offset + self.node_id

    @property
    def controller_port(self) -> int:
        return CONTROLLER_PORT_BASE + self.port_offset + self.node_id

    @property
    def sasl_port(self) -> int:
        return SASL_PORT_BASE + self.port_offset + self.node_id

    @property
    def ssl_port(self) -> int:
        return SSL_PORT_BASE + self.port_offset + self.node_id

    @property
    def ports(self) -> list[int]:
        return [self.broker_port, self.controller_port, self.sasl_port, self.ssl_port]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def log_dir(self) -> Path:
        return self.root / "data"

    @property
    def config(self) -> Path:
        return self.root / "server.properties"

    def properties(self) -> dict[str, str]:
        props = self._properties()
        if not self.tiered:
            props = {k: v for k, v in props.items() if not k.startswith(TIERED_PREFIXES)}
        if paths.log4j1(self.version):
            props = {k: v for k, v in props.items() if k not in SINCE_4}
        return props

    def _properties(self) -> dict[str, str]:
        base = CONTROLLER_PORT_BASE + self.port_offset
        voters = ",".join(f"{n}@127.0.0.1:{base + n}" for n in NODE_IDS)
        # Nodes past the quorum's three (a larger cluster's) are brokers only.
        voter = self.node_id in NODE_IDS
        controller = f"CONTROLLER://127.0.0.1:{self.controller_port}," if voter else ""
        return {
            "process.roles": "broker,controller" if voter else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.broker_port},"
                + controller
                + f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port},"
                f"SSL://127.0.0.1:{self.ssl_port}"
            ),
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:{self.broker_port},"
                f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port},"
                f"SSL://127.0.0.1:{self.ssl_port}"
            ),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL"
            ),
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            # SCRAM users live in the metadata log (format --add-scram); PLAIN's in JAAS.
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
                f"{SCRAM_MODULE} required;"
            ),
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f'{PLAIN_MODULE} required user_{SASL_USER}="{SASL_PASSWORD}";'
            ),
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.ssl.ssl.keystore.type": "PEM",
            "listener.name.ssl.ssl.keystore.location": str(self.root.parent / "tls" / "broker.pem"),
            "listener.name.ssl.ssl.truststore.type": "PEM",
            "listener.name.ssl.ssl.truststore.location": str(self.root.parent / "tls" / "ca.pem"),
            "log.dirs": str(self.log_dir),
            "num.partitions": "3",
            "default.replication.factor": "3",
            "min.insync.replicas": "2",
            "offsets.topic.replication.factor": "3",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
            "share.coordinator.state.topic.replication.factor": "3",
            "share.coordinator.state.topic.min.isr": "2",
            "auto.create.topics.enable": "false",
            # Quick feedback for tests: rebalances start at once, retention is checked
            # every few seconds, and deleted segments leave the disk after a second.
            "group.initial.rebalance.delay.ms": "0",
            "log.retention.check.interval.ms": "3000",
            "log.initial.task.delay.ms": "1000",
            "log.segment.delete.delay.ms": "1000",
            "file.delete.delay.ms": "1000",
            # The log cleaner looks for work every second (default 15 s): an erasure test
            # follows two cleanings of a compacted topic (values, then the tombstone past
            # delete.retention.ms). Other compacted topics' tests keep long horizons.
            "log.cleaner.backoff.ms": "1000",
            "num.network.threads": "2",
            "num.io.threads": "4",
            # Tiered storage (KIP-405), so that a test topic can set
            # remote.storage.enable=true: Kafka's own file-based LocalTieredStorage as the
            # remote store (one directory the cluster's brokers share, as an object store
            # would be: remote_dir, which tests read to check the brokers' own word), and
            # the default topic-based metadata manager. Topics without
            # remote.storage.enable behave as before.
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": (
                "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
            ),
            "remote.log.storage.manager.impl.prefix": "rsm.config.",
            "rsm.config.dir": str(self.remote_dir),
            "remote.log.metadata.manager.listener.name": "PLAINTEXT",
            "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
            # 5 partitions, not 50: the metadata topic is read whole by the operator.
            "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
            # Copy and expire every 3 s (default 30 s): a test waits for an upload and
            # for the deletion of remote segments below a cut.
            "remote.log.manager.task.interval.ms": "3000",
            # Two threads each, not ten: three brokers on two cores.
            "remote.log.manager.copier.thread.pool.size": "2",
            "remote.log.manager.expiration.thread.pool.size": "2",
            "remote.log.reader.threads": "2",
        }

    @property
    def remote_dir(self) -> Path:
        """The cluster's remote store: LocalTieredStorage keeps its segments in
        `kafka-tiered-storage/` under it, by topic id and partition."""
        return self.root.parent / "remote"


# The local brokers' JIT and collector: C1 alone and the serial collector. On a 2-core
# machine that also runs the operator, Spark and the tests, C2's compiler threads and
# G1's threads cost more CPU than the faster code gives back. Measured on three brokers:
# ready in 9 s with 9 CPU-s (G1 and C2: 13 s, 18 CPU-s); 2,000 RF-3 partitions created,
# written and cut for 67 CPU-s (91); and a third less CPU while idle.
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class KafkaCluster:
    def __init__(
        self,
        dev: Path,
        name: str = "kafka",
        port_offset: int = 0,
        heap: str = "768m",
        brokers: int = len(NODE_IDS),
        cluster_id: str | None = None,
        version: str | None = None,
        tiered: bool | None = None,
    ) -> None:
        """`brokers` past three adds broker-only nodes (ids 4, 5, ...) to the quorum's;
        without `cluster_id`, each `prepare` formats the nodes with a new random id.
        `version`: the Kafka release (None: the pinned one, hack/kafka/pom.xml), whose
        jars build.kafka_jars(version) collects. `tiered`: tiered storage on (None: where
        the release's jars have LocalTieredStorage, the pinned release's only)."""
        pin = paths.Pins.read().kafka
        release = version or pin
        pinned = release == pin
        if tiered is None:
            tiered = pinned
        elif tiered and not pinned:
            raise StackError(
                f"Kafka {version} has no tiered storage here: LocalTieredStorage's test jars "
                "are collected for the pinned release only (hack/kafka/pom.xml)"
            )
        self.name = name
        self.cluster_id = cluster_id
        self.root = dev / name
        self.heap = heap
        self.version = None if pinned else release  # None: the pinned jars, as before
        self.release = release
        self.tiered = tiered
        self.node_ids = tuple(range(1, max(brokers, len(NODE_IDS)) + 1))
        self.nodes = [
            KafkaNode(n, self.root / str(n), port_offset, self.version, tiered)
            for n in self.node_ids
        ]

    @property
    def libs(self) -> Path:
        """The release's jars (build.kafka_jars(version) collects them)."""
        return paths.kafka_libs(self.version)

    def _logging(self, node: KafkaNode) -> list[str]:
        """The JVM options that send a node's (or its format's) log to its server.log."""
        if paths.log4j1(self.version):
            config = f"-Dlog4j.configuration=file:{self.root / 'log4j.properties'}"
        else:
            config = f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}"
        return [config, f"-Dkafka.logs.dir={node.root}"]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT listeners: user SASL_USER, SCRAM-SHA-512 or PLAIN."""
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.nodes)

    @property
    def ssl_bootstrap_servers(self) -> str:
        """The SSL listeners: brokers' certificates for 127.0.0.1 signed by tls.ca; a
        client certificate signed by the same CA is required (tls.client_*)."""
        return ",".join(f"127.0.0.1:{n.ssl_port}" for n in self.nodes)

    @property
    def tls(self) -> TlsFiles:
        return TlsFiles(self.root / "tls")

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[self.node_ids.index(node_id)]

    def process(self, node_id: int) -> Process:
        return Process(f"{self.name}-{node_id}", self.root / str(node_id))

    def running(self) -> bool:
        return all(self.process(n).running() for n in self.node_ids)

    def prepare(self) -> None:
        """Write configs and format fresh log dirs with the cluster's id (a new one if
        it has none)."""
        libs = self.libs
        if not any(libs.glob("kafka_2.13-*.jar")):
            raise StackError(f"no Kafka {self.release} jars in {libs}: build.kafka_jars first")
        cluster_id = (
            self.cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        )
        self.root.mkdir(parents=True, exist_ok=True)
        if paths.log4j1(self.version):
            (self.root / "log4j.properties").write_text(LOG4J1)
        else:
            (self.root / "log4j2.properties").write_text(LOG4J2)
        self.tls.write()
        for node in self.nodes:
            node.root.mkdir(parents=True, exist_ok=True)
            node.config.write_text("".join(f"{k}={v}\n" for k, v in node.properties().items()))
            run(
                [
                    "java",
                    "-Xmx256m",
                    *JVM_OPTIONS,
                    "-cp",
                    f"{libs}/*",
                    *self._logging(node),
                    "kafka.tools.StorageTool",
                    "format",
                    # One argument: a random id may start with "-", which argparse would
                    # take for an option after a separate -t.
                    f"--cluster-id={cluster_id}",
                    f"--config={node.config}",
                    "--add-scram",
                    f"SCRAM-SHA-512=[name={SASL_USER},password={SASL_PASSWORD}]",
                ],
                what=f"formatting Kafka node {node.node_id}",
            )

    def start_node(self, node_id: int) -> None:
        node = self.node(node_id)
        libs = self.libs
        self.process(node_id).start(
            [
                "java",
                f"-Xmx{self.heap}",
                "-Xms128m",
                *JVM_OPTIONS,
                "-Djava.awt.headless=true",
                *self._logging(node),
                "-cp",
                f"{libs}/*",
                "kafka.Kafka",
                str(node.config),
            ]
        )

    def stop_node(self, node_id: int) -> None:
        self.process(node_id).stop(timeout=30)

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one broker: no controlled shutdown, as when its machine dies. Start it
        again with start_node (it then recovers its logs, as after a crash)."""
        self.process(node_id).signal(signal.SIGKILL)
        self.process(node_id).wait_gone(timeout=30)

    def freeze_node(self, node_id: int) -> None:
        """SIGSTOP one broker: its connections stay open and it answers nothing, until
        the controller fences it and its partitions' leadership moves."""
        self.process(node_id).signal(signal.SIGSTOP)

    def thaw_node(self, node_id: int) -> None:
        self.process(node_id).signal(signal.SIGCONT)

    def start(self) -> None:
        for n in self.node_ids:
            self.start_node(n)
        self.wait_ready()

    def start_fresh(self) -> None:
        """Stop whatever of the cluster runs, format it anew (a new random id unless it
        has one of its own) and start it: all its nodes are ready on return, or it is
        stopped again and the error raised."""
        self.stop(patience=10)
        shutil.rmtree(self.root, ignore_errors=True)
        try:
            self.prepare()
            self.start()
        except BaseException:
            self.stop(patience=10)
            raise

    def wait_ready(self, timeout: float = 120) -> None:
        def ready() -> bool:
            for n in self.node_ids:
                if self.process(n).exited_early():
                    log = self.node(n).root / "server.log"
                    raise StackError(f"Kafka node {n} exited while starting; see {log}")
            return len(self.live_broker_ids()) == len(self.node_ids)

        wait_for(
            f"Kafka {self.name} ({self.release}, {len(self.node_ids)} brokers)",
            ready,
            timeout,
            interval=1.0,
            log=self.nodes[0].root / "server.log",
        )

    def wait_node_ready(self, node_id: int, timeout: float = 90) -> None:
        wait_for(
            f"Kafka {self.name} node {node_id}",
            lambda: node_id in self.live_broker_ids(),
            timeout,
            interval=1.0,
            log=self.node(node_id).root / "server.log",
        )

    def live_broker_ids(self) -> set[int]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 3000, "log_level": 0}
        )
        meta = admin.list_topics(timeout=5)
        return set(meta.brokers)

    def freeze(self) -> None:
        """SIGSTOP every broker: connections stay open and nothing answers, the way a
        network partition or a long GC pause looks to clients."""
        for n in self.node_ids:
            self.process(n).signal(signal.SIGSTOP)

    def thaw(self) -> None:
        for n in self.node_ids:
            self.process(n).signal(signal.SIGCONT)

    def stop(self, patience: float = 30) -> None:
        """SIGTERM to every node, SIGKILL to those still running after `patience` seconds
        (all together)."""
        self.thaw()  # a stopped JVM cannot handle SIGTERM
        # All at once: one by one, each controlled shutdown waits on the others.
        for n in self.node_ids:
            self.process(n).terminate()
        deadline = time.monotonic() + patience
        for n in self.node_ids:
            self.process(n).wait_gone(timeout=max(0.0, deadline - time.monotonic()))


def compat_cluster(version: str, dev: Path | None = None) -> KafkaCluster:
    """The compatibility cluster of one of COMPAT_VERSIONS, in `dev`/kafka-<version> (the
    stack's dev directory by default): the stack's layout on ports of its own, a new
    random cluster id at each format, the isolated cluster's heap."""
    if version not in COMPAT_PORT_OFFSETS:
        raise StackError(f"Kafka {version} is not one of {', '.join(COMPAT_VERSIONS)}")
    return KafkaCluster(
        dev or paths.dev_dir(),
        f"kafka-{version}",
        port_offset=COMPAT_PORT_OFFSETS[version],
        heap="512m",
        version=version,
    )


def start_compat(version: str, dev: Path | None = None) -> KafkaCluster:
    """The compatibility cluster of `version` started anew, its jars collected on first
    use: all its nodes ready on return. A run of it left behind is stopped first; a port
    another process holds is an error naming that process."""
    # Here, not at the top: both modules import this one.
    from devstack import build
    from devstack.stack import Bind, check_binds_free

    build.kafka_jars(version)
    cluster = compat_cluster(version, dev)
    cluster.stop(patience=10)
    check_binds_free([Bind(p, jvm=True) for n in cluster.nodes for p in n.ports])
    cluster.start_fresh()
    return cluster


def compat_ports() -> list[int]:
    """Every port of every compatibility cluster (for the stack's port reservation)."""
    dev = Path("/nonexistent")  # ports do not depend on where the state lives
    return [p for v in COMPAT_VERSIONS for n in compat_cluster(v, dev).nodes for p in n.ports]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of the SSL listeners: a CA, the brokers' key and chain (one certificate
    for 127.0.0.1 serves all three), and a client's certificate and key."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def broker(self) -> Path:
        return self.dir / "broker.pem"

    @property
    def client_cert(self) -> Path:
        return self.dir / "client-cert.pem"

    @property
    def client_key(self) -> Path:
        return self.dir / "client-key.pem"

    def write(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = _certificate("kafka-retention dev CA", ca_key, None)
        broker_key = ec.generate_private_key(ec.SECP256R1())
        broker = _certificate("127.0.0.1", broker_key, (ca, ca_key), server=True)
        client_key = ec.generate_private_key(ec.SECP256R1())
        client = _certificate(SASL_USER, client_key, (ca, ca_key))
        self.ca.write_bytes(ca.public_bytes(Encoding.PEM))
        # Kafka's PEM keystore: the (unencrypted PKCS#8) key, then the chain.
        self.broker.write_bytes(
            _key_pem(broker_key) + broker.public_bytes(Encoding.PEM) + ca.public_bytes(Encoding.PEM)
        )
        self.client_cert.write_bytes(client.public_bytes(Encoding.PEM))
        self.client_key.write_bytes(_key_pem(client_key))
        for path in (self.broker, self.client_key):
            path.chmod(0o600)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def _certificate(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    server: bool = False,
) -> x509.Certificate:
    """A CA's own certificate (ca None), or one the CA signs for a server at the IP
    address `name` or for a client named `name`."""
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca[0].subject if ca else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca is None, path_length=None), critical=True)
    )
    if ca is not None:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(name))])
        builder = builder.add_extension(san, critical=False)
    return builder.sign(ca[1] if ca else key, hashes.SHA256())
