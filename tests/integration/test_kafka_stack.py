"""The local Kafka is a real 3-broker KRaft cluster: replication, acks=all, broker loss."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from devstack.kafka import KafkaCluster
from tests.helpers.kafka import Kafka
from tests.helpers.topics import TopicFactory


def _produce(
    bootstrap: str, topic: str, count: int, prefix: str, partitions: int | None = None
) -> None:
    """count records keyed prefix-i; with `partitions`, record i goes to partition
    i % partitions (else the partitioner decides)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 30000,
        }
    )
    failures: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(err)

    for i in range(count):
        key, value = f"{prefix}-{i}".encode(), f"v{i}".encode()
        if partitions is None:
            producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
        else:
            producer.produce(
                topic, key=key, value=value, partition=i % partitions, on_delivery=on_delivery
            )
    assert producer.flush(60) == 0, "records still in flight after 60s"
    assert failures == []


def _consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    return [key for _, _, key in _consume_records(bootstrap, topic, partitions, expected)]


def _consume_records(
    bootstrap: str, topic: str, partitions: int, expected: int
) -> list[tuple[int, int, bytes]]:
    """(partition, offset, key) of each record, in the order they arrived."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: list[tuple[int, int, bytes]] = []
    try:
        for _ in range(300):
            if len(records) >= expected:
                break
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                assert msg.error() is None, msg.error()
                key = msg.key()
                assert isinstance(key, bytes)
                records.append((int(msg.partition() or 0), int(msg.offset() or 0), key))
    finally:
        consumer.close()
    return records


@pytest.mark.stack
def test_cluster_has_three_brokers(admin: AdminClient) -> None:
    assert set(admin.list_topics(timeout=10).brokers) == {1, 2, 3}


@pytest.mark.stack
def test_topic_with_rf3_has_three_replicas_in_sync(
    admin: AdminClient, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    assert len(meta.partitions) == 3
    for part in meta.partitions.values():
        assert sorted(part.replicas) == [1, 2, 3]
        assert sorted(part.isrs) == [1, 2, 3]


@pytest.mark.stack
def test_acks_all_records_come_back_in_order_per_partition(
    bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    _produce(bootstrap, topic, 300, "k", partitions=3)
    records = _consume_records(bootstrap, topic, 3, 300)
    for p in range(3):
        # As read, without sorting: offsets 0..99 and the keys in the order they were sent.
        got = [(offset, key) for part, offset, key in records if part == p]
        assert got == [(n, f"k-{3 * n + p}".encode()) for n in range(100)]


@pytest.mark.stack
def test_producing_goes_on_with_one_broker_down(
    isolated_cluster: KafkaCluster, isolated_kafka: Kafka
) -> None:
    """On the isolated cluster: it stops a broker."""
    bootstrap, admin, make_topic = (
        isolated_kafka.bootstrap,
        isolated_kafka.admin,
        isolated_kafka.make_topic,
    )
    topic = make_topic(partitions=3)
    _produce(bootstrap, topic, 50, "before")
    isolated_cluster.stop_node(3)
    try:
        assert not isolated_cluster.process(3).running()
        # acks=all with min.insync.replicas=2 still succeeds on the two live replicas.
        _produce(bootstrap, topic, 50, "during")
        keys = _consume_all(bootstrap, topic, 3, 100)
        assert len(keys) == 100
        assert {k.split(b"-")[0] for k in keys} == {b"before", b"during"}
    finally:
        isolated_cluster.start_node(3)
        isolated_cluster.wait_node_ready(3)
    # The restarted broker catches up and rejoins every ISR.
    for _ in range(120):
        parts = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
        if all(sorted(p.isrs) == [1, 2, 3] for p in parts):
            break
        time.sleep(0.5)
    else:
        pytest.fail("broker 3 did not rejoin the ISR within 60s")
