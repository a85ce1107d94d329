"""The erasure scan on Spark against the real stack gives the PartitionScans the
operator's in-process scan gives (adapters.kafka_erasure): a key in several partitions,
an aborted transaction's record (read uncommitted), tombstones and keyless records; a
partition long enough that Spark splits it between tasks; and the adapter that the
handler wires takes Spark from its threshold on."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.adapters.kafka_records import RecordReader
from kafka_retention.adapters.spark_erasure import SparkErasureAdmin
from kafka_retention.core.erasure import key_digest
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_request import Connection
from retention_jobs import erasure_scan, kafka_source
from tests.helpers.kafka import Kafka
from tests.helpers.records import produce

pytestmark = pytest.mark.stack

KEY = b"customer-4711@example.com"
DIGEST = key_digest(KEY)
UNLISTED = key_digest(b"someone-else")


def ranges_of(admin: ErasureAdmin, topic: str, partitions: int) -> dict[TopicPartition, Any]:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    starts, ends = admin.log_bounds(tps)
    return {tp: (starts[tp], ends[tp]) for tp in tps}


def written_in_an_aborted_transaction(bootstrap: str, topic: str, partition: int) -> None:
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, key=KEY, value=b"never-committed", partition=partition)
    txn.flush(30)  # an abort drops what the client still queues
    txn.abort_transaction(30)


def mixed_topic(kafka: Kafka) -> str:
    """3 partitions: other keys, keyless records, KEY with values in 0 and 1 and a
    tombstone in 1, KEY only in an aborted transaction in 2, then more of other keys."""
    topic = kafka.topic({0: 4, 1: 4, 2: 4}, {}, key=lambda p, i: f"other-{p}-{i}".encode())
    produce(kafka.bootstrap, topic, {0: 2, 1: 2, 2: 2}, key=lambda _p, _i: None)
    produce(kafka.bootstrap, topic, {0: 2, 1: 1}, key=lambda _p, _i: KEY, value=b"profile")
    tomb = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "all"})
    tomb.produce(topic, key=KEY, value=None, partition=1)
    assert tomb.flush(30) == 0
    written_in_an_aborted_transaction(kafka.bootstrap, topic, 2)
    produce(kafka.bootstrap, topic, {0: 3, 1: 3, 2: 3}, key=lambda p, i: f"late-{p}-{i}".encode())
    return topic


def in_process(admin: ErasureAdmin, ranges: Mapping[TopicPartition, Any], digests: Any) -> Any:
    found = admin.scan_keys(ranges, frozenset(digests))
    assert all(isinstance(s, PartitionScan) for s in found.values()), found
    return found


def test_spark_and_in_process_scans_agree_with_aborted_records_tombstones_and_keyless(
    kafka: Kafka, spark: Any
) -> None:
    topic = mixed_topic(kafka)
    admin = ErasureAdmin(kafka.bootstrap)
    ranges = ranges_of(admin, topic, 3)
    on_spark = erasure_scan.scan_keys(
        spark, Connection(kafka.bootstrap), ranges, {DIGEST, UNLISTED}
    )
    assert on_spark == in_process(admin, ranges, {DIGEST, UNLISTED})
    p0, p1, p2 = (on_spark[TopicPartition(topic, p)] for p in range(3))
    assert (p0.hits[DIGEST].values, p0.collateral_records) == (2, 6)
    assert (p1.hits[DIGEST].values, p1.hits[DIGEST].tombstones) == (1, 1)
    # The aborted record holds the key: only a read_uncommitted scan sees it.
    assert p2.hits[DIGEST].values == 1
    assert UNLISTED not in p0.hits
    reader = RecordReader(kafka.bootstrap)  # librdkafka's default: read_committed
    try:
        committed = list(reader.read(TopicPartition(topic, 2), 0, ranges[p2.tp][1]))
    finally:
        reader.close()
    assert KEY not in {r.key for r in committed}


def test_a_partition_split_between_tasks_scans_as_one(kafka: Kafka, spark: Any) -> None:
    """250,000 records in one partition: the source reads it in two tasks (task_records),
    with KEY on both sides of the split and at its edges."""
    total = 250_000
    at = {0, 1, 124_999, 125_000, 125_001, 200_000, total - 1}
    topic = kafka.topic({0: 0}, {})
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 20})
    for i in range(total):
        while True:
            try:
                producer.produce(
                    topic,
                    key=KEY if i in at else b"k%07d" % i,
                    value=None if i == 200_000 else b"v" * 20,
                    partition=0,
                )
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    assert kafka_source.task_records([total], spark.sparkContext.defaultParallelism) is not None
    admin = ErasureAdmin(kafka.bootstrap)
    ranges = ranges_of(admin, topic, 1)
    on_spark = erasure_scan.scan_keys(spark, Connection(kafka.bootstrap), ranges, {DIGEST})
    assert on_spark == in_process(admin, ranges, {DIGEST})
    scan = on_spark[TopicPartition(topic, 0)]
    assert (scan.examined, scan.matches, scan.collateral_records) == (total, 7, total - 7)


class Recorded:
    """The Spark job, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(
        self,
        spark: Any,
        conn: Connection,
        ranges: Mapping[TopicPartition, tuple[int, int]],
        digests: AbstractSet[str],
    ) -> dict[TopicPartition, PartitionScan]:
        self.calls += 1
        return erasure_scan.scan_keys(spark, conn, ranges, digests)


def test_the_adapter_scans_on_spark_from_its_threshold_and_in_process_below(
    kafka: Kafka, spark: Any
) -> None:
    topic = mixed_topic(kafka)
    job = Recorded()

    def admin(min_records: int) -> SparkErasureAdmin:
        return SparkErasureAdmin(
            kafka.bootstrap,
            {},
            job=job,
            usable=kafka_source.usable,
            min_records=min_records,
            session=lambda: spark,
            min_partition_offsets=1,  # the partitions here are short: the total decides
        )

    ranges = ranges_of(admin(1), topic, 3)
    spanned = sum(e - s for s, e in ranges.values())
    over = admin(spanned).scan_keys(ranges, {DIGEST})
    assert job.calls == 1
    below = admin(spanned + 1).scan_keys(ranges, {DIGEST})
    assert job.calls == 1
    assert over == below == in_process(ErasureAdmin(kafka.bootstrap), ranges, {DIGEST})
