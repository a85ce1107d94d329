"""The local Kafka is a real 3-broker KRaft cluster: replication, acks=all, broker loss."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from devstack.stack import Stack
from tests.conftest import TopicFactory


def _produce(bootstrap: str, topic: str, count: int, prefix: str) -> None:
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
        producer.produce(
            topic, key=f"{prefix}-{i}".encode(), value=f"v{i}".encode(), on_delivery=on_delivery
        )
    assert producer.flush(60) == 0, "records still in flight after 60s"
    assert failures == []


def _consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    keys: list[bytes] = []
    try:
        for _ in range(300):
            if len(keys) >= expected:
                break
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                assert msg.error() is None, msg.error()
                key = msg.key()
                assert isinstance(key, bytes)
                keys.append(key)
    finally:
        consumer.close()
    return keys


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
    _produce(bootstrap, topic, 300, "k")
    keys = _consume_all(bootstrap, topic, 3, 300)
    assert sorted(keys) == sorted(f"k-{i}".encode() for i in range(300))


@pytest.mark.stack
def test_producing_goes_on_with_one_broker_down(
    stack: Stack, bootstrap: str, admin: AdminClient, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    _produce(bootstrap, topic, 50, "before")
    stack.kafka.stop_node(3)
    try:
        assert not stack.kafka.process(3).running()
        # acks=all with min.insync.replicas=2 still succeeds on the two live replicas.
        _produce(bootstrap, topic, 50, "during")
        keys = _consume_all(bootstrap, topic, 3, 100)
        assert len(keys) == 100
        assert {k.split(b"-")[0] for k in keys} == {b"before", b"during"}
    finally:
        stack.kafka.start_node(3)
        stack.kafka.wait_node_ready(3)
    # The restarted broker catches up and rejoins every ISR.
    for _ in range(120):
        parts = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
        if all(sorted(p.isrs) == [1, 2, 3] for p in parts):
            break
        time.sleep(0.5)
    else:
        pytest.fail("broker 3 did not rejoin the ISR within 60s")
