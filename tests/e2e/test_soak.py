"""Soak: many RetentionPolicies and RecordPurges against one cluster while every group
reads on, with an independent sampler checking the safety invariant all along.

`make test` runs the short form (SOAK_SECONDS=60, 100 policies, 25 purges); `make soak`
the long one (15 minutes, 200 policies, 50 purges) and writes SOAK.md. The operator is a
process of its own, so its CPU and memory can be read from /proc.

The invariant, read the way that makes it exact: the sampler reads every log start first,
then every group's commit. Commits only move forward, and a cut never passes the commit
the operator read, which is no later than the one read after it: so a log start past the
commit read after it is a record deleted before its group read it."""

from __future__ import annotations

import json
import os
import random
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition as Partition
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.purge_states import FINAL_PHASES, Phase
from tests.helpers.commits import commit_groups
from tests.helpers.kafka import Kafka
from tests.helpers.kube import create_namespace
from tests.helpers.policies import policy
from tests.helpers.purges import before
from tests.helpers.records import produce_to_each

# Serial, paired (make test runs it beside the fleet file's two tests alone): it runs 60 s
# of 100 policies and 25 purges, sampled for invariants and timing.
pytestmark = [pytest.mark.stack, pytest.mark.serial, pytest.mark.paired]

SECONDS = float(os.environ.get("SOAK_SECONDS", "60"))
POLICIES = int(os.environ.get("SOAK_POLICIES", "100"))
PURGES = int(os.environ.get("SOAK_PURGES", "25"))
REPORT = os.environ.get("SOAK_REPORT")  # a markdown file to write, for `make soak`
INTERVAL_S = 15
SAMPLE_S = 3.0
COMMIT_READERS = 8
MOVE_S = 5.0


@dataclass
class Samples:
    rounds: int = 0
    failed_rounds: int = 0
    violations: list[str] = field(default_factory=list)
    # (seconds since start, CPU seconds used, resident MiB) of the operator process
    usage: list[tuple[float, float, float]] = field(default_factory=list)


def log_starts(admin: AdminClient, topics: list[str]) -> dict[str, int]:
    futures = admin.list_offsets(
        {TopicPartition(t, 0): OffsetSpec.earliest() for t in topics},  # type: ignore[no-untyped-call]
        request_timeout=15,
    )
    return {tp.topic: f.result(timeout=20).offset for tp, f in futures.items()}


def commits(reader: KafkaAdmin, pool: ThreadPoolExecutor, topics: list[str]) -> dict[str, int]:
    """Each topic's group commit (-1 for none), read as the operator reads it: not with
    the AdminClient, which a moving coordinator crashes (adapters.kafka.committed).

    Read COMMIT_READERS groups at a time (the sampler's pool): one at a time, each
    through a consumer handle of its own, 100 groups took about 3.5 s on a busy 2-core
    machine, and a CI run got 9 sampler rounds where the test asks for 10."""

    def one(t: str) -> tuple[str, int]:
        got = reader.committed(f"{t}-g", [Partition(t, 0)])[Partition(t, 0)]
        return t, -1 if got is None else got

    return dict(pool.map(one, topics))


def usage(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) and resident MiB of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    rss_kib = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    return cpu, rss_kib / 1024


def sampler(
    admin: AdminClient,
    bootstrap: str,
    topics: list[str],
    pid: int,
    stop: threading.Event,
    out: Samples,
) -> None:
    reader = KafkaAdmin(bootstrap)
    started = time.monotonic()
    with ThreadPoolExecutor(COMMIT_READERS) as pool:
        while not stop.wait(SAMPLE_S):
            try:
                starts = log_starts(admin, topics)
                committed = commits(reader, pool, topics)
            except (KafkaException, KafkaUnavailable, TimeoutError):
                out.failed_rounds += 1
                continue
            out.rounds += 1
            for t in topics:
                if starts[t] > max(committed[t], 0):
                    out.violations.append(f"{t}: log start {starts[t]} past commit {committed[t]}")
            cpu, rss = usage(pid)
            out.usage.append((time.monotonic() - started, cpu, rss))


