"""The plan job: extract facts on executors -> transform with the planning core -> load.

`run(spark, request)` is what the operator's local launcher calls on its long-lived
SparkSession; `main()` is the spark-submit entry point (request JSON in, JSON lines out).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from kafka_retention.adapters import kube_clusters
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kafka_groups import COMMITTED_PER_REQUEST
from kafka_retention.core import plan_lines
from kafka_retention.core import topics as topic_rules
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.core.plan_request import Connection, PlanRequest
from kafka_retention.core.plan_row import PlanRow, TombstoneRow
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.specs import ClusterRef
from kafka_retention.core.strimzi import StrimziRef
from retention_jobs import extract, kafka_source, scans, schemas, sinks, transforms

log = logging.getLogger(__name__)

# Partitions a fact-reading task asks about: at least enough that a task's requests
# (ListOffsets, one ListConsumerGroupOffsets a group) are worth a client, at most what one
# commit request carries (kafka.COMMITTED_PER_REQUEST), and otherwise two tasks a core.
MIN_PARTITIONS_PER_TASK = 500
MAX_PARTITIONS_PER_TASK = COMMITTED_PER_REQUEST
Progress = Callable[[str], None]


def fact_tasks(partitions: int, cores: int) -> int:
    """How many tasks read the facts of `partitions` partitions on `cores` cores."""
    if partitions <= 0:
        return 1
    per_task = math.ceil(partitions / max(1, 2 * cores))
    per_task = min(MAX_PARTITIONS_PER_TASK, max(MIN_PARTITIONS_PER_TASK, per_task))
    return math.ceil(partitions / per_task)


def _quiet(_: str) -> None:
    pass


def run(spark: SparkSession, request: PlanRequest, progress: Progress = _quiet) -> PolicyPlan:
    """The plan of a request of one policy (the `plan` command, tests)."""
    (result,) = run_batch(spark, request, progress).values()
    return result


@dataclass
class _Topics:
    """What the cluster says about the union of the policies' topics."""

    selected: dict[str, list[str]]  # policy id -> topics it matches
    partitions: dict[str, list[int]]  # every topic that can be read
    deletable: list[str]  # cleanup.policy includes delete
    compacted: list[str]
    delete_retention: list[tuple[str, int]]
    problems: dict[str, str]  # topic -> why it is not planned


def _read_topics(admin: KafkaAdmin, request: PlanRequest) -> _Topics:
    names = admin.topic_names()
    selected = {p.id: p.topics.select(names) for p in request.policies}
    union = sorted({t for topics in selected.values() for t in topics})
    configs: dict[str, Mapping[str, str] | str] = {}
    for topic, config in admin.topic_configs(union).items():
        configs[topic] = str(config) if isinstance(config, KafkaFailure) else config
    # Topics with an empty cleanup.policy take DeleteRecords from Kafka 4.2 (KIP-1161):
    # what the cluster runs is read only when such a topic is selected.
    features = admin.cluster_features() if topic_rules.has_empty_policy(configs.values()) else None
    empty_allowed = features is not None and features.deletes_with_empty_cleanup_policy()
    classes = topic_rules.classify_topics(configs, empty_allowed)
    problems, deletable, compacted = classes.problems, classes.deletable, classes.compacted
    delete_retention = sorted(classes.delete_retention_ms.items())
    partitions: dict[str, list[int]] = {}
    for topic, found in admin.topic_partitions(sorted(set(deletable) | set(compacted))).items():
        if isinstance(found, KafkaFailure):
            if found.retriable:
                raise KafkaUnavailable(str(found))
            problems[topic] = str(found)
        else:
            partitions[topic] = found
    return _Topics(selected, partitions, deletable, compacted, delete_retention, problems)


