"""`make bench`, 100,000 partitions: a plan and purges on a larger cluster started for them.

The stack's three brokers serve about 20,000 partitions here: a broker keeps one file
open per partition, and a process on this machine may open 20,000 files (a hard limit
that raising needs a capability the machine does not give). So these rows run on a
cluster of BIG_BROKERS nodes (the stack's 3-node quorum layout plus broker-only nodes,
about 14,300 partitions each at 7), started here beside the stack and removed after,
as a real deployment would spread that many partitions over more brokers. The operator,
the API server and the node are the stack's.

One set of topics serves both: first the plan of one RetentionPolicy over every
partition (bench.planning: Spark job, in-process planner, kafka-consumer-groups x2),
then the purges (bench.purge_scale: RecordPurge, `kafka-retention purge`,
kafka-delete-records), BIG_RUNS runs of each tool. At this size one run of each purge
tool, with the record produced to every partition before it, takes minutes.
BENCH_BIG_PARTITIONS=0 leaves these rows out.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace

from bench import planning, purge_scale
from bench.common import RUN, Row, run_alone, say
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
# Every port of this cluster 10,000 below the stack's: under the kernel's ephemeral range
# (32768-60999), since it starts after the stack reserved its own ports there.
PORT_OFFSET = -10_000
# Creating 100,000 partitions and three records in each took 5-7 minutes here.
MAKE_WITHIN_S = 1500
WHERE = (
    f"; on a cluster of {BIG_BROKERS} brokers started for the {PARTITIONS:,}-partition rows "
    "(the stack's 3 hold about 20,000 here: one open file per partition, 20,000 per process)"
)


def bench_hundred_k(stack: Stack, _admin: AdminClient, run: str = RUN) -> list[Row]:
    if PARTITIONS <= 0:
        return []
    problem = _refusal()
    if problem:
        return [_skipped(problem)]
    cluster = KafkaCluster(
        stack.dev, "kafka-bench-big", port_offset=PORT_OFFSET, heap="1g", brokers=BIG_BROKERS
    )
    for port in (p for n in cluster.nodes for p in n.ports):
        holder = port_holder(port)
        if holder is not None:
            return [_skipped(f"port {port} is in use ({holder})")]
    shutil.rmtree(cluster.root, ignore_errors=True)
    say(f"starting {BIG_BROKERS} brokers for {PARTITIONS:,} partitions")
    rows: list[Row] = []
    try:
        cluster.prepare()
        cluster.start()
        _measure(stack, cluster, run, rows)
    except Exception as exc:  # the rows measured so far, and every other bench's, count
        say(f"{PARTITIONS:,} partitions failed: {exc!r}")
        rows.append(Row(f"{PARTITIONS:,} partitions", "-", "-", f"failed: {exc!r}" + WHERE))
    finally:
        # Quorum and brokers stop together: the brokers' controlled shutdown cannot
        # finish without the quorum, and their data is not kept.
        cluster.stop(patience=8)
        shutil.rmtree(cluster.root, ignore_errors=True)
    return rows


def _refusal() -> str:
    """Why these settings cannot make the rows ("" when they can)."""
    if PARTITIONS % planning.PER_TOPIC:
        return f"BENCH_BIG_PARTITIONS must be a multiple of {planning.PER_TOPIC}"
    if PARTITIONS > MAX_PLANNED_PARTITIONS:
        return f"a RecordPurge covers at most {MAX_PLANNED_PARTITIONS:,} partitions"
    if not 3 <= BIG_BROKERS < 100:  # node ids past 99 would take the controller ports
        return "BENCH_BIG_BROKERS must be from 3 to 99"
    return ""


def _skipped(why: str) -> Row:
    say(f"{PARTITIONS:,} partitions left out: {why}")
    return Row(f"{PARTITIONS:,} partitions", "-", "-", f"left out: {why}")


def _measure(stack: Stack, cluster: KafkaCluster, run: str, rows: list[Row]) -> None:
    """Appends each row to `rows` as soon as it is measured."""
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    prefix = f"big{PARTITIONS // 1000}k-{run}"
    say(f"creating {PARTITIONS:,} partitions, three records in each")
    names = planning.make_partitions(admin, bootstrap, prefix, PARTITIONS, MAKE_WITHIN_S)
    rows += _here(planning.rows([planning.measure(bootstrap, prefix, PARTITIONS)], []))
    tps = [(n, p) for n in names for p in range(planning.PER_TOPIC)]
    _cut_all(admin, tps)  # each timed purge then deletes the one record produced before it
    with purge_scale.purgers(stack, f"{run}-big") as tools:
        sized, profiled = purge_scale.purges_of(
            tools, cluster, admin, tps, 1, BIG_RUNS, warm_up=False, profile=PROFILE
        )
    if profiled:
        purge_scale.add_profile(sized[0], profiled)
    rows += _here(sized)


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
    """This benchmark alone: `PYTHONPATH=hack:.:spark-jobs .venv/bin/python -m bench.hundred_k`."""
    os.environ.setdefault("KAFKA_RETENTION_SPARK_JARS", str(paths.spark_kafka_jars()))
    return run_alone(bench_hundred_k)


if __name__ == "__main__":
    sys.exit(main())
