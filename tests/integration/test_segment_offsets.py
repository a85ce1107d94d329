"""The offsets a partition directory holds, read from segment files a real broker wrote
(what orphan cleanup judges a tiered topic's orphan by): several segments, compressed
multi-record batches, a transaction's records and its commit marker. Read on this
machine and through the exec script (dash and GNU coreutils), from the live partition
directories of the stack's brokers, which are only read."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from confluent_kafka import Producer

from devstack.stack import Stack
from kafka_retention.adapters.broker_volumes import ExecVolumes, LocalVolumes
from kafka_retention.core.orphan_tiers import HeldOffsets
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import high_watermarks
from tests.helpers.tiered import produce_hours_apart
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack


def run(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def test_held_offsets_are_read_from_a_brokers_own_segments(stack: Stack, kafka: Kafka) -> None:
    # Records an hour apart roll a segment each (segment.ms); the broker keeps them all.
    topic = kafka.make_topic(partitions=1, config={"segment.ms": "600000", "retention.ms": "-1"})
    produce_hours_apart(kafka.bootstrap, topic, (3, 2, 1), 10, int(time.time() * 1000))
    compressed = Producer(
        {"bootstrap.servers": kafka.bootstrap, "compression.type": "lz4", "linger.ms": 5}
    )
    for i in range(500):
        compressed.produce(topic, value=b"%d" % i * 20, partition=0)
    assert compressed.flush(30) == 0
    transactional = Producer(
        {"bootstrap.servers": kafka.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"}
    )
    transactional.init_transactions(30)
    transactional.begin_transaction()
    for _ in range(7):
        transactional.produce(topic, value=b"t", partition=0)
    transactional.commit_transaction(30)
    # The commit marker takes an offset too; the coordinator writes it after the commit
    # returns.
    end = 30 + 500 + 7 + 1
    eventually(
        lambda: high_watermarks(kafka.admin, topic, 1) == [end], timeout=30, what="the marker"
    )
    name = f"{topic}-0"
    for node in stack.kafka.nodes:
        log_dir = str(node.log_dir)
        deadline = time.monotonic() + 30
        # A follower may not have the marker yet: each replica catches up within moments.
        while (held := LocalVolumes().held_offsets(log_dir, name)) != HeldOffsets(0, end - 1):
            assert time.monotonic() < deadline, (node.node_id, held)
            time.sleep(0.2)
        assert ExecVolumes(run).held_offsets(log_dir, name) == held
