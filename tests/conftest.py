"""Session fixtures: the real local stack (3 Kafka brokers, etcd, kube-apiserver).

The stack starts on first use and stops at the end of the session when this session
started it; a stack already running (`make dev-up`) is reused and left running.
Unit tests never ask for these fixtures, so `pytest tests/unit` needs no stack.

Under KAFKA_RETENTION_SHARED_STACK (make test's parallel sessions, hack/testrun.py) the
stack must already run and a session neither starts nor stops any part of it: a worker
that found a broker down (another worker's fault test) must not "repair" it with a cold
start under everyone.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from devstack import build, paths
from devstack.kafka import KafkaCluster
from devstack.stack import Stack
from tests.helpers.broker_metadata import topic_partitions
from tests.helpers.kafka import Kafka
from tests.helpers.kube import apply_crds, create_namespace, slug
from tests.helpers.sharing import KAFKA_ONLY, group_of, longest_first
from tests.helpers.topics import TopicFactory, in_sync


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of tests/helpers/sharing.py's KAFKA_ONLY get the `kafka_only` marker."""
    for item in items:
        if item.nodeid.split("::", 1)[0] in KAFKA_ONLY:
            item.add_marker(pytest.mark.kafka_only)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The process's line coverage saved now, not only at its exit. A pytest-xdist worker
    whose exit takes over 5 s (here: one that ran a Spark session, niced on a loaded
    machine) is sent SIGINT by execnet and os._exit(1) 10 s later; a run on 1dad8f2 lost
    such a worker's whole measurement (make test's coverage fell from 95.0% to 94.0%,
    every file its tests alone cover). A later save at exit adds what runs after this."""
    import coverage

    current = coverage.Coverage.current()
    if current is not None:
        current.save()


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadfile` (make test's parallel phase) a test file stays on one
    worker, and the tests and files of a group in tests/helpers/sharing.py stay on one
    worker together. (pytest-xdist's own loadgroup cannot do this under pytest 9: it renames
    items through an attribute pytest no longer reads.)"""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class GroupedFiles(LoadFileScheduling):  # type: ignore[misc]  # xdist is untyped
        workqueue: OrderedDict[str, dict[str, bool]]  # xdist's queue of units, in order
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, str(super()._split_scope(nodeid)))

        def _assign_work_unit(self, node: Any) -> None:
            # The queue is complete by the first assignment: order it once, longest first.
            if not self.ordered:
                queue = self.workqueue
                units = {unit: len(tests) for unit, tests in queue.items()}
                self.workqueue = OrderedDict((u, queue[u]) for u in longest_first(units))
                self.ordered = True
            super()._assign_work_unit(node)

    return GroupedFiles(config, log)


def name_the_group_reader() -> None:
    """In-process adapters (and Spark's Python workers) read share and streams groups
    through the group reader, as the operator processes the tests start do (stack.env()).
    Built here if `make setup` has not (a few seconds, once per change of its sources)."""
    os.environ.setdefault("KAFKA_RETENTION_GROUP_READER", str(build.group_reader_jars()))


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    s = Stack()
    if os.environ.get("KAFKA_RETENTION_SHARED_STACK"):
        # The isolated cluster is left out: its tests stop and start its brokers, maybe
        # just as another worker's session begins (seen: a worker's every test failed).
        # A kafka_only session runs beside the API server's and the node's restarts.
        kafka_only = bool(os.environ.get("KAFKA_RETENTION_KAFKA_ONLY"))
        if not (s.kafka.running() and (kafka_only or (s.kube.running() and s.node.running()))):
            pytest.fail(f"the shared stack is not running: {s.status()}")
        if kafka_only:
            name_the_group_reader()
            yield s
            return
        started = False
    else:
        started = s.up()
    name_the_group_reader()
    apply_crds(s)
    yield s
    if started and not os.environ.get("KAFKA_RETENTION_KEEP_STACK"):
        s.down()


@pytest.fixture(scope="session")
def bootstrap(stack: Stack) -> str:
    return stack.kafka.bootstrap_servers


