"""`make bench`, the operator's memory at a policy's size: the peak RSS of the operator's
process tree (Python, and Spark's JVM if it started) while it plans and applies one
RetentionPolicy (deleteConsumed by two groups that committed in every partition) over
SIZES partitions, planned in the operator process. The chart's memory request and limit
(charts/kafka-retention-operator/values.yaml) are set from these rows.

Each size gets an operator of its own (memory a process took stays with it), started
with --in-process-max-partitions at the largest size so that every size plans in
process; its RSS is read idle (IDLE_S after it is ready, before the policy), then every
SAMPLE_S from `kubectl apply` to the watch event of the run's completedAt (the peak is
the largest sample), and once more after. A Spark JVM in the tree during the run would
mean the plan went to Spark: the row then fails.

The partitions are bench.planning's (200 a topic, RF 1, three records each, the groups
at offsets 3 and 1: the run deletes one record a partition). Sizes up to STACK_MAX go on
the local stack; the stack's three brokers hold about 20,000 partitions (one open file
per replica, 20,000 per process: bench/big_cluster.py), so larger ones go on
big_cluster's brokers, started here for them. BENCH_FOOTPRINT_SIZES changes the sizes
(comma-separated); `PYTHONPATH=hack:. .venv/bin/python -m bench.footprint` runs it alone.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType

from bench import big_cluster, planning, policy_run
from bench.common import (
    PAGE,
    REPO,
    Point,
    ResourceWatch,
    Row,
    drop_topics,
    quiet_brokers,
    rss_mib,
    run_alone,
    say,
    tree,
)
from confluent_kafka.admin import AdminClient

from devstack.kafka import KafkaCluster
from devstack.operator import OperatorProcess
from devstack.stack import Stack

SIZES = [int(s) for s in os.environ.get("BENCH_FOOTPRINT_SIZES", "10000,50000").split(",") if s]
STACK_MAX = 20_000
IDLE_S = 10.0
SAMPLE_S = 0.5


class Peak:
    """RSS of a process tree sampled every SAMPLE_S on a thread while in the `with`: the
    largest sample, how many were taken, the names of every process seen in it, and
    whether one of them was Spark's JVM (its main class on the command line: the group
    reader, GroupPositions.java, is a `java` child of the operator too)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.mib = 0.0
        self.samples = 0
        self.names: set[str] = set()
        self.spark = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.mib = max(self.mib, rss_mib(self.pid))
            self.samples += 1
            for p in tree(self.pid):
                try:
                    self.names.add((PAGE / str(p) / "comm").read_text().strip())
                    command = (PAGE / str(p) / "cmdline").read_bytes()
                except OSError:
                    continue
                self.spark = self.spark or b"org.apache.spark" in command
            if self._stop.wait(SAMPLE_S):
                return

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.mib = max(self.mib, rss_mib(self.pid))


def measure(
    stack: Stack, cluster: KafkaCluster, admin: AdminClient, run: str, size: int, where: str
) -> Row:
    """The row of one size on `cluster` (its topics made here and dropped after)."""
    bootstrap = cluster.bootstrap_servers
    prefix = f"fp{size // 1000}k-{run}"
    say(f"operator memory: {size:,} partitions{where}")
    made: list[str] = []
    ns = f"bench-footprint-{size // 1000}k-{run}"
    log = stack.dev / f"bench-footprint-operator-{size // 1000}k-{run}.log"
    try:
        made = planning.make_partitions(admin, bootstrap, prefix, size, big_cluster.MAKE_WITHIN_S)
        quiet_brokers(cluster)
        stack.kubectl("create", "namespace", ns)
        line = ("--in-process-max-partitions", str(max(SIZES)))
        operator = OperatorProcess(stack, [ns], log, line).start()
        watch = ResourceWatch(stack, ns, "retentionpolicies", policy_run.FIELDS, bool)
        try:
            time.sleep(IDLE_S)
            idle = rss_mib(operator.pid)
            with Peak(operator.pid) as peak:
                took, deleted = policy_run.run_policy(stack, watch, "footprint", prefix, bootstrap)
            after = rss_mib(operator.pid)
        finally:
            watch.stop()
            operator.stop()
            stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        assert deleted >= size, f"{deleted} records deleted over {size} partitions"
        assert not peak.spark, f"Spark's JVM started: {sorted(peak.names)}"
    finally:
        dropped = made or [f"{prefix}-{i:03d}" for i in range(size // planning.PER_TOPIC)]
        drop_topics(admin, dropped, settle=cluster)
    say(f"  idle {idle:.0f} MiB, peak {peak.mib:.0f} MiB, after {after:.0f} MiB, {took:.1f} s")
    return row(size, idle, peak, after, took, deleted, where)


def row(
    size: int, idle: float, peak: Peak, after: float, took: float, deleted: int, where: str
) -> Row:
    return Row(
        f"operator memory, one RetentionPolicy over {size:,} partitions planned in process",
        f"peak {peak.mib:.0f} MiB RSS (idle before: {idle:.0f} MiB; after: {after:.0f} MiB)",
        "-",
        "RSS of the operator's process tree (Python; no Spark JVM was in the tree: "
        f"--in-process-max-partitions {max(SIZES):,}, so the plan ran in the operator "
        f"process), sampled every {SAMPLE_S} s ({peak.samples} samples) from kubectl apply "
        "of a deleteConsumed policy of 2 groups (committed in every partition) to the "
        f"watch event of its run's completedAt ({took:.1f} s, {deleted:,} records deleted); "
        f"peak: the largest sample; idle: {IDLE_S:.0f} s after the operator was ready, "
        "before the policy; after: once the run completed; a fresh operator for each size" + where,
        (Point("memory", "peak RSS (MiB)", size, peak.mib, "partitions", "MiB"),),
    )


def _failed(size: int, exc: Exception, where: str) -> Row:
    say(f"operator memory at {size:,} partitions failed: {exc!r}")
    return Row(
        f"operator memory, {size:,} partitions in process", "-", "-", f"failed: {exc!r}{where}"
    )


def bench_footprint(stack: Stack, admin: AdminClient, run: str) -> list[Row]:
    stack.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds"))
    rows: list[Row] = []
    for size in (s for s in SIZES if s <= STACK_MAX):
        try:
            rows.append(measure(stack, stack.kafka, admin, run, size, ""))
        except Exception as exc:  # a failure becomes a row, and the next size still runs
            rows.append(_failed(size, exc, ""))
    larger = [s for s in SIZES if s > STACK_MAX]
    if not larger:
        return rows
    where = big_cluster.WHERE
    try:
        with big_cluster.started(stack) as cluster:
            big = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            for size in larger:
                try:
                    rows.append(measure(stack, cluster, big, run, size, where))
                except Exception as exc:
                    rows.append(_failed(size, exc, where))
    except Exception as exc:  # the brokers could not start (a port taken, a timeout)
        rows += [_failed(size, exc, where) for size in larger if not _measured(rows, size)]
    return rows


def _measured(rows: list[Row], size: int) -> bool:
    return any(f"{size:,} partitions" in r.what for r in rows)


def main() -> int:
    """This benchmark alone: `PYTHONPATH=hack:. .venv/bin/python -m bench.footprint`."""
    return run_alone(bench_footprint)


if __name__ == "__main__":
    sys.exit(main())
