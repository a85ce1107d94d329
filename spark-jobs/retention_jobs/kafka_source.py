"""Record scans through Spark's own Kafka source (spark-sql-kafka-0-10), aggregated in
Spark SQL: what a cut removes that a group has not read, and the tombstone inventory of
compacted topics (and record sizes, which the plan job samples in Python instead).

Every range is read by one batch query (`assign` with per-partition starting and ending
offsets) through the connector's DataSource V2 reader, split into a whole number of tasks
per core (`task_records`), with the records never leaving the JVM: only the aggregates
reach Python. The few keys shown beside what a cut removes unread are read meanwhile
by the Python reader, at each range's start. The jars come from
spark-jobs/pom.xml (`make setup`, the image) through KAFKA_RETENTION_SPARK_JARS.

Where this source cannot serve, the scans in `scans.py` (confluent-kafka in Python
tasks) still do:
- short ranges (`long`): the source's cost is a task and a consumer per partition, so a
  few records on each of thousands of partitions (the size sample at every log start,
  most unconsumed ranges of a policy that keeps up) read far faster batched in Python;
- a group's time lag wants the first record at or after an offset: one seek and one
  record per partition, which a batch query over ranges cannot do cheaply;
- a connection whose librdkafka properties have no Java equivalent here (`java_options`
  says which), or a session started without the jars.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_retention.adapters.kafka_records import RECORD_OVERHEAD_BYTES
from kafka_retention.core.java_client import Unmappable, java_properties
from kafka_retention.core.plan_request import Connection
from retention_jobs import schemas
from retention_jobs.scans import first_keys

log = logging.getLogger(__name__)


def java_options(conn: Connection, uncommitted: bool = False) -> dict[str, str]:
    """The source's `kafka.*` options for a connection given as librdkafka properties
    (what the operator resolves from spec.cluster). Raises Unmappable naming the first
    property with no Java equivalent. `uncommitted`: aborted transactions' records too
    (an erasure scan: they stay in the log, key and all, until cleaned)."""
    # librdkafka reads committed records only by default; the Java client does not. Set
    # last: no client property may override what the scan must read (an erasure scan
    # that skipped aborted records would miss keys they hold).
    return {
        **{
            f"kafka.{key}": value
            for key, value in java_properties(conn.bootstrap_servers, conn.client_config).items()
        },
        "kafka.isolation.level": "read_uncommitted" if uncommitted else "read_committed",
    }


def source_missing(spark: SparkSession) -> str | None:
    """Why Spark finds no "kafka" data source (spark.jars in local mode, Spark's jars
    directory in the image), looked up as a query would look it up; None when it finds
    one. "not installed" only when Spark says so: a jar that fails to load names its own
    error, which a user would otherwise chase as a missing jar."""
    jvm: Any = spark.sparkContext._jvm
    try:
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            "kafka", spark._jsparkSession.sessionState().conf()
        )
    except Exception as err:  # py4j's Py4JJavaError, with the Java exception's text
        text = str(err)
        if any(mark in text for mark in _NOT_FOUND):
            return "Spark's Kafka source is not installed"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        # py4j's text: "An error occurred while calling ...", then ": " and the Java
        # exception, then its stack.
        java = next((line[2:] for line in lines if line.startswith(": ")), None)
        return f"looking up Spark's Kafka source failed: {java or (lines or [repr(err)])[0]}"
    return None


# How Spark says it has no such data source (its error class, and the message's words).
_NOT_FOUND = (
    "DATA_SOURCE_NOT_FOUND",
    "Failed to find data source",
    "Failed to find the data source",
)


def has_source(spark: SparkSession) -> bool:
    return source_missing(spark) is None


# The connector spark-jobs/pom.xml collects: 4.0.0 is the newest the reachable Maven
# repository serves whole. Built for Spark 4.0, it names Spark's log keys as 4.0's Scala
# objects; Spark 4.1 made them a Java enum, so on a later Spark every line it logs throws
# NoClassDefFoundError, and it logs, eagerly, at every offset gap (compaction, transaction
# markers, a log start moved by retention): tasks would fail exactly on the topics a
# retention tool reads. The log keys bridge (spark-jobs/log_keys_bridge.py, built beside
# the jars) gives it those classes back.
CONNECTOR_VERSION = "4.0.0"
# One of the classes the bridge provides: loadable means the bridge is on the class path.
BRIDGE_PROBE = "org.apache.spark.internal.LogKeys$OFFSET$"


def matches(spark_version: str, connector: str = CONNECTOR_VERSION) -> bool:
    """A connector is built for the Spark of the same major.minor."""
    return spark_version.split(".")[:2] == connector.split(".")[:2]


def _loadable(spark: SparkSession, name: str) -> bool:
    """The class loads from the session's class path (where the source's jars are)."""
    jvm: Any = spark.sparkContext._jvm
    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(name, False, loader)
    except Exception:  # py4j's ClassNotFoundException
        return False
    return True


def bridged(spark: SparkSession) -> bool:
    """The log keys bridge is on the session's class path."""
    return _loadable(spark, BRIDGE_PROBE)