@pytest.fixture(scope="session")
def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


@pytest.fixture
def namespace(stack: Stack, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own, with its default service account (which the
    controller-manager adds a moment after the namespace, and pods need)."""
    ns = slug(request)
    create_namespace(stack, ns)
    yield ns
    stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def topic_factory(
    admin: AdminClient, bootstrap: str, request: pytest.FixtureRequest
) -> TopicFactory:
    """Create RF-3 topics named after the test; each call makes a new one."""

    def create(partitions: int = 3, config: dict[str, str] | None = None) -> str:
        name = f"t-{slug(request)}"
        new = NewTopic(name, num_partitions=partitions, replication_factor=3, config=config or {})
        for attempt in range(3):
            try:
                admin.create_topics([new])[name].result(timeout=30)
            except KafkaException as err:
                code = err.args[0].code()
                # A request sent on the bootstrap connection librdkafka replaces with the
                # brokers' own once it knows them is dropped with _DESTROY_BROKER (seen
                # on the first topic of a freshly started cluster, twice): sent again.
                if code == KafkaError._DESTROY_BROKER and attempt < 2:
                    continue
                # The name is new (a random suffix), so "already exists" can only answer
                # the client's own retry of a request whose first answer was lost on a
                # loaded machine (seen once in make test): the topic is there, as asked.
                if code != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
            break
        # The controller has the topic; wait until every broker serves it too, or a
        # test's first read may hit a broker that has not heard of it yet (a plan listing
        # topics by pattern once found none on a busy CI machine). Clients pick a broker
        # for metadata as they like, so each broker is asked on a socket of its own.
        # 90 s: beside the serial phase's 20,000-partition purge, a new topic's replicas
        # once took over 30 s to be in sync (the kafka-only session, run on 91053f1).
        deadline = time.monotonic() + 90
        for address in bootstrap.split(","):
            while not in_sync(topic_partitions(address, name), partitions):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{address} does not serve {name} 90s after creation")
                time.sleep(0.05)
        return name

    return create


@pytest.fixture
def make_topic(admin: AdminClient, bootstrap: str, request: pytest.FixtureRequest) -> TopicFactory:
    """Create RF-3 topics named after the test; each call makes a new one."""
    return topic_factory(admin, bootstrap, request)


@pytest.fixture
def kafka(admin: AdminClient, bootstrap: str, make_topic: TopicFactory) -> Kafka:
    """admin, bootstrap and make_topic in one, as most tests on the stack take them."""
    return Kafka(bootstrap, admin, make_topic)


@pytest.fixture(scope="session")
def isolated_cluster(stack: Stack) -> KafkaCluster:
    """The stack's second cluster, for tests that freeze, kill or restart brokers or plant
    directories in their log dirs. Only the tests in tests/helpers/sharing.py's
    ISOLATED_KAFKA (one after another, on one worker) and `serial` ones may use it."""
    return stack.isolated_kafka


@pytest.fixture(scope="session")
def isolated_admin(isolated_cluster: KafkaCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": isolated_cluster.bootstrap_servers})


@pytest.fixture
def isolated_kafka(
    isolated_cluster: KafkaCluster, isolated_admin: AdminClient, request: pytest.FixtureRequest
) -> Kafka:
    """As `kafka`, on the isolated cluster."""
    bootstrap = isolated_cluster.bootstrap_servers
    return Kafka(bootstrap, isolated_admin, topic_factory(isolated_admin, bootstrap, request))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession for the whole test session (JVM start-up costs seconds)."""
    from kafka_retention.adapters import spark as launcher

    # The scans read through Spark's Kafka source, as the operator's do (`make setup`
    # collects its jars); a test that wants the Python reader says so itself.
    os.environ.setdefault("KAFKA_RETENTION_SPARK_JARS", str(paths.spark_kafka_jars()))
    # Its Python workers see only the environment the JVM started with: a worker whose
    # first test starts the session before the stack fixture would plan without it.
    name_the_group_reader()
    yield launcher.local_session(cores="2")
    launcher.stop()
