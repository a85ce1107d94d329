"""`make bench`: each figure beside Apache Kafka's own tool on the same local cluster in
the same run; results go to BENCHMARKS.md and the figures to bench/plots/.

- Planning (planning.py): the Spark plan job and the in-process planner at 1k, 10k and
  50k partitions with two groups, beside `kafka-consumer-groups.sh --describe` for the
  same two groups; medians of 3 runs, and the growth fitted.
- Scan (scan.py): the plan job's record scan over one topic, beside
  `kafka-consumer-perf-test.sh` reading the same topic.
- RecordPurge at 1 to 20k partitions (RF 1) and 100 and 1k (RF 3) beside
  `kafka-delete-records.sh` (purge_scale.py).
- One RetentionPolicy run over 20k partitions and two groups beside
  `kafka-consumer-groups.sh --describe` of each and `kafka-delete-records.sh`
  (policy_run.py).
- A RetentionPolicy fleet: runs per minute at 1,000 policies and the operator's footprint
  idle and under load (policies.py).
- The operator's memory: peak RSS of its process tree while it plans in process and
  applies one RetentionPolicy over 10k and 50k partitions, idle RSS before (footprint.py;
  50k on big_cluster.py's brokers). The chart's memory request and limit come from it.
- 100,000 partitions on a 7-broker cluster started for them: the plan and the purges,
  as above, and purges of 10,000 partitions at RF 3 (big_cluster.py).
- The plan job's Spark transforms on 1,000,000 synthetic partitions, no Kafka
  (synthetic.py).
"""

from __future__ import annotations

import os
import platform
import re
import sys
import time
from pathlib import Path

from bench import (
    big_cluster,
    footprint,
    planning,
    plots,
    policies,
    policy_run,
    purge_scale,
    scan,
    synthetic,
)
from bench.common import REPO, RUN, Row
from confluent_kafka.admin import AdminClient

from devstack import paths
from devstack.stack import Stack


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    gib = int(mem.group(1)) / 1024 / 1024 if mem else 0
    return (
        f"{os.cpu_count()} cores ({cpu}), {gib:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def write(rows: list[Row], seconds: float, figures: list[Path]) -> None:
    pins = paths.Pins.read()
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (bench/run.py); every figure beside Apache Kafka's own tool,",
        "on the same local cluster, in the same run. Rerun to refresh.",
        "",
        f"- Machine: {machine()}",
        f"- Cluster: Apache Kafka {pins.kafka}, 3 KRaft brokers on 127.0.0.1 (the local "
        f"stack), and {big_cluster.BIG_BROKERS} for the rows that say so (bench/big_cluster.py); "
        "Spark local mode, warm session",
        "- Command: `make bench`",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; run took {seconds:.0f} s",
        "",
        "| what | kafka-retention | reference tool | notes |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {r.what} | {r.ours} | {r.reference} | {r.note} |" for r in rows]
    lines += figure_lines(figures) + slower_lines(rows)
    (REPO / "BENCHMARKS.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def figure_lines(figures: list[Path]) -> list[str]:
    if not figures:
        return []
    out = ["", "## Figures", ""]
    for path in figures:
        rel = path.relative_to(REPO).as_posix()
        out += [f"![{path.stem}]({rel})", ""]
    return out[:-1]


def slower_lines(rows: list[Row]) -> list[str]:
    """The rows' `why` notes: where we are slower than the reference or miss a goal."""
    slower = [r for r in rows if r.why]
    out = ["", "## Where we are slower, and why", ""]
    if not slower:
        return [*out, "Nowhere in this run: every figure is within its reference or goal."]
    return out + [f"- **{r.what}**: {r.why}" for r in slower]


def main() -> int:
    started = time.monotonic()
    # Spark's Kafka source for every benchmark's session: the first one to start the
    # process-wide local session (planning) fixes its jars.
    os.environ.setdefault("KAFKA_RETENTION_SPARK_JARS", str(paths.spark_kafka_jars()))
    stack = Stack()
    started_stack = stack.up()
    try:
        admin = AdminClient({"bootstrap.servers": stack.kafka.bootstrap_servers})
        rows = planning.bench_planning(stack, admin)
        rows += scan.bench_scan(stack, admin)
        rows += purge_scale.bench_purges(stack, admin, RUN)
        rows += policy_run.bench_policy_run(stack, admin, RUN)
        rows += policies.bench_fleet(stack, admin, RUN)
        rows += footprint.bench_footprint(stack, admin, RUN)
        rows += big_cluster.bench_big_cluster(stack, admin, RUN)
    finally:
        if started_stack:
            stack.down()
    # No Kafka in this one: it runs on the machine alone, after the stack is down.
    rows += synthetic.bench_synthetic()
    write(rows, time.monotonic() - started, plots.draw(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
