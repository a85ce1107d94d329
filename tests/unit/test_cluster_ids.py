"""Cluster names resolved to Kafka's cluster id: once per name and a while."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.specs import ClusterRef, parse_cluster
from kafka_retention.services.cluster_ids import ClusterIds


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Cluster:
    def __init__(self, cluster_id: str | None) -> None:
        self.id = cluster_id

    def cluster_id(self) -> str:
        if self.id is None:
            raise KafkaUnavailable("_TRANSPORT: all brokers down")
        return self.id


def ref(bootstrap: str) -> ClusterRef:
    return parse_cluster({"cluster": {"bootstrapServers": bootstrap}})


def test_a_name_is_resolved_once_per_ttl_and_failures_are_retried_sooner() -> None:
    connects: list[str] = []
    answers = {"a:9092": "id-a", "b:9092": None}

    def connect(bootstrap: str, config: dict[str, str]) -> Cluster:
        connects.append(bootstrap)
        return Cluster(answers[bootstrap])

    clock = Clock()
    ids = ClusterIds(lambda ns, r: (r.bootstrap_servers, {}), connect, 300, 60, clock)
    assert ids.of("ns", ref("a:9092")) == "id-a"
    assert ids.of("other", ref("a:9092")) == "id-a"
    assert ids.of("ns", ref("b:9092")) is None
    assert connects == ["a:9092", "b:9092"]
    clock.now = 61
    answers["b:9092"] = "id-b"
    assert ids.of("ns", ref("a:9092")) == "id-a"  # still cached
    assert ids.of("ns", ref("b:9092")) == "id-b"  # the failure was not
    clock.now = 301
    answers["a:9092"] = "id-a2"  # repointed: noticed after the TTL
    assert ids.of("ns", ref("a:9092")) == "id-a2"
    assert connects == ["a:9092", "b:9092", "b:9092", "a:9092"]


def test_a_name_that_cannot_be_resolved_is_unknown_not_an_error() -> None:
    def resolve(ns: str, r: ClusterRef) -> tuple[str, dict[str, str]]:
        raise LookupError("secret missing")

    def connect(bootstrap: str, config: dict[str, str]) -> Cluster:
        raise AssertionError("not reached")

    ids = ClusterIds(resolve, connect)
    assert ids.of("ns", ref("a:9092")) is None


def test_an_id_read_on_a_batch_connection_needs_no_second_connection() -> None:
    def connect(bootstrap: str, config: dict[str, str]) -> Cluster:
        raise AssertionError("should have been remembered")

    ids = ClusterIds(lambda ns, r: (r.bootstrap_servers, {}), connect)
    ids.remember("ns", ref("a:9092"), "id-a")
    assert ids.of("ns", ref("a:9092")) == "id-a"


def test_one_namespaces_failure_does_not_hide_the_id_from_another() -> None:
    """A tenant naming a shared cluster with a Secret it lacks fails to resolve it; the
    answer for every other namespace naming the same brokers stays the cluster's id
    (else its policies would lose their peers on that cluster, and a tenant could make
    others cut past each other's groups)."""
    clock = Clock()

    def resolve(ns: str, r: ClusterRef) -> tuple[str, dict[str, str]]:
        if ns == "evil":
            raise LookupError("secret missing")
        return r.bootstrap_servers, {}

    ids = ClusterIds(resolve, lambda b, c: Cluster("id-k"), 300, 60, clock)
    shared = parse_cluster({"cluster": {"bootstrapServers": "k:9092", "clientConfigSecret": "s"}})
    assert ids.of("evil", shared) is None  # first: nothing known yet
    assert ids.of("team", shared) == "id-k"
    assert ids.of("evil", shared) == "id-k"  # an id is the cluster's, whoever asked
    clock.now = 400  # the id is stale; evil's refresh fails again
    assert ids.of("evil", shared) == "id-k"
    assert ids.of("team", shared) == "id-k"


def test_an_id_once_read_survives_refreshes_that_fail() -> None:
    clock = Clock()
    up = {"a:9092": True}

    def connect(bootstrap: str, config: dict[str, str]) -> Cluster:
        return Cluster("id-a" if up[bootstrap] else None)

    ids = ClusterIds(lambda ns, r: (r.bootstrap_servers, {}), connect, 300, 60, clock)
    assert ids.of("ns", ref("a:9092")) == "id-a"
    up["a:9092"] = False
    clock.now = 301
    assert ids.of("ns", ref("a:9092")) == "id-a"  # a failure is no evidence of another id


def test_a_failure_is_retried_after_its_ttl_per_namespace() -> None:
    clock = Clock()
    tries: list[str] = []

    def resolve(ns: str, r: ClusterRef) -> tuple[str, dict[str, str]]:
        tries.append(ns)
        raise LookupError("secret missing")

    ids = ClusterIds(resolve, lambda b, c: Cluster(None), 300, 60, clock)
    for _ in range(3):
        assert ids.of("a", ref("x:9092")) is None
    assert ids.of("b", ref("x:9092")) is None  # b's own lookup, not a's failure
    assert tries == ["a", "b"]
    clock.now = 61
    assert ids.of("a", ref("x:9092")) is None
    assert tries == ["a", "b", "a"]
    ids.remember("a", ref("x:9092"), "id-x")  # a batch connected after all
    assert ids.of("a", ref("x:9092")) == "id-x"
    assert ids.of("b", ref("x:9092")) == "id-x"


def test_threads_asking_for_one_name_at_once_share_one_connection() -> None:
    started, release = threading.Event(), threading.Event()
    connects: list[str] = []

    def connect(bootstrap: str, config: dict[str, str]) -> Cluster:
        connects.append(bootstrap)
        started.set()
        release.wait(5)
        return Cluster("id-a")

    ids = ClusterIds(lambda ns, r: (r.bootstrap_servers, {}), connect)
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(ids.of, "ns", ref("a:9092"))
        assert started.wait(5)
        rest = [pool.submit(ids.of, "ns", ref("a:9092")) for _ in range(7)]
        release.set()
        answers = [first.result(5)] + [f.result(5) for f in rest]
    assert answers == ["id-a"] * 8
    assert connects == ["a:9092"]