def run_batch(
    spark: SparkSession, request: PlanRequest, progress: Progress = _quiet
) -> dict[str, PolicyPlan]:
    """Plan every policy of the request in one job: offsets and committed offsets are read
    once over the union of their partitions, then each policy's rules cut its own rows."""
    conn = request.connection
    admin = KafkaAdmin(conn.bootstrap_servers, conn.client_config)
    topics = _read_topics(admin, request)
    sc = spark.sparkContext
    planned_topics = [t for t in topics.deletable if t in topics.partitions]
    tps = [(t, p) for t in planned_topics for p in topics.partitions[t]]
    groups = list(request.groups())
    # Each group's type, read once here for the status; the executors read positions
    # through the same adapter call, which finds the type again for itself.
    no_partitions: dict[str, list[TopicPartition]] = {g: [] for g in groups}
    types = {g: str(read.type) for g, read in admin.group_positions(no_partitions).items()}
    progress(
        f"{len(request.policies)} policies, {len(planned_topics)} topics, "
        f"{len(tps)} partitions to plan, {len(groups)} groups"
    )
    # Each group's commits are read on the partitions of the policies that name it.
    groups_of_topic: dict[str, set[str]] = {}
    membership: list[tuple[str, str]] = []
    for policy in request.policies:
        mine = [t for t in topics.selected[policy.id] if t in planned_topics]
        membership += [(policy.id, t) for t in mine]
        for t in mine:
            groups_of_topic.setdefault(t, set()).update(policy.rules.groups())
    read = partial(
        extract.read_facts,
        conn=conn,
        times=request.lookup_times(),
        groups_of_topic={t: sorted(g) for t, g in groups_of_topic.items()},
    )
    slices = fact_tasks(len(tps), sc.defaultParallelism)
    read_facts = sc.parallelize(tps, slices).mapPartitions(read).toDF(schemas.FACTS)
    members = spark.createDataFrame(membership, "policy string, topic string")
    facts = read_facts.join(F.broadcast(members), "topic")
    rules = {p.id: p.rules for p in request.policies}
    plan = transforms.plan_policies(facts, rules, request.now_ms).cache()
    progress("reading offsets and committed offsets on executors; computing cuts")
    to_size = sorted(
        {
            (r.topic, r.partition, r.logStartOffset, r.highWatermark)
            for r in plan.where("recordsToDelete > 0").collect()
        }
    )
    with scan_deadline(spark, request.scans.time_limit_s) as deadline:
        progress(f"sampling record sizes at the log start of {len(to_size)} partitions")
        # A few records at each log start: bounded reads, batched per task
        # (kafka_source.long).
        sizes = _scan(
            spark,
            to_size,
            partial(scans.average_sizes, conn=conn, sample=request.scans.size_sample),
            schemas.SIZES,
        )
        plan = transforms.with_bytes_estimate(plan, sizes)
        if groups and (request.scans.time_lag or request.scans.unconsumed):
            plan = _group_scans(spark, request, plan, progress)

        # Typed once, here: past this line a row is a PlanRow (its columns are its fields).
        rows = [_plan_row(r) for r in plan.orderBy("topic", "partition").collect()]
        tombstones: list[TombstoneRow] = []
        if request.scans.tombstones and topics.compacted:
            deadline.check()
            tombstones = _tombstones(spark, request, admin, topics, progress)
    progress(f"planned {len(rows)} rows")
    out: dict[str, PolicyPlan] = {}
    for policy in request.policies:
        matched = set(topics.selected[policy.id])
        out[policy.id] = PolicyPlan(
            [row for pid, row in rows if pid == policy.id],
            {t: why for t, why in topics.problems.items() if t in matched},
            [r for r in tombstones if r.topic in matched],
            {g: types[g] for g in policy.rules.groups() if g in types},
        )
    return out


def _plan_row(collected: Row) -> tuple[str, PlanRow]:
    """A collected plan row: the policy it belongs to, and the row."""
    item = collected.asDict(recursive=True)
    return item.pop("policy"), PlanRow.from_json(item)


class ScanTimeoutError(RuntimeError):
    """A batch's record scans ran past Scans.time_limit_s and were cancelled: the plan
    ends (PlanFailed in the operator) and nothing is deleted."""


