"""What every benchmark shares: the result row, progress lines, Kafka's own tools run
from the stack's jars, and waiting until new topics are served."""

from __future__ import annotations

import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient

from devstack import paths
from devstack.kafka import KafkaCluster
from devstack.stack import Stack

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


def brokers_cpu(cluster: KafkaCluster) -> float:
    """CPU-s a local cluster's brokers have used so far (user and kernel)."""
    pids = [cluster.process(n).pid() for n in cluster.node_ids]
    return sum(cpu_seconds(pid) for pid in pids if pid is not None)


def quiet_brokers(
    cluster: KafkaCluster, *, below: float = 0.15, window: float = 0.5, most: float = 30.0
) -> float:
    """Wait until the brokers use less than `below` of one core over `window` seconds (at
    most `most` seconds); returns the seconds waited. Producing a record to each of
    thousands of partitions, and the leader-epoch checkpoints every delete leaves behind,
    keep the brokers busy for seconds after the call returns: a timed run started then
    shares the 2 cores with the previous run's tail, and which tool inherits it depends
    only on the order they take turns in. Every tool starts on a quiet cluster instead."""
    started = time.monotonic()
    while time.monotonic() - started < most:
        before = brokers_cpu(cluster)
        time.sleep(window)
        if brokers_cpu(cluster) - before < below * window:
            break
    return time.monotonic() - started


def drop_topics(admin: AdminClient, names: list[str], settle: KafkaCluster | None = None) -> None:
    """A benchmark's topics deleted (errors ignored: this is cleaning up). With `settle`,
    then wait until that cluster's brokers are quiet: the files leave the disk after the
    call returns, in bursts, which must not fall into the next timed runs."""
    if names:
        for f in admin.delete_topics(names, request_timeout=300).values():
            with contextlib.suppress(Exception):
                f.result(timeout=300)
    if settle is not None:
        quiet_brokers(settle, window=3.0, most=180.0)


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


class ResourceWatch:
    """Watches one namespace's objects of a kind (`kubectl get -w`, started before any of
    them) and notes when each first shows an end: `fields` is a jsonpath of three fields,
    name, a marker and a count, and `ended(marker)` says whether the marker is an end
    (a purge's final phase, a policy run's completedAt)."""

    def __init__(
        self, stack: Stack, namespace: str, kind: str, fields: str, ended: Callable[[str], bool]
    ) -> None:
        self.stack, self.namespace, self.kind = stack, namespace, kind
        # kubectl pads watch output like a table: fields apart by spaces (no name has any).
        self.fields = fields + '{"\\n"}'
        self.ended = ended
        self.done: dict[str, tuple[float, str, int]] = {}
        self.changed = threading.Condition()
        self.stopped = False
        self.proc: subprocess.Popen[str] | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        time.sleep(1)  # the watch is established before the first object is applied

    def _run(self) -> None:
        while not self.stopped:
            self.proc = subprocess.Popen(
                [
                    str(self.stack.kube.kubectl),
                    "--kubeconfig",
                    str(self.stack.kube.kubeconfig),
                    "get",
                    self.kind,
                    "-n",
                    self.namespace,
                    "--watch",
                    "-o",
                    f"jsonpath={self.fields}",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                seen = time.monotonic()
                name, marker, count = [*line.split(), "", ""][:3]
                if self.ended(marker):
                    with self.changed:
                        self.done.setdefault(name, (seen, marker, int(count or 0)))
                        self.changed.notify_all()
            self.proc.wait()

    def wait(self, name: str, timeout: float) -> tuple[float, str, int]:
        """(when it was seen to end, its marker, its count)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while name not in self.done:
                left = deadline - time.monotonic()
                assert left > 0, f"{self.kind} {name} not finished in {timeout:.0f} s"
                self.changed.wait(left)
            return self.done[name]

    def stop(self) -> None:
        self.stopped = True
        if self.proc is not None:
            self.proc.terminate()


def offsets_file(cuts: Iterable[tuple[str, int, int]]) -> str:
    """A kafka-delete-records.sh offsets file for (topic, partition, offset) cuts; the
    caller removes it."""
    partitions = [{"topic": t, "partition": p, "offset": o} for t, p, o in cuts]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"version": 1, "partitions": partitions}, f)
    return f.name


def delete_records(bootstrap: str, path: str) -> None:
    """kafka-delete-records.sh (its main class) with an offsets file."""
    java_tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "--bootstrap-server",
        bootstrap,
        "--offset-json-file",
        path,
    )


def describe_group(bootstrap: str, group: str) -> str:
    """`kafka-consumer-groups.sh --describe` of one group, as it prints it."""
    return java_tool(
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server",
        bootstrap,
        "--describe",
        "--group",
        group,
    ).stdout


def run_alone(bench: Callable[[Stack, AdminClient, str], list[Row]]) -> int:
    """One benchmark on the local stack (started here unless it runs already), its rows
    printed as BENCHMARKS.md's table has them."""
    stack = Stack()
    started_stack = stack.up()
    try:
        admin = AdminClient({"bootstrap.servers": stack.kafka.bootstrap_servers})
        rows = bench(stack, admin, time.strftime("%H%M%S"))
    finally:
        if started_stack:
            stack.down()
    for r in rows:
        print(f"| {r.what} | {r.ours} | {r.reference} | {r.note} |")
    return 0


def py_spy(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    """py-spy (a dev dependency) recording a process at 200 Hz, waiting included, into a
    speedscope file; stopped with SIGINT. None when py-spy is not installed."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        say("py-spy not installed (pip install py-spy); no profile")
        return None
    args = ["record", "--idle", "-p", str(pid), "-r", "200", "-f", "speedscope"]
    return subprocess.Popen(
        [spy, *args, "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def profile_summary(
    path: Path, roots: tuple[str, ...], parts: Mapping[str, tuple[str, ...]]
) -> str:
    """Each part's share of the samples that pass through one of `roots` (py-spy --idle:
    waiting counts); a part is the functions whose samples it counts."""
    doc = json.loads(path.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    total, shares = 0, dict.fromkeys(parts, 0)
    for profile in doc["profiles"]:
        for sample in profile["samples"]:
            frames = {names[i] for i in sample}
            if not frames.intersection(roots):
                continue
            total += 1
            for part, functions in parts.items():
                shares[part] += any(f in frames for f in functions)
    if not total:
        return f"no samples of {' or '.join(roots)}"
    shown = ", ".join(f"{part} {100 * n / total:.0f}%" for part, n in shares.items())
    return f"{total} samples of {' or '.join(roots)}: {shown}"


def timed(fn: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def consumer_perf(bootstrap: str, topic: str, records: int) -> str:
    """kafka-consumer-perf-test.sh reading `records` of `topic` (the scans' reference):
    its own last report line."""
    perf = java_tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--messages",
        str(records),
        "--timeout",
        "60000",
    )
    return perf.stdout.strip().splitlines()[-1]


def alternating_medians(
    ways: Mapping[str, Callable[[], None]], runs: int, what: str
) -> dict[str, float]:
    """Each way warmed up once, then timed `runs` times in turn (so drift hits all alike):
    each way's median seconds."""
    say("warming up each reader once (the operator keeps its Spark session warm)")
    for fn in ways.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in ways}
    for i in range(runs):
        for name, fn in ways.items():
            times[name].append(timed(fn))
            say(f"{what} run {i + 1}/{runs}: {name} {times[name][-1]:.2f} s")
    return {name: statistics.median(t) for name, t in times.items()}
