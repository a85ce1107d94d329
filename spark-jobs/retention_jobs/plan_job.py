"""The plan job: extract facts on executors -> transform with the planning core -> load.

`run(spark, request)` is what the operator's local launcher calls on its long-lived
SparkSession; `main()` is the spark-submit entry point (request JSON in, JSON lines out).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from kafka_retention.adapters.kafka import KafkaAdmin, KafkaFailure, KafkaUnavailable
from kafka_retention.core import topics as topic_rules
from retention_jobs import extract, scans, schemas, sinks, transforms
from retention_jobs.request import Connection, PlanRequest

PARTITIONS_PER_TASK = 500
Progress = Callable[[str], None]


@dataclass
class PlanResult:
    rows: list[dict[str, Any]]
    # Topics matched but not planned, with the reason (compact-only, unreadable config).
    skipped: dict[str, str] = field(default_factory=dict)
    tombstones: list[dict[str, Any]] = field(default_factory=list)


def _quiet(_: str) -> None:
    pass


def run(spark: SparkSession, request: PlanRequest, progress: Progress = _quiet) -> PlanResult:
    conn = request.connection
    admin = KafkaAdmin(conn.bootstrap_servers, conn.client_config)
    selected = request.topics.select(admin.topic_names())
    configs = admin.topic_configs(selected)
    skipped: dict[str, str] = {}
    delete_topics, compacted = [], []
    delete_retention: list[tuple[str, int]] = []
    for topic in selected:
        config = configs.get(topic)
        if isinstance(config, KafkaFailure) or config is None:
            skipped[topic] = f"topic config unreadable: {config}"
            continue
        if topic_rules.is_compacted(config):
            compacted.append(topic)
            delete_retention.append((topic, topic_rules.delete_retention_ms(config)))
        refusal = topic_rules.delete_refusal(topic, config)
        if refusal is None:
            delete_topics.append(topic)
        else:
            skipped[topic] = refusal
    parts = admin.topic_partitions(delete_topics + [t for t in compacted if t not in delete_topics])
    partitions: dict[str, list[int]] = {}
    for topic, found in parts.items():
        if isinstance(found, KafkaFailure):
            if found.retriable:
                raise KafkaUnavailable(str(found))
            skipped[topic] = str(found)
        else:
            partitions[topic] = found
    sc = spark.sparkContext
    tps = [(t, p) for t in delete_topics if t in partitions for p in partitions[t]]
    progress(
        f"{len(selected)} topics matched, {len(tps)} partitions to plan, "
        f"{len(request.rules.groups())} groups"
    )

    times = request.rules.lookup_times(request.now_ms)
    slices = max(1, math.ceil(len(tps) / PARTITIONS_PER_TASK))
    offsets = (
        sc.parallelize(tps, slices)
        .mapPartitions(partial(extract.read_offsets, conn=conn, times=times))
        .toDF(schemas.OFFSETS)
    )
    groups = list(request.rules.groups())
    planned = {t: partitions[t] for t in delete_topics if t in partitions}
    commits = (
        sc.parallelize(groups, max(1, len(groups)))
        .mapPartitions(partial(extract.read_commits, conn=conn, partitions=planned))
        .toDF(schemas.COMMITS)
    )
    plan = transforms.plan(
        transforms.facts(offsets, commits), request.rules, request.now_ms
    ).cache()
    progress("reading offsets and committed offsets on executors; computing cuts")
    to_size = [
        (r.topic, r.partition, r.logStartOffset, r.highWatermark)
        for r in plan.where("recordsToDelete > 0").collect()
    ]
    progress(f"sampling record sizes at the log start of {len(to_size)} partitions")
    sizes = _scan(
        spark,
        to_size,
        partial(scans.average_sizes, conn=conn, sample=request.scans.size_sample),
        schemas.SIZES,
    )
    plan = transforms.with_bytes_estimate(plan, sizes)

    if groups and (request.scans.time_lag or request.scans.unconsumed):
        group_rows = transforms.group_rows(plan).collect()
        lag_items = [
            (g.topic, g.partition, g.group, g.committedOffset, g.highWatermark)
            for g in group_rows
            if request.scans.time_lag and g.committedOffset is not None
        ]
        lost_items = [
            (
                g.topic,
                g.partition,
                g.group,
                max(g.logStartOffset, g.committedOffset or 0),
                g.targetOffset,
            )
            for g in group_rows
            if request.scans.unconsumed and g.unconsumedToDelete > 0
        ]
        progress(
            f"scanning records: {len(lag_items)} group time lags, "
            f"{len(lost_items)} unconsumed ranges"
        )
        lags = _scan(
            spark,
            lag_items,
            partial(scans.time_lags, conn=conn, now_ms=request.now_ms),
            schemas.LAGS,
        )
        lost = _scan(
            spark,
            lost_items,
            partial(scans.unconsumed, conn=conn, key_sample=request.scans.key_sample),
            schemas.UNCONSUMED,
        )
        plan = transforms.with_group_scans(plan, lags, lost)

    rows = [r.asDict(recursive=True) for r in plan.orderBy("topic", "partition").collect()]
    tombstones: list[dict[str, Any]] = []
    if request.scans.tombstones and compacted:
        tombstones = _tombstones(
            spark, request, admin, compacted, partitions, delete_retention, progress
        )
    progress(f"planned {len(rows)} partitions")
    return PlanResult(rows, skipped, tombstones)


def _scan(spark: SparkSession, items: list[Any], fn: Callable[..., Any], schema: str) -> DataFrame:
    """Spread scan items over tasks (one reader each) and collect them as a DataFrame."""
    if not items:
        return spark.createDataFrame([], schema)
    slices = min(len(items), max(1, spark.sparkContext.defaultParallelism * 2))
    return spark.sparkContext.parallelize(items, slices).mapPartitions(fn).toDF(schema)


def _tombstones(
    spark: SparkSession,
    request: PlanRequest,
    admin: KafkaAdmin,
    compacted: list[str],
    partitions: dict[str, list[int]],
    delete_retention: list[tuple[str, int]],
    progress: Progress,
) -> list[dict[str, Any]]:
    from kafka_retention.core.facts import TopicPartition

    tps = [TopicPartition(t, p) for t in compacted for p in partitions.get(t, [])]
    starts, ends = admin.offsets(tps, "earliest"), admin.offsets(tps, "latest")
    items = [
        (tp.topic, tp.partition, starts[tp], ends[tp])
        for tp in tps
        if isinstance(starts.get(tp), int) and isinstance(ends.get(tp), int)
    ]
    progress(f"scanning {len(items)} compacted partitions for tombstones")
    scanned = _scan(
        spark,
        items,
        partial(scans.tombstones, conn=request.connection, oldest_kept=request.scans.key_sample),
        schemas.TOMBSTONES,
    )
    retention = spark.createDataFrame(delete_retention, "topic string, deleteRetentionMs long")
    aged = transforms.tombstone_ages(scanned, retention, request.now_ms)
    return [r.asDict(recursive=True) for r in aged.orderBy("topic", "partition").collect()]


def load(result: PlanResult, output: Path) -> None:
    """JSON lines: one plan row per partition, then skipped topics and tombstone rows."""
    output.write_text(sinks.to_json_lines(result.rows, result.skipped, result.tombstones))


def _request_text(where: str, namespace: str | None) -> str:
    if where.startswith("configmap:"):
        if not namespace:
            raise SystemExit("--request configmap:NAME needs --namespace")
        return sinks.read_configmap_key(namespace, where.removeprefix("configmap:"), "request.json")
    return Path(where).read_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compute a retention plan (spark-submit).")
    parser.add_argument(
        "--request",
        required=True,
        help="PlanRequest JSON: a file, or configmap:NAME (key request.json in --namespace)",
    )
    out = parser.add_mutually_exclusive_group(required=True)
    out.add_argument("--output", type=Path, help="write JSON lines to this file")
    out.add_argument(
        "--sink-configmaps",
        metavar="RUN",
        help="write the plan as ConfigMaps RUN-plan-NNNN and RUN-plan",
    )
    parser.add_argument("--namespace", help="namespace of the sink ConfigMaps")
    parser.add_argument(
        "--client-config-secret",
        metavar="NAME",
        help="Secret (in --namespace) of librdkafka client properties",
    )
    parser.add_argument(
        "--owner-reference",
        type=json.loads,
        default=None,
        help="ownerReference (JSON) for the sink ConfigMaps",
    )
    args = parser.parse_args(argv)
    request = PlanRequest.from_json(_request_text(args.request, args.namespace))
    if args.client_config_secret:
        config = sinks.read_secret_data(args.namespace, args.client_config_secret)
        request = replace(
            request, connection=Connection(request.connection.bootstrap_servers, config)
        )
    spark = SparkSession.builder.appName("kafka-retention-plan").getOrCreate()
    try:
        result = run(spark, request, progress=lambda m: print(m, file=sys.stderr, flush=True))
    finally:
        spark.stop()
    if args.output is not None:
        load(result, args.output)
    else:
        payload = sinks.to_json_lines(result.rows, result.skipped, result.tombstones)
        sinks.write_configmaps(args.sink_configmaps, args.namespace, payload, args.owner_reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