class ScanDeadline:
    """Cancels the Spark jobs this thread starts within it once `seconds` have passed.

    Jobs are tagged (job tags are per thread, so a batch of another cluster planned at
    the same time in the same session is not touched) and cancelled with their tasks
    interrupted, Python workers included; whatever the cancelled job raises, the block
    ends in ScanTimeoutError."""

    def __init__(self, spark: SparkSession, seconds: float) -> None:
        self.seconds = seconds
        self.sc = spark.sparkContext
        self.tag = f"kafka-retention-scans-{uuid.uuid4().hex}"
        self.expired = threading.Event()
        self._stopped = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self.sc.setInterruptOnCancel(True)
        self.sc.addJobTag(self.tag)
        self._watcher.start()

    def stop(self) -> None:
        self._stopped.set()
        self._watcher.join(timeout=10)
        self.sc.removeJobTag(self.tag)
        self.sc.setInterruptOnCancel(False)

    def _watch(self) -> None:
        if self._stopped.wait(self.seconds):
            return
        self.expired.set()
        # Cancelled again until the block ends: a job whose submission raced the expiry
        # (on a loaded machine a job can take seconds to start) would otherwise run to
        # its end; make test's first run of this caught one running for five minutes.
        while True:
            try:
                self.sc.cancelJobsWithTag(self.tag)
            except Exception:  # the session is stopping: nothing left to cancel
                log.debug("cancelling %s failed", self.tag, exc_info=True)
            if self._stopped.wait(0.5):
                return

    def check(self) -> None:
        """Raise once the time is up: a job started now would only be cancelled."""
        if self.expired.is_set():
            raise self.timed_out()

    def timed_out(self) -> ScanTimeoutError:
        return ScanTimeoutError(
            f"the record scans ran past their time limit of {self.seconds:g}s and were "
            "cancelled (a tombstone inventory over many compacted topics?); nothing was "
            "deleted"
        )


@contextmanager
def scan_deadline(spark: SparkSession, seconds: float) -> Iterator[ScanDeadline]:
    """A ScanDeadline over the block; the block ends in ScanTimeoutError once it has
    passed, whatever a cancelled job raised."""
    deadline = ScanDeadline(spark, seconds)
    deadline.start()
    try:
        yield deadline
    except Exception as err:
        if deadline.expired.is_set():
            raise deadline.timed_out() from err
        raise
    finally:
        deadline.stop()
    deadline.check()


def _group_scans(
    spark: SparkSession, request: PlanRequest, plan: DataFrame, progress: Progress
) -> DataFrame:
    conn = request.connection
    per_group = transforms.group_rows(plan)
    if not request.scans.time_lag:
        # Only the unread ranges a cut removes are scanned then: only their rows leave the
        # executors (a run over 20,000 partitions of two groups collected 40,000 rows, for
        # nothing, in 3.7 of its 23 s).
        per_group = per_group.where(F.col("unconsumedToDelete") > 0)
    group_rows = per_group.collect()
    # A time lag belongs to a partition and group, whatever policy asks for it.
    lag_items = sorted(
        {
            (g.topic, g.partition, g.group, g.committedOffset, g.highWatermark)
            for g in group_rows
            if request.scans.time_lag and g.committedOffset is not None
        }
    )
    lost_items = [
        (
            g.policy,
            g.topic,
            g.partition,
            g.group,
            max(g.logStartOffset, g.committedOffset or 0),
            g.targetOffset,
        )
        for g in group_rows
        if request.scans.unconsumed and g.unconsumedToDelete > 0
    ]
    if not request.scans.time_lag and not lost_items:
        # Nothing to fold in: the operator reads the rows as the in-process planner writes
        # them, without the scans' fields.
        return plan
    progress(
        f"scanning records: {len(lag_items)} group time lags, {len(lost_items)} unconsumed ranges"
    )
    lags = _scan(
        spark,
        lag_items,
        partial(scans.time_lags, conn=conn, now_ms=request.now_ms),
        schemas.LAGS,
    )
    spans = [(t, p, lo, hi) for _, t, p, _, lo, hi in lost_items]
    if kafka_source.long(spans) and kafka_source.usable(spark, conn):
        lost = kafka_source.unconsumed(spark, conn, lost_items, request.scans.key_sample)
    else:
        lost = _scan(
            spark,
            lost_items,
            partial(_unconsumed_per_policy, conn=conn, key_sample=request.scans.key_sample),
            f"policy string, {schemas.UNCONSUMED}",
        )
    return transforms.with_group_scans(plan, lags, lost)


