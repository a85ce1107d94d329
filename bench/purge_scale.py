"""`make bench`, purge latency: a RecordPurge (`kubectl apply` -> status Succeeded), the
`kafka-retention purge` command and Kafka's own kafka-delete-records.sh
(kafka.admin.DeleteRecordsCommand) cutting the same partitions at their high watermark
(-1), on the same cluster in the same run; the median of RUNS runs of each, at 1, 100,
1,000, 10,000 and 20,000 partitions (replication factor 1). BENCH_PURGE_SIZES picks the
sizes, BENCH_PURGE_RUNS the runs.

Before every run one record goes to each partition, so every run deletes as much as the
others. The three take turns within a run (the operator's purge, the command, the
reference), so a slow moment of the machine is not all one tool's. One untimed run of
each at the smallest size first: the operator's first purge and the first JVM read their
code from a cold disk.

The RecordPurge is timed from just before `kubectl apply` to the watch event that shows
its final phase (a watch, not polling: the figure does not carry a poll interval).

py-spy (a dev dependency) also records the operator during one purge of the largest size
(a speedscope JSON beside the operator's log, and each part's share of the samples in
the row); BENCH_PURGE_PROFILE=0 leaves it out.

20,000 is what this machine's 3 local brokers serve reliably: every partition keeps a
file open and index files mapped on its broker, a broker process here may open 20,000
files and map 65,530 regions, and at 40,000 partitions producing one record to each did
not finish within minutes (tried; 60,000 and more exceed the open-file limit). The service
itself is tested at 100,000 partitions against an in-memory Kafka
(tests/unit/test_purge_service.py).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import REPO, Point, Row, java_tool, say, wait_for_leaders
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.records import produce_to_each

PER_TOPIC = 200
SIZES = [int(s) for s in os.environ.get("BENCH_PURGE_SIZES", "1,100,1000,10000,20000").split(",")]
RUNS = int(os.environ.get("BENCH_PURGE_RUNS", "3"))
PROFILE = os.environ.get("BENCH_PURGE_PROFILE", "1") == "1"
FINAL = ("Succeeded", "PartiallySucceeded", "Failed")

SERIES_CR = "RecordPurge, apply -> Succeeded"
SERIES_CLI = "kafka-retention purge"
SERIES_REF = "kafka-delete-records"


def _layout(size: int) -> tuple[int, int]:
    """(topics, partitions per topic) for `size` partitions."""
    per_topic = min(size, PER_TOPIC)
    assert size % per_topic == 0, f"{size} partitions do not split into topics of {PER_TOPIC}"
    return size // per_topic, per_topic


def _topics(admin: AdminClient, prefix: str, size: int) -> list[tuple[str, int]]:
    count, per_topic = _layout(size)
    names = [f"{prefix}-{i:03d}" for i in range(count)]
    # KRaft refuses one request that creates too many partition records: a few at a time.
    for i in range(0, len(names), 5):
        futures = admin.create_topics([NewTopic(n, per_topic, 1) for n in names[i : i + 5]])
        for f in futures.values():
            f.result(timeout=300)
    wait_for_leaders(admin, names, per_topic)
    return [(t, p) for t in names for p in range(per_topic)]


def _offsets(admin: AdminClient, tps: list[tuple[str, int]], kind: str) -> list[int]:
    spec: Any = getattr(OffsetSpec, kind)()
    found: dict[tuple[str, int], int] = {}
    for i in range(0, len(tps), 2000):
        request = {KTP(t, p): spec for t, p in tps[i : i + 2000]}
        futures = admin.list_offsets(request, request_timeout=60)
        found |= {(k.topic, k.partition): f.result(timeout=90).offset for k, f in futures.items()}
    return [found[tp] for tp in tps]


def _all_cut(admin: AdminClient, tps: list[tuple[str, int]]) -> None:
    """Every partition's log start is at its high watermark (checked, not timed)."""
    assert _offsets(admin, tps, "earliest") == _offsets(admin, tps, "latest"), "records left"


