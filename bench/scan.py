"""`make bench`, scans: the plan job's record scan (executors reading an offset range with
confluent-kafka) over one topic, beside `kafka-consumer-perf-test.sh` reading the same
topic."""

from __future__ import annotations

import os
import time
from functools import partial

from bench.common import RUN, Row, java_tool, say
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.stack import Stack
from kafka_retention.adapters.spark import local_session
from retention_jobs import scans
from retention_jobs.request import Connection

SCAN_RECORDS = int(os.environ.get("BENCH_SCAN_RECORDS", "1000000"))
RECORD_BYTES = 100


def bench_scan(stack: Stack, admin: AdminClient) -> list[Row]:
    bootstrap = stack.kafka.bootstrap_servers
    topic = f"bench-scan-{RUN}"
    say(f"producing {SCAN_RECORDS} records of {RECORD_BYTES} bytes to {topic}")
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(timeout=60)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "none",
        }
    )
    value = b"v" * RECORD_BYTES
    for i in range(SCAN_RECORDS):
        while True:
            try:
                producer.produce(topic, value=value, key=b"k%09d" % i, partition=i % 3)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(300)
    per_partition = [SCAN_RECORDS // 3 + (1 if p < SCAN_RECORDS % 3 else 0) for p in range(3)]
    conn = Connection(bootstrap)
    spark = local_session()
    items = [(topic, p, "bench", 0, per_partition[p]) for p in range(3)]
    fn = partial(scans.unconsumed, conn=conn, key_sample=10)
    spark.sparkContext.parallelize(items[:1], 1).mapPartitions(fn).count()  # warm-up
    started = time.monotonic()
    counted = spark.sparkContext.parallelize(items, 3).mapPartitions(fn).collect()
    ours = time.monotonic() - started
    assert sum(r[3] for r in counted) == SCAN_RECORDS
    started = time.monotonic()
    perf = java_tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--messages",
        str(SCAN_RECORDS),
        "--timeout",
        "60000",
    )
    reference = time.monotonic() - started
    mb = SCAN_RECORDS * (RECORD_BYTES + 10) / 1e6
    perf_line = perf.stdout.strip().splitlines()[-1]
    return [
        Row(
            f"scan {SCAN_RECORDS} records ({mb:.0f} MB), 3 partitions",
            f"{ours:.1f} s, {SCAN_RECORDS / ours / 1e3:.0f}k rec/s, {mb / ours:.0f} MB/s",
            f"{reference:.1f} s, {SCAN_RECORDS / reference / 1e3:.0f}k rec/s, "
            f"{mb / reference:.0f} MB/s",
            "ours: Spark tasks with confluent-kafka counting, sizing and sampling keys; "
            "reference: kafka-consumer-perf-test.sh wall time incl. JVM start "
            f"(its own report: `{perf_line}`)",
        )
    ]
