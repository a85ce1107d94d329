"""Cluster names resolved to Kafka's cluster id: once per name and a while."""

from __future__ import annotations

from kafka_retention.adapters.kafka import KafkaUnavailable
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
