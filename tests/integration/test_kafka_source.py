"""Spark's own Kafka source, the connector jar pinned in spark-jobs/pom.xml, on the real
brokers, on the pinned pyspark. The connector is built for Spark 4.0 and pyspark is 4.3:
it logs there through the log keys bridge (spark-jobs/log_keys_bridge.py), at every offset
gap included. Its scans must give what the confluent-kafka reader gives on the same
ranges (two independent readers, one answer) through every listener the operator maps
properties for (SCRAM, mutual TLS)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from devstack.kafka import SASL_PASSWORD, SASL_USER
from devstack.stack import Stack
from kafka_retention.core.plan_request import Connection
from retention_jobs import kafka_source, scans
from tests.helpers.topics import TopicFactory

HOUR = 3_600_000


def _fill(bootstrap: str, topic: str) -> None:
    """Partition 0: 40 records, with non-UTF-8 keys, null keys, headers (a null value among
    them), values of different sizes and 6 tombstones at scattered times. Partition 1: 10
    plain records, then 3 committed transactions of 3 records and an aborted one of 2:
    each marker takes an offset that holds no record, and the aborted records are not read
    (both readers read committed records), so offsets 10-24 have gaps. High watermarks: 40
    and 25."""
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(40):
        key: bytes | None = f"k{i}".encode()
        if i % 7 == 0:
            key = b"\xff\xfe" + bytes([i])
        elif i % 11 == 0:
            key = None
        value = None if i % 6 == 5 else b"v" * (10 + 13 * i)
        headers: list[tuple[str, str | bytes | None]] | None = (
            [("h", b"x" * i), ("n", None)] if i % 3 == 0 else None
        )
        ts = now - HOUR * ((i * 7) % 13) - i
        producer.produce(topic, key=key, value=value, partition=0, timestamp=ts, headers=headers)
    for i in range(10):
        producer.produce(topic, key=f"q{i}".encode(), value=b"w" * 50, partition=1)
    assert producer.flush(30) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn"})
    txn.init_transactions(30)
    for t in range(4):
        txn.begin_transaction()
        for i in range(3 if t < 3 else 2):
            txn.produce(topic, key=f"t{t}-{i}".encode(), value=b"x" * 20, partition=1)
        if t < 3:
            txn.commit_transaction(30)
        else:
            # Written first: an abort drops records still queued in the client, and then
            # neither they nor a marker reach the log (high watermark 22, not 25).
            txn.flush(30)
            txn.abort_transaction(30)


def _rows(df: Any) -> list[tuple[Any, ...]]:
    """Rows as plain tuples (structs too), sorted by their key columns."""

    def plain(v: Any) -> Any:
        if isinstance(v, list):
            return [plain(x) for x in v]
        if hasattr(v, "asDict"):
            return tuple(plain(x) for x in v)
        return v

    return sorted(tuple(plain(v) for v in r) for r in df.collect())


def _needs_usable_source(spark: Any, bootstrap: str) -> None:
    assert kafka_source.usable(spark, Connection(bootstrap)), (
        "make setup collects spark-jobs/pom.xml's jars and builds the log keys bridge"
    )


@pytest.mark.stack
def test_the_connector_built_for_spark_4_0_is_used_on_this_spark_only_through_the_bridge(
    spark: Any, bootstrap: str
) -> None:
    """Without the bridge the connector fails every task that logs, and it logs at every
    offset gap: the scans may use it on this Spark only because the bridge is there."""
    assert kafka_source.has_source(spark), "make setup collects spark-jobs/pom.xml's jars"
    assert not kafka_source.matches(spark.version), "pyspark moved: revisit the bridge"
    assert kafka_source.bridged(spark)
    assert kafka_source.usable(spark, Connection(bootstrap))


@pytest.mark.stack
def test_the_scans_read_through_the_connector_s_v2_reader_on_this_spark(
    spark: Any, bootstrap: str, make_topic: TopicFactory
) -> None:
    """Spark reads "kafka" through the V1 relation unless told otherwise, which turns every
    row into an external Row and back; the scans switch the session to the V2 reader,
    which on Spark 4.3 loads only through the moved objects the bridge gives back."""
    _needs_usable_source(spark, bootstrap)
    topic = make_topic(partitions=2, config={"retention.ms": "-1"})
    _fill(bootstrap, topic)
    records = kafka_source.read_ranges(spark, Connection(bootstrap), [(topic, 0, 0, 40)])
    plan = records._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan" in plan
    assert "KafkaRelation" not in plan
    assert records.count() == 40


@pytest.mark.stack
def test_the_kafka_source_is_installed_and_its_scans_agree_with_the_python_reader(
    spark: Any, bootstrap: str, make_topic: TopicFactory
) -> None:
    _needs_usable_source(spark, bootstrap)
    assert kafka_source.has_source(spark), "make setup collects spark-jobs/pom.xml's jars"
    topic = make_topic(partitions=2, config={"retention.ms": "-1"})
    _fill(bootstrap, topic)
    conn = Connection(bootstrap)

    ranges = [(topic, 0, 0, 40), (topic, 1, 0, 25)]
    ours = _rows(kafka_source.average_sizes(spark, conn, ranges, 20))
    sizes = sorted(scans.average_sizes(ranges, conn, 20))
    assert [r[:2] for r in ours] == [(topic, 0), (topic, 1)]
    assert [r[2] for r in ours] == pytest.approx([r[2] for r in sizes])
    assert None not in [r[2] for r in ours]
    empty = _rows(kafka_source.average_sizes(spark, conn, [(topic, 1, 25, 25)], 20))
    assert empty == [(topic, 1, None)]

    asked = [
        ("ns/a", topic, 0, "g1", 5, 29),
        ("ns/b", topic, 0, "g1", 0, 3),
        ("ns/a", topic, 1, "g2", 2, 10),
        ("ns/a", topic, 0, "g2", 12, 12),  # nothing unread: zero, no keys
        ("ns/b", topic, 1, "g3", 10, 25),  # markers in the first 4 offsets: a gap
    ]
    ours = _rows(kafka_source.unconsumed(spark, conn, asked, 4))
    unread = sorted(
        (policy, *row)
        for policy in ("ns/a", "ns/b")
        for row in scans.unconsumed(
            [(t, p, g, lo, hi) for pol, t, p, g, lo, hi in asked if pol == policy], conn, 4
        )
    )
    assert ours == [(*r[:6], [tuple(k) for k in r[6]]) for r in unread]
    assert ours[0][4] == 24  # ns/a, partition 0, g1: offsets 5..28
    gappy = next(r for r in ours if r[3] == "g3")
    assert gappy[4] == 9  # committed transactions' records only
    assert [offset for offset, _ in gappy[6]] == [10, 11, 12, 14]
    assert (7, "\\xff\\xfe\x07") in ours[0][6]  # invalid UTF-8 escaped, as Python does

    ours = _rows(kafka_source.tombstones(spark, conn, ranges, 3))
    inventory = sorted(scans.tombstones(ranges, conn, 3))
    assert ours == [(*r[:6], [tuple(t) for t in r[6]]) for r in inventory]
    assert ours[0][3] == 6


@pytest.mark.stack
def test_the_kafka_source_reads_through_scram_and_mutual_tls_listeners(
    spark: Any, stack: Stack, bootstrap: str, make_topic: TopicFactory
) -> None:
    _needs_usable_source(spark, bootstrap)
    topic = make_topic(partitions=2, config={"retention.ms": "-1"})
    _fill(bootstrap, topic)
    tls = stack.kafka.tls
    connections = {
        "plaintext": Connection(bootstrap),
        "scram": Connection(
            stack.kafka.sasl_bootstrap_servers,
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": SASL_USER,
                "sasl.password": SASL_PASSWORD,
            },
        ),
        "mutual TLS": Connection(
            stack.kafka.ssl_bootstrap_servers,
            {
                "security.protocol": "SSL",
                "ssl.ca.pem": tls.ca.read_text(),
                "ssl.certificate.pem": tls.client_cert.read_text(),
                "ssl.key.pem": tls.client_key.read_text(),
            },
        ),
    }
    ranges = [(topic, 0, 0, 40), (topic, 1, 0, 25)]
    found = {
        name: _rows(kafka_source.tombstones(spark, conn, ranges, 2))
        for name, conn in connections.items()
    }
    assert [r[2] for r in found["plaintext"]] == [40, 19]
    assert found["scram"] == found["plaintext"]
    assert found["mutual TLS"] == found["plaintext"]


@pytest.mark.stack
def test_a_range_retention_shortened_mid_plan_reads_what_is_left_even_logging_at_info(
    spark: Any, bootstrap: str, admin: AdminClient, make_topic: TopicFactory
) -> None:
    """A scan that meets a log start moved by retention after planning logs a data-loss
    warning and reads on. That warning is where a connector built for another Spark
    fails: on Spark 4.3, without the log keys bridge, the 4.0.0 connector's log lines
    threw NoClassDefFoundError (its log keys were gone). At INFO every other line it
    writes runs too."""
    _needs_usable_source(spark, bootstrap)
    topic = make_topic(partitions=2, config={"retention.ms": "-1"})  # _fill writes both
    _fill(bootstrap, topic)
    cut = admin.delete_records([KafkaTopicPartition(topic, 0, 10)])
    for future in cut.values():
        future.result(timeout=30)
    spark.sparkContext.setLogLevel("INFO")
    try:
        rows = _rows(kafka_source.tombstones(spark, Connection(bootstrap), [(topic, 0, 0, 40)], 2))
    finally:
        spark.sparkContext.setLogLevel("WARN")
    assert [r[2] for r in rows] == [30]  # offsets 10-39: what retention left
