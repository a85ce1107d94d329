"""`make bench`: each figure beside Apache Kafka's own tool on the same local cluster in
the same run; results go to BENCHMARKS.md and the figures to bench/plots/.

- Planning (planning.py): the Spark plan job and the in-process planner at 1k, 10k and
  50k partitions with two groups, beside `kafka-consumer-groups.sh --describe` for the
  same two groups; medians of 3 runs, and the growth fitted.
- Scan (scan.py): the plan job's record scan over one topic, beside
  `kafka-consumer-perf-test.sh` reading the same topic.
- Erasure scan (erasure_scan.py): 10,000 digests over 1,000,000 records on Spark, beside
  `kafka-consumer-perf-test.sh` reading the same records; the in-process scan beside it.

`bench/run.py --only SECTION` (repeatable: planning, scan, erasure-scan, purges,
policy-run, fleet, footprint, big-cluster, synthetic) runs those sections alone and
replaces only their rows in BENCHMARKS.md, noting the command and date beside the
whole run's.
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

import argparse
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import (
    big_cluster,
    erasure_scan,
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


# The sections on the stack, in the order a whole run takes them.
SECTIONS: dict[str, Callable[[Stack, AdminClient], list[Row]]] = {
    "planning": planning.bench_planning,
    "scan": scan.bench_scan,
    "erasure-scan": erasure_scan.bench_erasure_scan,
    "purges": lambda stack, admin: purge_scale.bench_purges(stack, admin, RUN),
    "policy-run": lambda stack, admin: policy_run.bench_policy_run(stack, admin, RUN),
    "fleet": lambda stack, admin: policies.bench_fleet(stack, admin, RUN),
    "footprint": lambda stack, admin: footprint.bench_footprint(stack, admin, RUN),
    "big-cluster": lambda stack, admin: big_cluster.bench_big_cluster(stack, admin, RUN),
}
# No Kafka in this one: it runs on the machine alone, after the stack is down.
OFF_STACK = "synthetic"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        choices=[*SECTIONS, OFF_STACK],
        help="run this section alone (repeatable); its rows replace its own in BENCHMARKS.md",
    )
    args = parser.parse_args(argv)
    only: list[str] = args.only or []
    started = time.monotonic()
    # Spark's Kafka source for every benchmark's session: the first one to start the
    # process-wide local session (planning) fixes its jars.
    os.environ.setdefault("KAFKA_RETENTION_SPARK_JARS", str(paths.spark_kafka_jars()))
    on_stack = [name for name in SECTIONS if not only or name in only]
    rows: list[Row] = []
    if on_stack:
        stack = Stack()
        started_stack = stack.up()
        try:
            admin = AdminClient({"bootstrap.servers": stack.kafka.bootstrap_servers})
            for name in on_stack:
                rows += SECTIONS[name](stack, admin)
        finally:
            if started_stack:
                stack.down()
    if not only or OFF_STACK in only:
        rows += synthetic.bench_synthetic()
    if only:
        write_sections(rows, time.monotonic() - started, only)
    else:
        write(rows, time.monotonic() - started, plots.draw(rows))
    return 0


def write_sections(rows: list[Row], seconds: float, only: Sequence[str]) -> None:
    """Rows of a partial run into BENCHMARKS.md: each replaces the row of the same `what`
    (and its "slower" line) or is added at the end of the table; a line under the whole
    run's says which sections were run again, by which command, when and on what."""
    page = REPO / "BENCHMARKS.md"
    lines = page.read_text().splitlines()
    table = [i for i, line in enumerate(lines) if line.startswith("| ")]
    ours = {r.what: r for r in rows}
    kept = [lines[i] for i in table[2:] if lines[i].split(" | ")[0][2:] not in ours]
    new = [f"| {r.what} | {r.ours} | {r.reference} | {r.note} |" for r in rows]
    note = (
        f"- Sections {', '.join(only)} run again: `PYTHONPATH=hack:. python bench/run.py "
        + " ".join(f"--only {name}" for name in only)
        + f"`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, took {seconds:.0f} s, "
        f"on {machine()}"
    )
    # The note of an earlier rerun of the same sections goes; another section's stays,
    # since its rows stay too.
    head = [line for line in lines[: table[0]] if _sections_noted(line) != set(only)]
    while head and not head[-1]:
        head.pop()
    body = [*head, note, "", *lines[table[0] : table[0] + 2], *kept, *new]
    rest = lines[table[-1] + 1 :]
    slower = [f"- **{r.what}**: {r.why}" for r in rows if r.why]
    rest = [
        line
        for line in rest
        if not any(line.startswith(f"- **{what}**:") for what in ours)
        and not line.startswith("Nowhere in this run")
    ]
    if slower and "## Where we are slower, and why" not in rest:
        rest += ["", "## Where we are slower, and why", ""]
    while rest and not rest[-1]:
        rest.pop()
    page.write_text("\n".join([*body, *rest, *slower]) + "\n")
    print("\n".join(new + slower))


def _sections_noted(line: str) -> set[str] | None:
    """The sections a "- Sections a, b run again: ..." line names; None for other lines."""
    if not (line.startswith("- Sections ") and " run again: " in line):
        return None
    named = line.removeprefix("- Sections ").split(" run again: ")[0]
    return {name.strip() for name in named.split(",")}


if __name__ == "__main__":
    sys.exit(main())