def mover(bootstrap: str, admin: AdminClient, topics: list[str], stop: threading.Event) -> None:
    """Every group reads on: a few records more, then a commit a little further."""
    produced = dict.fromkeys(topics, 30)
    read = dict.fromkeys(topics, 5)
    rng = random.Random(7)  # noqa: S311 - a repeatable workload, not a secret
    while not stop.wait(MOVE_S):
        movers = rng.sample(topics, k=max(1, len(topics) // 3))
        produce_to_each(bootstrap, [(t, 0) for t in movers] * 3, b"m" * 50)
        for t in movers:
            produced[t] += 3
            read[t] = min(produced[t], read[t] + rng.randint(1, 4))
        commit_groups(admin, {t: read[t] for t in movers})


def purge(ns: str, i: int, topic: str, bootstrap: str, rng: random.Random) -> dict[str, Any]:
    """Half cut at the group's commit, half at an offset the group protects."""
    spec: dict[str, Any] = {"cluster": {"bootstrapServers": bootstrap}}
    if i % 2:
        spec["topics"] = before(topic, committedBy=[f"{topic}-g"])
    else:
        # At most 30: every topic holds at least 30 records (past the high watermark fails).
        spec["partitions"] = [{"topic": topic, "partition": 0, "offset": rng.randint(1, 30)}]
        spec["protectGroups"] = [f"{topic}-g"]
    return {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": f"purge-{i:03d}", "namespace": ns},
        "spec": spec,
    }


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def percentiles(values: list[float]) -> str:
    if not values:
        return "none"
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values
    pick = (lambda q: cuts[q - 1]) if len(values) > 1 else (lambda q: values[0])
    return f"p50 {pick(50):.1f} s, p90 {pick(90):.1f} s, p99 {pick(99):.1f} s (n={len(values)})"


@pytest.fixture
def soak_ns(stack: Stack) -> Iterator[str]:
    # Not e2e-*: the session's operator must not act here; this test runs its own.
    ns = f"soak-{uuid.uuid4().hex[:6]}"
    create_namespace(stack, ns)
    yield ns
    stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.mark.timeout(SECONDS + 600)
def test_soak_never_deletes_unread_records_and_every_run_and_purge_ends(
    stack: Stack, soak_ns: str, kafka: Kafka, tmp_path: Path
) -> None:
    topics = [f"{soak_ns}-{i:03d}" for i in range(POLICIES)]
    for f in kafka.admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        f.result(timeout=60)
    produce_to_each(kafka.bootstrap, [(t, 0) for t in topics] * 30, b"v" * 100)
    commit_groups(kafka.admin, dict.fromkeys(topics, 5))
    operator = OperatorProcess(stack, [soak_ns], tmp_path / "operator.log").start()
    stop = threading.Event()
    samples = Samples()
    errors: list[BaseException] = []

    def guarded(work: Any, *args: Any) -> threading.Thread:
        def run() -> None:
            try:
                work(*args)
            except BaseException as err:  # a dead sampler would check nothing
                errors.append(err)

        return threading.Thread(target=run)

    threads = [
        guarded(sampler, kafka.admin, kafka.bootstrap, topics, operator.pid, stop, samples),
        guarded(mover, kafka.bootstrap, kafka.admin, topics, stop),
    ]
    rng = random.Random(11)  # noqa: S311 - a repeatable workload, not a secret
    try:
        for thread in threads:
            thread.start()
        policies = [
            policy(soak_ns, i, t, f"{t}-g", kafka.bootstrap, INTERVAL_S)
            for i, t in enumerate(topics)
        ]
        stack.kubectl(
            "apply",
            "-f",
            "-",
            stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": policies}),
        )
        started = time.monotonic()
        for i in range(PURGES):  # spread over the soak
            time.sleep(SECONDS / PURGES)
            body = purge(soak_ns, i, rng.choice(topics), kafka.bootstrap, rng)
            stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
        time.sleep(max(0.0, SECONDS - (time.monotonic() - started)))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)

    deadline = time.monotonic() + 120
    while True:
        purges = json.loads(
            stack.kubectl("get", "recordpurges", "-n", soak_ns, "-o", "json").stdout
        )
        if all(p.get("status", {}).get("phase") in FINAL_PHASES for p in purges["items"]):
            break
        assert time.monotonic() < deadline, "purges still running 2 minutes after the soak"
        time.sleep(2)
    got = json.loads(stack.kubectl("get", "retentionpolicies", "-n", soak_ns, "-o", "json").stdout)
    operator.stop()

    assert errors == []
    assert samples.violations == [], samples.violations[:10]
    assert samples.rounds >= SECONDS / SAMPLE_S / 2, f"only {samples.rounds} sampler rounds"
    phases = [p["status"]["phase"] for p in purges["items"]]
    assert phases == [Phase.SUCCEEDED] * PURGES, phases
    runs = [
        _time(p["status"]["lastRun"]["completedAt"]) - _time(p["status"]["lastRun"]["startedAt"])
        for p in got["items"]
        if p.get("status", {}).get("lastRun", {}).get("completedAt")
    ]
    assert len(runs) == POLICIES, f"{POLICIES - len(runs)} policies never completed a run"
    for p in got["items"]:
        conditions = {c["type"]: c for c in p["status"]["conditions"]}
        assert conditions["Ready"]["status"] == "True", (p["metadata"]["name"], conditions)
    purge_latency = [
        _time(p["status"]["completedAt"]) - _time(p["metadata"]["creationTimestamp"])
        for p in purges["items"]
    ]
    every = samples.usage[:: max(1, len(samples.usage) // 12)]
    report = [
        f"soak: {POLICIES} policies (every {INTERVAL_S} s), {PURGES} purges, {SECONDS:.0f} s,"
        f" {samples.rounds} sampler rounds ({samples.failed_rounds} unreadable), "
        f"{len(samples.violations)} violations",
        f"purge latency (created to completed): {percentiles(purge_latency)}",
        f"policy run duration (last run): {percentiles(runs)}",
        "operator over time (s since start, CPU s used, RSS MiB): "
        + ", ".join(f"({t:.0f}, {c:.1f}, {m:.0f})" for t, c, m in every),
    ]
    print("\n".join(report))
    if REPORT:
        Path(REPORT).write_text(
            "# Soak\n\nWritten by `make soak` "
            f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores).\n\n"
            + "\n".join(f"- {line}" for line in report)
            + "\n"
        )
    for f in kafka.admin.delete_topics(topics).values():
        f.result(timeout=60)