# The connector's DataSource V2 batch reader names this object where Spark 4.0 had it
# (the bridge gives it back on a later Spark). That reader makes Spark's rows straight
# from the records; the V1 relation Spark picks by default makes them, turns them into
# external Rows and back (measured: a 1M-record read 2.60 -> 2.34 s).
V2_PROBE = "org.apache.spark.sql.execution.streaming.StreamExecution$"
_V1_SOURCES = "spark.sql.sources.useV1SourceList"


def _read_with_v2(spark: SparkSession) -> None:
    """Have the session read "kafka" through the V2 reader when its classes load: the
    choice is the session's (Spark has no per-read option), made again on each read as
    it costs two calls into the JVM."""
    # Read without a default of ours: unset, the conf answers with Spark's own list.
    current = [s for s in (spark.conf.get(_V1_SOURCES) or "").split(",") if s]
    if "kafka" in current and _loadable(spark, V2_PROBE):
        spark.conf.set(_V1_SOURCES, ",".join(s for s in current if s != "kafka"))


def usable(spark: SparkSession, conn: Connection) -> bool:
    """The session has the source, built for its Spark or bridged to it, and the
    connection maps to Java properties."""
    missing = source_missing(spark)
    if missing is not None:
        log.warning("scans read records in Python: %s", missing)
        return False
    if not matches(spark.version) and not bridged(spark):
        log.warning(
            "scans read records in Python: Spark's Kafka source %s does not match Spark %s "
            "and the log keys bridge is not installed",
            CONNECTOR_VERSION,
            spark.version,
        )
        return False
    try:
        java_options(conn)
    except (Unmappable, ValueError) as err:
        log.warning("scans read records in Python: %s has no Java client equivalent", err)
        return False
    return True


Range = tuple[str, int, int, int]  # topic, partition, start, end (exclusive)

# The source runs (at least) one task with its own consumer per partition: about 0.3 s
# each on two loaded cores, measured planning 1,000 partitions that each had 20 records
# to sample (328 s against 3.4 s for the Python reader, which batches hundreds of
# partitions per task). It pays where ranges are long.
LONG_RANGE = 10_000


def long(ranges: Sequence[Range]) -> bool:
    """Ranges long enough on average for the source: else the Python reader serves."""
    span = sum(max(0, end - start) for _, _, start, end in ranges)
    return bool(ranges) and span >= LONG_RANGE * len(ranges)


# A task reads at least this many records: below it, the consumer and connection a task
# costs outweigh spreading the read.
MIN_TASK_RECORDS = 100_000


