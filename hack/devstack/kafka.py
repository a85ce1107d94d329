"""Three Apache Kafka nodes in KRaft combined mode (broker + controller) on 127.0.0.1.

Node ids 1, 2, 3 form a static controller quorum, so losing one node keeps both the
quorum and (with min.insync.replicas=2) acks=all produce working.
"""

from __future__ import annotations

import base64
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

from devstack import paths
from devstack.procs import Process, StackError, run, wait_for

NODE_IDS = (1, 2, 3)
BROKER_PORT_BASE = 39090  # node n listens on BROKER_PORT_BASE + n
CONTROLLER_PORT_BASE = 39190

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


@dataclass(frozen=True)
class KafkaNode:
    node_id: int
    root: Path  # .dev/kafka/<id>

    @property
    def broker_port(self) -> int:
        return BROKER_PORT_BASE + self.node_id

    @property
    def controller_port(self) -> int:
        return CONTROLLER_PORT_BASE + self.node_id

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
        voters = ",".join(f"{n}@127.0.0.1:{CONTROLLER_PORT_BASE + n}" for n in NODE_IDS)
        return {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.broker_port},"
                f"CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
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
            "num.network.threads": "2",
            "num.io.threads": "4",
        }


class KafkaCluster:
    def __init__(self, dev: Path, heap: str = "768m") -> None:
        self.root = dev / "kafka"
        self.heap = heap
        self.nodes = [KafkaNode(n, self.root / str(n)) for n in NODE_IDS]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[NODE_IDS.index(node_id)]

    def process(self, node_id: int) -> Process:
        return Process(f"kafka-{node_id}", self.root / str(node_id))

    def running(self) -> bool:
        return all(self.process(n).running() for n in NODE_IDS)

    def prepare(self) -> None:
        """Write configs and format fresh log dirs with one new cluster id."""
        libs = paths.kafka_libs()
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "log4j2.properties").write_text(LOG4J2)
        for node in self.nodes:
            node.root.mkdir(parents=True, exist_ok=True)
            node.config.write_text("".join(f"{k}={v}\n" for k, v in node.properties().items()))
            run(
                [
                    "java",
                    "-Xmx256m",
                    "-cp",
                    f"{libs}/*",
                    f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}",
                    f"-Dkafka.logs.dir={node.root}",
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(node.config),
                ],
                what=f"formatting Kafka node {node.node_id}",
            )

    def start_node(self, node_id: int) -> None:
        node = self.node(node_id)
        libs = paths.kafka_libs()
        self.process(node_id).start(
            [
                "java",
                f"-Xmx{self.heap}",
                "-Xms128m",
                "-XX:+UseG1GC",
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}",
                f"-Dkafka.logs.dir={node.root}",
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
        for n in NODE_IDS:
            self.start_node(n)
        self.wait_ready()

    def wait_ready(self, timeout: float = 120) -> None:
        def ready() -> bool:
            for n in NODE_IDS:
                if self.process(n).exited_early():
                    log = self.node(n).root / "server.log"
                    raise StackError(f"Kafka node {n} exited while starting; see {log}")
            return len(self.live_broker_ids()) == len(NODE_IDS)

        wait_for(
            "Kafka (3 brokers)", ready, timeout, interval=1.0, log=self.nodes[0].root / "server.log"
        )

    def wait_node_ready(self, node_id: int, timeout: float = 90) -> None:
        wait_for(
            f"Kafka node {node_id}",
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
        for n in NODE_IDS:
            self.process(n).signal(signal.SIGSTOP)

    def thaw(self) -> None:
        for n in NODE_IDS:
            self.process(n).signal(signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()  # a stopped JVM cannot handle SIGTERM
        # All at once: one by one, each controlled shutdown waits on the others.
        for n in NODE_IDS:
            self.process(n).terminate()
        for n in NODE_IDS:
            self.process(n).wait_gone(timeout=30)
