"""`make bench` on a larger cluster started for it: 100,000 partitions (a plan and purges)
and purges at replication factor 3 past 1,000 partitions.

The stack's three brokers serve about 20,000 partitions here: a broker keeps one file
open per partition (per replica), and a process on this machine may open 20,000 files (a
hard limit that raising needs a capability the machine does not give). So these rows run
on a cluster of BIG_BROKERS nodes (the stack's 3-node quorum layout plus broker-only
nodes: about 14,300 partitions each at 7 for 100,000), started here beside the stack and
removed after, as a real deployment would spread that many partitions over more brokers.
The operator, the API server and the node are the stack's.

One set of 100,000 partitions serves both: first the plan of one RetentionPolicy over
every partition (bench.planning: Spark job, in-process planner, kafka-consumer-groups
x2), then the purges (bench.purge_scale: RecordPurge, `kafka-retention purge`,
kafka-delete-records), BIG_RUNS runs of each tool: at this size one run of each, with
the record produced to every partition before it, takes minutes. Those topics then go,
and RF3_SIZES (BENCH_BIG_RF3_SIZES) are purged at replication factor 3 as purge_scale
does, BIG_RUNS runs each. BENCH_BIG_PARTITIONS=0 leaves the 100,000 rows out,
BENCH_BIG_RF3_SIZES= the others.

RF 3 stops at 10,000 by default: 30,000 replicas kept the 7 brokers' replication at a
load average above 20 on the 2 cores, one record to each partition took about a minute
to produce, and a run of the three tools about 3.5 minutes (tried, 2026-11-27: the
RecordPurge 15.9 s, `kafka-retention purge` 13.9 s, kafka-delete-records 16.5 s). 20,000
would double that; ask for it with BENCH_BIG_RF3_SIZES=10000,20000.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import replace
from functools import partial

from bench import planning, purge_scale
from bench.common import RUN, Row, drop_topics, run_alone, say
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from devstack import paths
from devstack.kafka import KafkaCluster
from devstack.stack import Stack, port_holder
from kafka_retention.services.purge.pipeline import MAX_PLANNED_PARTITIONS

PARTITIONS = int(os.environ.get("BENCH_BIG_PARTITIONS", "100000"))
BIG_BROKERS = int(os.environ.get("BENCH_BIG_BROKERS", "7"))
BIG_RUNS = int(os.environ.get("BENCH_BIG_RUNS", "1"))
PROFILE = os.environ.get("BENCH_BIG_PROFILE", "1") == "1"
RF3_SIZES = [int(s) for s in os.environ.get("BENCH_BIG_RF3_SIZES", "10000").split(",") if s]
# Every port of this cluster 10,000 below the stack's: under the kernel's ephemeral range
# (32768-60999), since it starts after the stack reserved its own ports there.
PORT_OFFSET = -10_000
# Creating 100,000 partitions and three records in each took 5-7 minutes here.
MAKE_WITHIN_S = 1500
WHERE = (
    f"; on a cluster of {BIG_BROKERS} brokers started for these rows (the stack's 3 hold "
    "about 20,000 partitions here: one open file per replica, 20,000 per process)"
)


def bench_big_cluster(stack: Stack, _admin: AdminClient, run: str = RUN) -> list[Row]:
    if PARTITIONS <= 0 and not RF3_SIZES:
        return []
    problem = _refusal()
    if problem:
        return [_skipped(problem)]
    rows: list[Row] = []
    try:
        with started(stack) as cluster, purge_scale.purgers(stack, f"{run}-big") as tools:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            parts = []
            if PARTITIONS > 0:
                hundred_k = partial(_hundred_k, tools, cluster, admin, run)
                parts.append((f"{PARTITIONS:,} partitions", hundred_k))
            parts += [
                (
                    f"{size:,} partitions (RF 3)",
                    partial(_replicated, tools, cluster, admin, run, size),
                )
                for size in RF3_SIZES
            ]
            for what, measure in parts:
                try:  # a failure becomes a row, and the next part still runs
                    measure(rows)
                except Exception as exc:
                    rows.append(_failed(what, exc))
    except PortTaken as exc:
        return [_skipped(str(exc))]
    except Exception as exc:  # the rows measured so far, and every other bench's, count
        rows.append(_failed(f"{BIG_BROKERS} brokers", exc))
    return rows


class PortTaken(Exception):
    """A port the big cluster needs is held by another process."""


@contextlib.contextmanager
def started(stack: Stack) -> Iterator[KafkaCluster]:
    """BIG_BROKERS brokers started beside the stack, stopped and removed after (also
    used by bench.footprint). Raises PortTaken before starting anything when one of
    their ports is in use."""
    cluster = KafkaCluster(
        stack.dev, "kafka-bench-big", port_offset=PORT_OFFSET, heap="1g", brokers=BIG_BROKERS
    )
    for port in (p for n in cluster.nodes for p in n.ports):
        holder = port_holder(port)
        if holder is not None:
            raise PortTaken(f"port {port} is in use ({holder})")
    shutil.rmtree(cluster.root, ignore_errors=True)
    say(f"starting {BIG_BROKERS} brokers")
    try:
        cluster.prepare()
        cluster.start()
        yield cluster
    finally:
        # Quorum and brokers stop together: the brokers' controlled shutdown cannot
        # finish without the quorum, and their data is not kept.
        cluster.stop(patience=8)
        shutil.rmtree(cluster.root, ignore_errors=True)


def _failed(what: str, exc: Exception) -> Row:
    say(f"{what} failed: {exc!r}")
    return Row(what, "-", "-", f"failed: {exc!r}" + WHERE)


def _refusal() -> str:
    """Why these settings cannot make the rows ("" when they can)."""
    if PARTITIONS % planning.PER_TOPIC or any(s % purge_scale.PER_TOPIC for s in RF3_SIZES):
        return f"every size must be a multiple of {planning.PER_TOPIC} partitions"
    if max([PARTITIONS, *RF3_SIZES]) > MAX_PLANNED_PARTITIONS:
        return f"a RecordPurge covers at most {MAX_PLANNED_PARTITIONS:,} partitions"
    if not 3 <= BIG_BROKERS < 100:  # node ids past 99 would take the controller ports
        return "BENCH_BIG_BROKERS must be from 3 to 99"
    return ""


def _skipped(why: str) -> Row:
    say(f"the {BIG_BROKERS}-broker rows left out: {why}")
    return Row(f"{BIG_BROKERS}-broker cluster rows", "-", "-", f"left out: {why}")


def _hundred_k(
    tools: purge_scale.Purgers, cluster: KafkaCluster, admin: AdminClient, run: str, rows: list[Row]
) -> None:
    """The plan, then the purges, of PARTITIONS partitions (RF 1); each row appended to
    `rows` as soon as it is measured. The topics go at the end."""
    bootstrap = cluster.bootstrap_servers
    prefix = f"big{PARTITIONS // 1000}k-{run}"
    say(f"creating {PARTITIONS:,} partitions, three records in each")
    names: list[str] = []
    try:
        names = planning.make_partitions(admin, bootstrap, prefix, PARTITIONS, MAKE_WITHIN_S)
        rows += _here(planning.rows([planning.measure(bootstrap, prefix, PARTITIONS)], []))
        tps = [(n, p) for n in names for p in range(planning.PER_TOPIC)]
        _cut_all(admin, tps)  # each timed purge then deletes the one record produced before it
        sized, profiled = purge_scale.purges_of(
            tools, cluster, admin, tps, 1, BIG_RUNS, warm_up=False, profile=PROFILE
        )
        if profiled:
            purge_scale.add_profile(sized[0], profiled)
        rows += _here(sized)
    finally:
        made = names or [f"{prefix}-{i:03d}" for i in range(PARTITIONS // planning.PER_TOPIC)]
        drop_topics(admin, made, settle=cluster)


def _replicated(
    tools: purge_scale.Purgers,
    cluster: KafkaCluster,
    admin: AdminClient,
    run: str,
    size: int,
    rows: list[Row],
) -> None:
    """purge_scale's runs of `size` partitions at replication factor 3."""
    say(f"purges of {size:,} partitions (RF 3) on {BIG_BROKERS} brokers")
    tps: list[tuple[str, int]] = []
    prefix = f"big{size // 1000}kr3-{run}"
    try:
        tps = purge_scale.make_topics(admin, prefix, size, 3)
        sized, _ = purge_scale.purges_of(
            tools, cluster, admin, tps, 3, BIG_RUNS, warm_up=False, profile=False
        )
        rows += _here(sized)
    finally:
        count, _ = purge_scale.layout(size)
        drop_topics(admin, [f"{prefix}-{i:03d}" for i in range(count)], settle=cluster)


def _here(rows: list[Row]) -> list[Row]:
    """The rows noted as measured on this cluster, and drawn as lines of their own."""
    for row in rows:
        row.note += WHERE
        row.points = tuple(
            replace(p, series=f"{p.series} ({BIG_BROKERS} brokers)") for p in row.points
        )
    return rows


def _cut_all(admin: AdminClient, tps: list[tuple[str, int]]) -> None:
    """The planning records deleted, untimed."""
    for i in range(0, len(tps), 10_000):
        chunk = [TopicPartition(t, p, -1) for t, p in tps[i : i + 10_000]]
        for f in admin.delete_records(chunk, request_timeout=300).values():
            f.result(timeout=300)


def main() -> int:
    """These rows alone: `PYTHONPATH=hack:.:spark-jobs .venv/bin/python -m bench.big_cluster`."""
    os.environ.setdefault("KAFKA_RETENTION_SPARK_JARS", str(paths.spark_kafka_jars()))
    return run_alone(bench_big_cluster)


if __name__ == "__main__":
    sys.exit(main())