def task_records(sizes: Sequence[int], cores: int) -> int | None:
    """The most records one task reads (the source's maxRecordsPerPartition, which splits
    a longer range into equal parts), chosen so the ranges make a whole number of tasks
    per core: one task a partition, 3 partitions on 2 cores, leaves a core idle while the
    third runs alone (measured on 1M records: a third of the read). The fewest such tasks
    of at least MIN_TASK_RECORDS; None (one task a partition) when none is found."""
    span, cores = sum(sizes), max(1, cores)
    for tasks in range(cores, 4 * cores + 1):
        most = -(-span // tasks)
        if most < MIN_TASK_RECORDS:
            break
        if sum(-(-size // most) for size in sizes) % cores == 0:
            return most
    return None


def read_ranges(
    spark: SparkSession, conn: Connection, ranges: Sequence[Range], uncommitted: bool = False
) -> DataFrame:
    """The records of each [start, end), one row each: topic, partition, offset, key,
    isTombstone, timestampMs and storedBytes (key, value, headers and a fixed overhead,
    as adapters.kafka counts them). Empty ranges are left out; a range that retention
    has since shortened reads what is left (failOnDataLoss off). `uncommitted`: records
    of open and aborted transactions too (java_options)."""
    wanted: dict[str, dict[str, tuple[int, int]]] = {}
    for topic, partition, start, end in ranges:
        if end > start:
            wanted.setdefault(topic, {})[str(partition)] = (start, end)
    if not wanted:
        return spark.createDataFrame(
            [],
            "topic string, partition int, offset long, key binary, isTombstone boolean, "
            "timestampMs long, storedBytes long",
        )
    assign = {t: [int(p) for p in parts] for t, parts in wanted.items()}
    starts = {t: {p: se[0] for p, se in parts.items()} for t, parts in wanted.items()}
    ends = {t: {p: se[1] for p, se in parts.items()} for t, parts in wanted.items()}
    most = task_records(
        [end - start for parts in wanted.values() for start, end in parts.values()],
        spark.sparkContext.defaultParallelism,
    )
    _read_with_v2(spark)
    reader = spark.read.format("kafka")
    for key, value in java_options(conn, uncommitted).items():
        reader = reader.option(key, value)
    if most is not None:
        reader = reader.option("maxRecordsPerPartition", str(most))
    raw = (
        reader.option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(starts))
        .option("endingOffsets", json.dumps(ends))
        .option("failOnDataLoss", "false")
        .option("includeHeaders", "true")
        .load()
    )
    size = (
        F.coalesce(F.length("key"), F.lit(0))
        + F.coalesce(F.length("value"), F.lit(0))
        + _header_bytes(F.col("headers"))
        + F.lit(RECORD_OVERHEAD_BYTES)
    )
    return raw.select(
        "topic",
        "partition",
        "offset",
        "key",
        F.col("value").isNull().alias("isTombstone"),
        F.unix_millis("timestamp").alias("timestampMs"),
        size.cast("long").alias("storedBytes"),
    )


def _header_bytes(headers: Column) -> Column:
    """The bytes of a record's header keys and values. Each side is joined into one string
    and measured (array_join drops null values, as a null value has no bytes; a binary
    value cast to a string keeps its bytes): expressions Spark compiles with the rest of
    the stage, where a higher-order aggregate over the array would be interpreted record
    by record (measured: 0.5 s of a 3.5 s scan of 1M records)."""
    keys = F.octet_length(F.array_join(headers.getField("key"), ""))
    values = F.octet_length(F.array_join(headers.getField("value").cast("array<string>"), ""))
    return F.coalesce(keys, F.lit(0)) + F.coalesce(values, F.lit(0))


def average_sizes(
    spark: SparkSession, conn: Connection, items: Sequence[Range], sample: int
) -> DataFrame:
    """schemas.SIZES: average stored bytes of the first `sample` records at each start."""
    ranges = [(t, p, start, min(end, start + sample)) for t, p, start, end in items]
    found = (
        read_ranges(spark, conn, ranges)
        .groupBy("topic", "partition")
        .agg(F.avg("storedBytes").alias("avgRecordBytes"))
    )
    asked = spark.createDataFrame([(t, p) for t, p, _, _ in items], "topic string, partition int")
    return asked.join(found, ["topic", "partition"], "left").select(
        "topic", "partition", "avgRecordBytes"
    )


def _smallest(value: Column, order: Column, k: int, empty: str) -> Column:
    """The `value`s of the k smallest `order`s in the group (a null order is left out),
    ascending: one bounded heap a group, in the same pass as the counts (Spark 4.2's
    min_by with k), where a window would sort every record of the range."""
    if k <= 0:
        return F.array().cast(empty)
    return F.coalesce(F.min_by(value, order, k), F.array().cast(empty))


def unconsumed(
    spark: SparkSession,
    conn: Connection,
    items: Sequence[tuple[str, str, int, str, int, int]],
    key_sample: int,
) -> DataFrame:
    """`policy string, {schemas.UNCONSUMED}` for (policy, topic, partition, group, from,
    to): records in [from, to) a group has not read, their bytes, and the first keys.

    One read of every partition asked (over the union of its ranges), aggregated per
    distinct range in the same pass: count and bytes. The first key_sample records of
    each range (by offset; gaps from compaction or transaction markers simply leave the
    next records in) are read meanwhile by the Python reader, a few records at each
    start (scans.first_keys): chosen in Spark they would need an object aggregate, which
    also takes the counts out of compiled code (measured: 0.3-0.5 s of a 3 s scan of 1M
    records)."""
    # Policies and groups often ask for the same range of a partition: each distinct
    # range is counted once, and a partition asked for one range only is read exactly
    # that far, with no join to find which range a record falls in.
    ranges = sorted({(t, p, lo, hi) for _, t, p, _, lo, hi in items})
    by_partition: dict[tuple[str, int], tuple[int, int]] = {}
    for topic, partition, lo, hi in ranges:
        have = by_partition.get((topic, partition))
        by_partition[(topic, partition)] = (
            (lo, hi) if have is None else (min(have[0], lo), max(have[1], hi))
        )
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="key-sample") as pool:
        sampled = pool.submit(first_keys, conn, ranges, key_sample)
        records = read_ranges(
            spark, conn, [(t, p, lo, hi) for (t, p), (lo, hi) in by_partition.items()]
        )
        tp = ["topic", "partition"]
        if len(by_partition) == len(ranges):
            within, key = records, tp
        else:
            asked = spark.createDataFrame(ranges, "topic string, partition int, lo long, hi long")
            within = records.join(F.broadcast(asked), tp).where(
                (F.col("offset") >= F.col("lo")) & (F.col("offset") < F.col("hi"))
            )
            key = [*tp, "lo", "hi"]
        found = {
            (
                r.topic,
                r.partition,
                *(by_partition[(r.topic, r.partition)] if len(key) == 2 else (r.lo, r.hi)),
            ): r
            for r in within.groupBy(*key)
            .agg(F.count(F.lit(1)).alias("records"), F.sum("storedBytes").alias("bytes"))
            .collect()
        }
        samples = sampled.result()
    out = []
    for item in items:
        at = (*item[1:3], *item[4:6])
        r = found.get(at)
        out.append(
            (*item[:4], r["records"] if r else 0, r["bytes"] if r else 0, samples.get(at, []))
        )
    return spark.createDataFrame(out, f"policy string, {schemas.UNCONSUMED}")


def tombstones(
    spark: SparkSession, conn: Connection, items: Sequence[Range], oldest_kept: int
) -> DataFrame:
    """schemas.TOMBSTONES for (topic, partition, log start, end): records read,
    tombstones, their oldest and newest timestamps, and the oldest few, oldest first."""
    records = read_ranges(spark, conn, items)
    tp = ["topic", "partition"]
    tombstone = F.col("isTombstone")
    # One pass: the counts and the oldest few (by time, then offset) together.
    scanned = records.groupBy(*tp).agg(
        F.count(F.lit(1)).alias("recordsRead"),
        F.count(F.when(tombstone, True)).alias("tombstones"),
        F.min(F.when(tombstone, F.col("timestampMs"))).alias("oldestTombstoneMs"),
        F.max(F.when(tombstone, F.col("timestampMs"))).alias("newestTombstoneMs"),
        _smallest(
            F.struct("offset", "timestampMs"),
            F.when(tombstone, F.struct("timestampMs", "offset")),
            oldest_kept,
            "array<struct<offset:long,timestampMs:long>>",
        ).alias("oldestTombstones"),
    )
    # A partition with no record in range has no row: filled in here, on a few rows, as
    # a join in Spark cost a sort-merge join and 0.25 s of a 3 s scan.
    found = {(r.topic, r.partition): r for r in scanned.collect()}
    out = []
    for topic, partition, _, _ in items:
        r = found.get((topic, partition))
        out.append(
            (topic, partition, 0, 0, None, None, [])
            if r is None
            else (
                topic,
                partition,
                r.recordsRead,
                r.tombstones,
                r.oldestTombstoneMs,
                r.newestTombstoneMs,
                [(o.offset, o.timestampMs) for o in r.oldestTombstones],
            )
        )
    return spark.createDataFrame(out, schemas.TOMBSTONES)
