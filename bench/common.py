"""What every benchmark shares: the result row, progress lines, Kafka's own tools run
from the stack's jars, and waiting until new topics are served."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient

from devstack import paths

REPO = Path(__file__).resolve().parents[1]
RUN = time.strftime("%H%M%S")  # topic names of this run: a reused stack keeps older ones


@dataclass(frozen=True)
class Point:
    """One measured value for a plot: `figure` names the PNG (bench/plots/<figure>.png),
    `series` its line or bar, `x` what was varied (partitions, records), `y` the median."""

    figure: str
    series: str
    x: float
    y: float
    x_label: str = "partitions"
    y_label: str = "seconds (median)"


@dataclass
class Row:
    what: str
    ours: str
    reference: str
    note: str
    # What the plots draw from this row (ours and the reference), if anything.
    points: tuple[Point, ...] = field(default_factory=tuple)
    # Where ours is slower than the reference or misses its goal: why, and what would
    # close the gap (BENCHMARKS.md gathers these under "Where we are slower, and why").
    why: str = ""


PAGE = Path("/proc")


def tree(pid: int) -> list[int]:
    """The process and all its descendants (Spark's JVM is a child of the operator)."""
    children: dict[int, list[int]] = {}
    for stat in PAGE.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def rss_mib(pid: int) -> float:
    total = 0
    for p in tree(pid):
        try:
            for line in (PAGE / str(p) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_seconds(pid: int) -> float:
    ticks = 0
    for p in tree(pid):
        try:
            fields = (PAGE / str(p) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / 100


def load_average() -> str:
    """The machine's 1-minute load average: others' work on the same 2 cores shows here."""
    return (PAGE / "loadavg").read_text().split()[0]


def say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def java_tool(main: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-cp",
            f"{paths.kafka_libs()}/*",
            "-Dlog4j2.configurationFile=" + str(REPO / "bench" / "log4j2-quiet.properties"),
            main,
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )


def wait_for_leaders(admin: AdminClient, names: list[str], per_topic: int) -> None:
    """Created is not served: wait until every partition has a leader in the metadata,
    or the first records of a busy cluster go to partitions the client has not seen."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=30).topics
        if all(
            n in topics
            and len(topics[n].partitions) == per_topic
            and all(p.leader >= 0 for p in topics[n].partitions.values())
            for n in names
        ):
            return
        time.sleep(1)
    raise AssertionError(f"{len(names)} topics not served with leaders after 300 s")