def _unconsumed_per_policy(
    items: Iterable[tuple[str, str, int, str, int, int]], conn: Connection, key_sample: int
) -> Iterator[tuple[Any, ...]]:
    """scans.unconsumed, per policy: two policies may cut one partition differently."""
    by_policy: dict[str, list[tuple[str, int, str, int, int]]] = {}
    for policy, topic, partition, group, start, end in items:
        by_policy.setdefault(policy, []).append((topic, partition, group, start, end))
    for policy, ranges in by_policy.items():
        for row in scans.unconsumed(ranges, conn, key_sample):
            yield (policy, *row)


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
    topics: _Topics,
    progress: Progress,
) -> list[TombstoneRow]:

    tps = [TopicPartition(t, p) for t in topics.compacted for p in topics.partitions.get(t, [])]
    starts, ends = admin.log_bounds(tps)
    items: list[tuple[str, int, int, int]] = []
    for tp in tps:
        start, end = starts.get(tp), ends.get(tp)
        if isinstance(start, int) and isinstance(end, int):
            items.append((tp.topic, tp.partition, start, end))
    progress(f"scanning {len(items)} compacted partitions for tombstones")
    conn, kept = request.connection, request.scans.tombstone_sample
    if kafka_source.long(items) and kafka_source.usable(spark, conn):
        scanned = kafka_source.tombstones(spark, conn, items, kept)
    else:
        scanned = _scan(
            spark, items, partial(scans.tombstones, conn=conn, oldest_kept=kept), schemas.TOMBSTONES
        )
    retention = spark.createDataFrame(
        topics.delete_retention, "topic string, deleteRetentionMs long"
    )
    aged = transforms.tombstone_ages(scanned, retention, request.now_ms)
    return [
        TombstoneRow.from_json(r.asDict(recursive=True))
        for r in aged.orderBy("topic", "partition").collect()
    ]


def load(result: PolicyPlan, output: Path) -> None:
    """JSON lines: one plan row per partition, then skipped topics and tombstone rows."""
    output.write_text(
        plan_lines.to_json_lines(
            result.rows, result.skipped, result.tombstones, group_types=result.group_types
        )
    )


def batch_lines(results: dict[str, PolicyPlan]) -> str:
    """A batch's plans as JSON lines, each line naming its policy (plan_lines.by_policy)."""
    return "".join(
        plan_lines.to_json_lines(
            r.rows, r.skipped, r.tombstones, policy=pid, group_types=r.group_types
        )
        for pid, r in sorted(results.items())
    )


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
        help="Secret (in --namespace) of client properties (librdkafka or Java names)",
    )
    parser.add_argument(
        "--strimzi",
        metavar="JSON",
        help="spec.cluster.strimzi of the batch (a StrimziRef as JSON), resolved here",
    )
    parser.add_argument(
        "--owner-references",
        type=json.loads,
        default=None,
        help="ownerReferences (a JSON list) for the sink ConfigMaps",
    )
    args = parser.parse_args(argv)
    request = PlanRequest.from_json(_request_text(args.request, args.namespace))
    if args.client_config_secret or args.strimzi:
        # The operator put no secret into the request: the driver reads them itself.
        cluster = ClusterRef(
            request.connection.bootstrap_servers,
            args.client_config_secret,
            StrimziRef(**json.loads(args.strimzi)) if args.strimzi else None,
        )
        request = replace(
            request, connection=Connection(*kube_clusters.resolve_cluster(args.namespace, cluster))
        )
    # The image carries the Kafka source's jars in Spark's own jars directory, so the
    # driver and executor pods have them on the class path from the start.
    spark = SparkSession.builder.appName("kafka-retention-plan").getOrCreate()
    try:
        results = run_batch(
            spark, request, progress=lambda m: print(m, file=sys.stderr, flush=True)
        )
    finally:
        spark.stop()
    payload = batch_lines(results)
    if args.output is not None:
        args.output.write_text(payload)
    else:
        sinks.write_configmaps(args.sink_configmaps, args.namespace, payload, args.owner_references)
    return 0


if __name__ == "__main__":
    sys.exit(main())
