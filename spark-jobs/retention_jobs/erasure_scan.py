"""The RecordErasure scan on Spark: every record of each range read through Spark's own
Kafka source (uncommitted records too), its key hashed (SHA-256) on the executors and
matched against the listed digests, broadcast to them; the answer is one
core.erasure_scan.PartitionScan a partition, as the operator's in-process scan
(adapters.kafka_erasure.ErasureAdmin.scan_keys) gives it, so one judge reads both.

No key leaves the executors' JVM: the key column is hashed and dropped before any row
reaches Python (the matching digest, or null, goes on), and the driver receives counts,
offsets and digests only.

A scan's collateral is the records of other keys below the last match of a partition,
which is not known until the whole partition is read. Each task reads one offset range
of one partition in offset order (a segment, as the source splits long ranges), so it
tallies in one pass, over Arrow batches (`tally_segments`): its records and bytes, each
digest's hits, and its own records of other keys before its last match. The driver
joins a partition's segments in offset order (`fold`): no second read, no sort, no
shuffle.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_retention.core.erasure_scan import DigestHits, KeyMatcher, PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_request import Connection
from retention_jobs import kafka_source

log = logging.getLogger(__name__)

# One row per segment (digest null: its summary) and per (segment, digest) it holds.
# Summary rows: records and bytes of the segment, `last` its last offset; `others` and
# `otherBytes` its records of other keys, `othersBeforeLastMatch` (and bytes) those
# below its last match. Digest rows: that digest's hits in the segment.
SEGMENTS = (
    "topic string, partition int, first long, last long, digest string, "
    "records long, bytes long, values long, tombstones long, "
    "firstMatch long, lastMatch long, lastValue long, lastTombstone long, lastTimestampMs long, "
    "others long, otherBytes long, othersBeforeLastMatch long, otherBytesBeforeLastMatch long"
)
# What match_digests gives: no key, and the topic as its index in the scan's topic list
# (a string a record into Arrow and Python cost more than the tally itself).
_MATCHED = [
    "topicIndex",
    "partition",
    "offset",
    "digest",
    "isTombstone",
    "timestampMs",
    "storedBytes",
]


def match_digests(records: DataFrame, listed: DataFrame, topics: Sequence[str]) -> DataFrame:
    """`records` (kafka_source.read_ranges' rows) with `digest`: the listed digest
    (`listed`: one column `digest`, lowercase hex) of the record's key, or null; the key
    itself dropped, the topic given as its index in `topics` (from 0). The listed digests
    are broadcast, so each task streams its records through a hash lookup in their
    order, with no shuffle (tally_segments needs the order)."""
    hashed = records.withColumn("keyDigest", F.sha2(F.col("key"), 256)).drop("key")
    index = F.array_position(F.array(*(F.lit(t) for t in topics)), F.col("topic")) - 1
    return (
        hashed.join(
            F.broadcast(listed.select(F.col("digest"))),
            hashed["keyDigest"] == F.col("digest"),
            "left",
        )
        .withColumn("topicIndex", index.cast("int"))
        .select(*_MATCHED)
    )


# A match's digest, time and kind as one text for the hand-over: "digest:timestampMs:1"
# for a tombstone, ":0" for a value.
_TAG = ":"


def for_python(matched: DataFrame, width: int) -> DataFrame:
    """match_digests' rows as few columns as the tally needs, since handing rows to
    Python costs by the column (measured on 1M records: 0.9 s for 7 columns, most of
    what the scan adds to the read): `tp` (topicIndex * width + partition, `width` above
    every partition number), offset, `match` (null for a record of another key, the
    digest, time and kind for a match: only matches build the text) and storedBytes."""
    tp = F.col("topicIndex").cast("long") * width + F.col("partition")
    tag = F.concat_ws(
        _TAG,
        F.col("digest"),
        F.col("timestampMs").cast("string"),
        F.col("isTombstone").cast("int").cast("string"),
    )
    return matched.select(
        tp.cast("int").alias("tp"),
        "offset",
        F.when(F.col("digest").isNotNull(), tag).alias("match"),
        F.col("storedBytes").cast("int").alias("storedBytes"),
    )


@dataclass
class _Segment:
    """One task's run of records of one partition, tallied as they come."""

    topic: str
    partition: int
    first: int
    last: int = -1
    records: int = 0
    bytes: int = 0
    others: int = 0
    other_bytes: int = 0
    last_match: int | None = None
    others_before: int = 0
    other_bytes_before: int = 0
    hits: dict[str, DigestHits] = field(default_factory=dict)

    def rows(self) -> Iterator[tuple[Any, ...]]:
        head = (self.topic, self.partition, self.first, self.last)
        yield (
            *head,
            None,
            self.records,
            self.bytes,
            None,
            None,
            None,
            self.last_match,
            None,
            None,
            None,
            self.others,
            self.other_bytes,
            self.others_before,
            self.other_bytes_before,
        )
        for digest, h in self.hits.items():
            yield (
                *head,
                digest,
                h.records,
                None,
                h.values,
                h.tombstones,
                h.first_offset,
                h.last_offset,
                h.last_value_offset,
                h.last_tombstone_offset,
                h.last_timestamp_ms,
                None,
                None,
                None,
                None,
            )


def tally_segments(batches: Iterable[Any], topics: Sequence[str], width: int) -> Iterator[Any]:
    """mapInArrow over for_python's rows of one task, in the order the source read them:
    a segment a run of one partition's records. Non-matching records (nearly all) are
    counted a batch at a time in numpy; only matches are looked at one by one. Offsets
    must rise within a segment (else ValueError: the task fails, never a wrong tally)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    segments: list[_Segment] = []
    current: _Segment | None = None
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        tps = batch.column("tp").to_numpy(zero_copy_only=False)
        offsets = batch.column("offset").to_numpy(zero_copy_only=False)
        sizes = batch.column("storedBytes").to_numpy(zero_copy_only=False)
        tags = batch.column("match")
        matched = tags.is_valid().to_numpy(zero_copy_only=False)
        # Where the partition changes within the batch: runs of one partition.
        cuts = [0, *(int(i) + 1 for i in np.flatnonzero(tps[1:] != tps[:-1])), n]
        for lo, hi in itertools.pairwise(cuts):
            topic_ix, partition = divmod(int(tps[lo]), width)
            topic = topics[topic_ix]
            first = int(offsets[lo])
            if current is None or (current.topic, current.partition) != (topic, partition):
                current = _Segment(topic, partition, first)
                segments.append(current)
            elif first <= current.last:
                raise ValueError(
                    f"{topic}-{partition}: offset {first} after {current.last} in one task"
                )
            offs = offsets[lo:hi]
            if hi - lo > 1 and not bool(np.all(offs[1:] > offs[:-1])):
                raise ValueError(f"{topic}-{partition}: offsets out of order in one task")
            size = sizes[lo:hi]
            hit = matched[lo:hi]
            miss_bytes = np.where(hit, 0, size)
            where = np.flatnonzero(hit)
            if len(where):
                # Records of other keys before each match within the run: its index less
                # the matches before it; their bytes, a running sum.
                running = np.cumsum(miss_bytes)
                last = int(where[-1])
                current.last_match = int(offs[last])
                current.others_before = current.others + last - (len(where) - 1)
                current.other_bytes_before = current.other_bytes + int(running[last])
                # Only the matches' own values into Python.
                found = pc.take(tags, pa.array(where + lo)).to_pylist()
                for tag, i in zip(found, where.tolist(), strict=True):
                    digest, ts, kind = tag.split(_TAG)
                    offset = int(offs[i])
                    h = current.hits.get(digest)
                    if h is None:
                        h = current.hits[digest] = DigestHits(first_offset=offset)
                    h.records += 1
                    h.last_offset = offset
                    h.last_timestamp_ms = int(ts)
                    if kind == "1":
                        h.tombstones += 1
                        h.last_tombstone_offset = offset
                    else:
                        h.values += 1
                        h.last_value_offset = offset
            current.records += hi - lo
            current.bytes += int(size.sum())
            current.others += int((~hit).sum())
            current.other_bytes += int(miss_bytes.sum())
            current.last = int(offs[-1])
    rows = [row for segment in segments for row in segment.rows()]
    if rows:
        yield pa.RecordBatch.from_pylist(
            [dict(zip(_SEGMENT_COLUMNS, row, strict=True)) for row in rows],
            schema=_arrow_schema(),
        )


_SEGMENT_COLUMNS = [part.strip().split(" ")[0] for part in SEGMENTS.split(",")]


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "long": pa.int64()}
    return pa.schema(
        [
            (name, types[kind])
            for name, kind in (part.strip().split(" ") for part in SEGMENTS.split(","))
        ]
    )


def fold(
    tp: TopicPartition, start: int, end: int, rows: Iterable[Mapping[str, Any]]
) -> PartitionScan:
    """One partition's PartitionScan from its segments' rows (SEGMENTS, as mappings), as
    ScanTally would have made it reading the records in order. Segments that overlap or
    fall outside [start, end) raise ValueError: the tally would lie."""
    rows = list(rows)
    summaries = sorted((r for r in rows if r["digest"] is None), key=lambda r: r["first"])
    found: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r["digest"] is not None:
            found.setdefault(r["first"], []).append(r)
    scan = PartitionScan(tp, start, end)
    previous = start - 1
    others = other_bytes = 0
    for s in summaries:
        first, last = s["first"], s["last"]
        if first <= previous or last < first or last >= end:
            raise ValueError(
                f"{tp}: segment [{first}, {last}] after {previous}, range [{start}, {end})"
            )
        previous = last
        scan.examined += s["records"]
        scan.bytes_examined += s["bytes"]
        if s["lastMatch"] is not None:
            scan.collateral_records = others + s["othersBeforeLastMatch"]
            scan.collateral_bytes = other_bytes + s["otherBytesBeforeLastMatch"]
        others += s["others"]
        other_bytes += s["otherBytes"]
        for d in found.pop(first, []):
            h = scan.hits.get(d["digest"])
            if h is None:
                h = scan.hits[d["digest"]] = DigestHits(first_offset=d["firstMatch"])
            h.records += d["records"]
            h.values += d["values"]
            h.tombstones += d["tombstones"]
            h.last_offset = d["lastMatch"]
            h.last_timestamp_ms = d["lastTimestampMs"]
            if d["lastValue"] is not None:
                h.last_value_offset = d["lastValue"]
            if d["lastTombstone"] is not None:
                h.last_tombstone_offset = d["lastTombstone"]
    if found:
        raise ValueError(f"{tp}: hits of a segment with no summary")
    return scan


def scan_keys(
    spark: SparkSession,
    conn: Connection,
    ranges: Mapping[TopicPartition, tuple[int, int]],
    digests: Collection[str],
) -> dict[TopicPartition, PartitionScan]:
    """Every record of each [start, end) read (uncommitted ones too) and its key matched
    against the digests, in one Spark job: a PartitionScan a partition, each as the
    in-process scan gives it. Raises (ValueError, a py4j or Spark error) when any part of
    the read fails: a partial scan is no evidence."""
    import pyarrow as pa

    matcher = KeyMatcher(digests)  # refuses a malformed digest, naming its position only
    # Into and out of the JVM as Arrow: 10,000 digests (and as many rows of hits back)
    # as Python rows cost 0.3 s or more each way, where the whole read costs 2-3 s.
    listed = spark.createDataFrame(
        pa.table({"digest": pa.array(sorted(set(digests)), pa.string())})
    )
    wanted = [(tp.topic, tp.partition, s, e) for tp, (s, e) in ranges.items()]
    topics = sorted({tp.topic for tp in ranges})
    width = max((tp.partition for tp in ranges), default=0) + 1
    if len(topics) * width >= 2**31:
        raise ValueError(f"{len(topics)} topics of up to {width} partitions: too many to number")
    records = kafka_source.read_ranges(spark, conn, wanted, uncommitted=True)
    rows = (
        for_python(match_digests(records, listed, topics), width)
        .mapInArrow(partial(tally_segments, topics=topics, width=width), SEGMENTS)
        .toArrow()
        .to_pylist()
    )
    by_tp: dict[TopicPartition, list[Any]] = {}
    for r in rows:
        by_tp.setdefault(TopicPartition(r["topic"], r["partition"]), []).append(r)
    out = {tp: fold(tp, s, e, by_tp.pop(tp, [])) for tp, (s, e) in ranges.items()}
    if by_tp:
        raise ValueError(f"records of {len(by_tp)} partitions that were not asked for")
    log.info(
        "erasure scan on Spark of %d partitions for %d digests: %d records examined, %d matching",
        len(out),
        len(matcher),
        sum(s.examined for s in out.values()),
        sum(s.matches for s in out.values()),
    )
    return out
