"""The Spark side of the erasure scan on the local session, over records made in memory
(the Kafka read itself is tests/integration/test_spark_erasure_scan.py): keys are hashed
in Spark and dropped before Python, and match_digests -> tally_segments -> fold gives
ScanTally's PartitionScan over several Spark partitions."""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any

from kafka_retention.core.erasure_scan import KeyMatcher, ScanTally
from kafka_retention.core.facts import TopicPartition
from retention_jobs.erasure_scan import (
    SEGMENTS,
    fold,
    for_python,
    match_digests,
    tally_segments,
)

RECORDS = "topic string, partition int, offset long, key binary, isTombstone boolean, " + (
    "timestampMs long, storedBytes long"
)
LISTED = [hashlib.sha256(k).hexdigest() for k in (b"alice", b"bob")]


def records(n: int) -> list[tuple[Any, ...]]:
    keys = [b"alice", b"bob", b"carol", None, b"dave"]
    return [
        ("orders", p, o, keys[(o * 7 + p) % 5], o % 11 == 0, 1000 + o, 80 + o % 13)
        for p in (0, 1)
        for o in range(0, n * 2, 2)  # gaps, as compaction and transaction markers leave
    ]


def test_keys_are_hashed_in_spark_and_never_reach_python(spark: Any) -> None:
    df = spark.createDataFrame(records(20), RECORDS)
    listed = spark.createDataFrame([(d,) for d in LISTED], "digest string")
    matched = match_digests(df, listed, ["clicks", "orders"])
    assert "key" not in matched.columns
    assert "topic" not in matched.columns
    assert "key" not in for_python(matched, 2).columns
    rows = matched.collect()
    assert {r.topicIndex for r in rows} == {1}
    by_offset = {(r.partition, r.offset): r.digest for r in rows}
    for topic, p, o, key, *_ in records(20):
        expected = hashlib.sha256(key).hexdigest() if key in (b"alice", b"bob") else None
        assert by_offset[(p, o)] == expected, (topic, p, o)


def test_spark_partitions_fold_into_the_tally_of_every_record(spark: Any) -> None:
    made = records(500)
    # Four Spark partitions, each a contiguous run of one partition's offsets (as the
    # Kafka source splits a long range between tasks).
    df = spark.createDataFrame(made, RECORDS).repartitionByRange(4, "partition", "offset")
    df = df.sortWithinPartitions("partition", "offset")
    listed = spark.createDataFrame([(d,) for d in LISTED], "digest string")
    rows = (
        for_python(match_digests(df, listed, ["orders"]), 2)
        .mapInArrow(partial(tally_segments, topics=["orders"], width=2), SEGMENTS)
        .toArrow()
        .to_pylist()
    )
    matcher = KeyMatcher(LISTED)
    for p in (0, 1):
        tp = TopicPartition("orders", p)
        tally = ScanTally(tp, 0, 1000, matcher)
        for _, q, o, key, tomb, ts, size in made:
            if q == p:
                tally.add(o, ts, key, tomb, size)
        assert fold(tp, 0, 1000, [r for r in rows if r["partition"] == p]) == tally.result()
    assert len([r for r in rows if r["digest"] is None]) >= 4  # split into segments