class PhaseWatch:
    """Watches one namespace's RecordPurges (`kubectl get -w`, started before any of them)
    and notes when each first shows a final phase."""

    # kubectl pads watch output like a table: fields apart by spaces (no name has any).
    FIELDS = '{.metadata.name} {.status.phase} {.status.summary.recordsDeleted}{"\\n"}'

    def __init__(self, stack: Stack, namespace: str) -> None:
        self.stack, self.namespace = stack, namespace
        self.done: dict[str, tuple[float, str, int]] = {}
        self.changed = threading.Condition()
        self.stopped = False
        self.proc: subprocess.Popen[str] | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        time.sleep(1)  # the watch is established before the first purge is applied

    def _run(self) -> None:
        while not self.stopped:
            self.proc = subprocess.Popen(
                [
                    str(self.stack.kube.kubectl),
                    "--kubeconfig",
                    str(self.stack.kube.kubeconfig),
                    "get",
                    "recordpurges",
                    "-n",
                    self.namespace,
                    "--watch",
                    "-o",
                    f"jsonpath={self.FIELDS}",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                seen = time.monotonic()
                name, phase, deleted = [*line.split(), "", ""][:3]
                if phase in FINAL:
                    with self.changed:
                        self.done.setdefault(name, (seen, phase, int(deleted or 0)))
                        self.changed.notify_all()
            self.proc.wait()

    def wait(self, name: str, timeout: float) -> tuple[float, str, int]:
        deadline = time.monotonic() + timeout
        with self.changed:
            while name not in self.done:
                left = deadline - time.monotonic()
                assert left > 0, f"RecordPurge {name} not finished in {timeout:.0f} s"
                self.changed.wait(left)
            return self.done[name]

    def stop(self) -> None:
        self.stopped = True
        if self.proc is not None:
            self.proc.terminate()


def _purge(stack: Stack, watch: PhaseWatch, name: str, tps: list[tuple[str, int]]) -> float:
    topics = sorted({t for t, _ in tps})
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": name, "namespace": watch.namespace},
        "spec": {
            "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
            "topics": [{"name": t, "before": {"highWatermark": True}} for t in topics],
        },
    }
    started = time.monotonic()
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    finished, phase, deleted = watch.wait(name, timeout=1200)
    assert phase == "Succeeded", stack.kubectl(
        "get", "recordpurge", name, "-n", watch.namespace, "-o", "yaml"
    ).stdout
    assert deleted == len(tps), (deleted, len(tps))
    return finished - started


def _offsets_file(tps: list[tuple[str, int]]) -> str:
    offsets = {
        "version": 1,
        "partitions": [{"topic": t, "partition": p, "offset": -1} for t, p in tps],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(offsets, f)
    return f.name


def _cli(stack: Stack, tps: list[tuple[str, int]], _name: str) -> float:
    path = _offsets_file(tps)
    exe = str(Path(sys.executable).with_name("kafka-retention"))
    started = time.monotonic()
    done = subprocess.run(
        [
            exe,
            "purge",
            "--bootstrap-server",
            stack.kafka.bootstrap_servers,
            "--offset-json-file",
            path,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - started
    os.unlink(path)
    assert done.returncode == 0, done.stderr[-2000:]
    return took


def _delete_records(stack: Stack, tps: list[tuple[str, int]], _name: str) -> float:
    path = _offsets_file(tps)
    started = time.monotonic()
    java_tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "--bootstrap-server",
        stack.kafka.bootstrap_servers,
        "--offset-json-file",
        path,
    )
    took = time.monotonic() - started
    os.unlink(path)
    return took


def _profile(operator: OperatorProcess, out: Path) -> subprocess.Popen[bytes] | None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        say("py-spy not installed (pip install py-spy); no profile")
        return None
    args = ["record", "--idle", "-p", str(operator.pid), "-r", "200", "-f", "speedscope"]
    return subprocess.Popen(
        [spy, *args, "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


# Where a purge's time goes, by the functions the handler's samples pass through.
PROFILE_PARTS = {
    "ListOffsets (plan; read back only what timed out)": (
        "KafkaAdmin.offsets",
        "KafkaAdmin.log_bounds",
    ),
    "group positions (plan, re-check)": ("GroupReads.group_positions",),
    "DeleteRecords": ("KafkaAdmin.delete_records",),
    "topic metadata and configs": ("KafkaAdmin.topic_partitions", "KafkaAdmin.topic_configs"),
    "status writes": ("StatusWriter.patch",),
    "plan and results ConfigMaps": ("ConfigMapStore.save",),
    "planning core (plan, re-check)": ("plan_purge", "recheck"),
    "entries (plan to status)": ("PurgeEntry.to_status", "PurgeEntry.from_status"),
    "JSON lines": ("to_lines",),
}


def profile_summary(path: Path) -> str:
    """Each part's share of the purge handler's samples (py-spy --idle: waiting counts)."""
    doc = json.loads(path.read_text())
    names = [f["name"] for f in doc["shared"]["frames"]]
    total, shares = 0, dict.fromkeys(PROFILE_PARTS, 0)
    for profile in doc["profiles"]:
        for sample in profile["samples"]:
            frames = {names[i] for i in sample}
            if "reconcile" not in frames:
                continue
            total += 1
            for part, functions in PROFILE_PARTS.items():
                shares[part] += any(f in frames for f in functions)
    if not total:
        return "no samples of the purge handler"
    parts = ", ".join(f"{part} {100 * n / total:.0f}%" for part, n in shares.items())
    return f"{total} samples of the handler: {parts}"


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_purges(stack: Stack, admin: AdminClient, run: str) -> list[Row]:
    bootstrap = stack.kafka.bootstrap_servers
    stack.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds"))
    ns = f"bench-purge-{run}"
    stack.kubectl("create", "namespace", ns)
    log = stack.dev / f"bench-purge-operator-{run}.log"
    operator = OperatorProcess(stack, [ns], log).start()
    watch = PhaseWatch(stack, ns)
    rows: list[Row] = []
    profiled = ""
    try:
        for size in SIZES:
            say(f"purges of {size} partitions, {RUNS} runs each")
            tps = _topics(admin, f"bp{size}-{run}", size)
            times: dict[str, list[float]] = {SERIES_CR: [], SERIES_CLI: [], SERIES_REF: []}
            steps: list[tuple[str, Callable[[str], float]]] = [
                (SERIES_CR, partial(_purge, stack, watch, tps=tps)),
                (SERIES_CLI, partial(_cli, stack, tps)),
                (SERIES_REF, partial(_delete_records, stack, tps)),
            ]
            try:
                first = size == SIZES[0]
                for i in range(-1 if first else 0, RUNS):  # run -1: the untimed warm-up
                    for series, step in steps:
                        produce_to_each(bootstrap, tps)
                        took = step(f"p{size}-{i + 1}")
                        _all_cut(admin, tps)
                        if i >= 0:
                            times[series].append(took)
                        say(f"  {series}: {took:.2f} s" + (" (warm-up)" if i < 0 else ""))
                if PROFILE and size == SIZES[-1]:
                    produce_to_each(bootstrap, tps)
                    out = log.with_name(f"bench-purge-profile-{size}.speedscope.json")
                    spy = _profile(operator, out)
                    time.sleep(1)
                    took = _purge(stack, watch, f"p{size}-profiled", tps)
                    if spy is not None:
                        spy.send_signal(2)
                        spy.wait(timeout=60)
                        profiled = (
                            f"; profile: py-spy record --idle at 200 Hz of the operator during "
                            f"one more purge of {size} partitions ({took:.1f} s; "
                            f"{out.name}): {profile_summary(out)}"
                        )
                        say(f"  profiled purge {took:.2f} s: {out}{profiled}")
            finally:
                topics = sorted({t for t, _ in tps})
                for f in admin.delete_topics(topics, request_timeout=300).values():
                    f.result(timeout=300)
            rows += _rows(size, times)
        if profiled:
            rows[-2].note += profiled
            if rows[-2].why:
                rows[-2].why += " Where the time went: " + profiled.removeprefix("; profile: ")
    finally:
        watch.stop()
        operator.stop()
        stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    return rows


def _rows(size: int, times: dict[str, list[float]]) -> list[Row]:
    med = {series: _median(xs) for series, xs in times.items()}
    ref = med[SERIES_REF]
    runs = ", ".join(f"{x:.2f}" for x in times[SERIES_REF])

    def runs_of(series: str) -> str:
        return ", ".join(f"{x:.2f}" for x in times[series])

    common = (
        f"median of {len(times[SERIES_REF])} runs (ours {{runs}}; reference {runs}); reference: "
        "kafka-delete-records.sh (JVM start included) with the same partitions at -1; one "
        "record in every partition before each run"
    )
    return [
        Row(
            f"RecordPurge of {size} partitions (RF 1), apply -> Succeeded",
            f"{med[SERIES_CR]:.2f} s",
            f"{ref:.2f} s",
            f"{med[SERIES_CR] / ref:.2f}x; ours: kubectl apply, plan (stored in ConfigMaps), "
            "the guard groups re-read, DeleteRecords (its answer verifies), status, timed "
            "to the watch event "
            "of the final phase; " + common.format(runs=runs_of(SERIES_CR)),
            (
                Point("purge", SERIES_CR, size, med[SERIES_CR]),
                Point("purge", SERIES_REF, size, ref),
            ),
            why=purge_why(med[SERIES_CR] / ref),
        ),
        Row(
            f"`kafka-retention purge` of {size} partitions (RF 1)",
            f"{med[SERIES_CLI]:.2f} s",
            f"{ref:.2f} s",
            f"{med[SERIES_CLI] / ref:.2f}x; ours: the command's whole process (start-up, "
            "plan, the guard groups re-read, DeleteRecords, printing every partition); "
            + common.format(runs=runs_of(SERIES_CLI)),
            (Point("purge", SERIES_CLI, size, med[SERIES_CLI]),),
            why=purge_why(med[SERIES_CLI] / ref),
        ),
    ]


# The issue's goal: a purge in at most half of kafka-delete-records' time.
GOAL = 0.5


def purge_why(ratio: float) -> str:
    """Why a purge misses the goal ("" when it meets it)."""
    if ratio <= GOAL:
        return ""
    return (
        f"{ratio:.2f}x of kafka-delete-records against a goal of {GOAL}x. The reference "
        "sends one DeleteRecords. A purge also reads every partition's topic metadata, "
        "configs, log start and high watermark to plan, stores the plan in ConfigMaps "
        "before the first delete, re-reads the guard groups' positions (none here) and "
        "writes status; the reads grow with the partitions while the reference's fixed "
        "cost is its JVM start. What is left to overlap (issue #30): the plan's reads "
        "with each other, and the plan's storing with the groups' re-read."
    )


def main() -> int:
    """This benchmark alone, on the local stack (started here unless it runs already):
    `PYTHONPATH=hack:. .venv/bin/python -m bench.purge_scale`."""
    stack = Stack()
    started_stack = stack.up()
    try:
        admin = AdminClient({"bootstrap.servers": stack.kafka.bootstrap_servers})
        rows = bench_purges(stack, admin, time.strftime("%H%M%S"))
    finally:
        if started_stack:
            stack.down()
    for r in rows:
        print(f"| {r.what} | {r.ours} | {r.reference} | {r.note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
