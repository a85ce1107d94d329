"""`make bench`, RetentionPolicy side: one operator at 0, 100 and 1,000 policies.

- runs per minute that one operator sustains at 1,000 policies (interval 60 s, one small
  topic each), and how late runs started, from the operator's own metrics;
- RSS and CPU of the operator's process tree (Python and, if started, Spark's JVM) at 0,
  100 and 1,000 policies;
- the reference: `kafka-delete-records.sh` started once per policy, as a cron job per
  policy would, timed on the same cluster.
- where planning in process stops paying: a batch planned in process and by Spark, at
  the sizes of the planning benchmark.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import time
import urllib.request

from bench.common import (
    REPO,
    Point,
    Row,
    cpu_seconds,
    delete_records,
    offsets_file,
    rss_mib,
    say,
    wait_for_leaders,
)
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.operator import OperatorProcess, free_port
from devstack.stack import Stack
from tests.helpers.commits import commit_groups
from tests.helpers.records import produce_to_each

INTERVAL_S = int(os.environ.get("BENCH_FLEET_INTERVAL", "60"))
FLEET = int(os.environ.get("BENCH_FLEET_POLICIES", "1000"))
STEP = min(100, FLEET)


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def make_topics(admin: AdminClient, bootstrap: str, names: list[str]) -> None:
    for i in range(0, len(names), 200):
        for f in admin.create_topics([NewTopic(n, 1, 1) for n in names[i : i + 200]]).values():
            f.result(timeout=120)
    wait_for_leaders(admin, names, 1)
    produce_to_each(bootstrap, [(n, 0) for n in names] * 20, b"x" * 50)


def apply_policies(stack: Stack, ns: str, topics: list[str], bootstrap: str) -> None:
    items = [
        {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RetentionPolicy",
            "metadata": {"name": f"p-{t.rsplit('-', 1)[1]}", "namespace": ns},
            "spec": {
                "cluster": {"bootstrapServers": bootstrap},
                "interval": f"{INTERVAL_S}s",
                "topics": {"names": [t]},
                "deleteConsumed": {"groups": [f"{t}-g"]},
            },
        }
        for t in topics
    ]
    for i in range(0, len(items), 250):
        body = {"apiVersion": "v1", "kind": "List", "items": items[i : i + 250]}
        stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def sample(operator: OperatorProcess, seconds: float) -> tuple[float, float]:
    """(RSS MiB at the end, CPU % of one core over the window)."""
    cpu0 = cpu_seconds(operator.pid)
    time.sleep(seconds)
    return rss_mib(operator.pid), 100 * (cpu_seconds(operator.pid) - cpu0) / seconds


def fleet_ticks(port: int, before: dict[str, float], intervals: int) -> list[float]:
    """When the run count, from `before`, first reached 1, 2, ... `intervals` + 1 whole
    fleets: a fleet's runs come in bursts, one an interval, so the time between these
    moments is what a tick of the schedule takes at this fleet size, wherever the
    bursts fall. Gives up (with what it has, at least two moments) after the count
    should have got there twice over."""
    base = before["kafka_retention_policy_start_lateness_seconds_count"]
    deadline = time.monotonic() + 2 * (intervals + 1) * INTERVAL_S
    moments: list[float] = []
    while len(moments) <= intervals:
        runs = scrape(port)["kafka_retention_policy_start_lateness_seconds_count"] - base
        while len(moments) <= intervals and runs >= FLEET * (len(moments) + 1):
            moments.append(time.monotonic())
        if time.monotonic() > deadline:
            if len(moments) < 2:
                raise RuntimeError(f"the fleet of {FLEET} ran {runs:.0f} times in the window")
            break
        time.sleep(0.5)
    return moments


def runs_a_minute(ticks: list[float]) -> float:
    """A whole fleet's runs for each tick between the first and the last moment."""
    return FLEET * (len(ticks) - 1) / (ticks[-1] - ticks[0]) * 60


def delete_records_once(bootstrap: str, topic: str, offset: int) -> float:
    path = offsets_file([(topic, 0, offset)])
    started = time.monotonic()
    delete_records(bootstrap, path)
    took = time.monotonic() - started
    os.unlink(path)
    return took


def bench_fleet(stack: Stack, admin: AdminClient, run: str) -> list[Row]:
    bootstrap = stack.kafka.bootstrap_servers
    stack.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds"))
    ns = f"bench-fleet-{run}"
    stack.kubectl("create", "namespace", ns)
    topics = [f"fleet{run}-{i:04d}" for i in range(FLEET)]
    say(f"creating {FLEET} one-partition topics for the policy fleet")
    make_topics(admin, bootstrap, topics)
    commit_groups(admin, dict.fromkeys(topics, 5))
    port = free_port()
    log = stack.dev / f"bench-operator-{run}.log"
    operator = OperatorProcess(
        stack, [ns], log, ("--metrics-port", str(port), "--metrics-addr", "127.0.0.1")
    ).start()
    rows = []
    try:
        say("operator with 0 policies")
        idle = sample(operator, 20)
        say(f"{STEP} policies")
        apply_policies(stack, ns, topics[:STEP], bootstrap)
        time.sleep(INTERVAL_S)
        hundred = sample(operator, INTERVAL_S)
        say(f"{FLEET} policies; measuring three intervals")
        apply_policies(stack, ns, topics[STEP:], bootstrap)
        time.sleep(INTERVAL_S)  # all have run once; the schedule settles
        before = scrape(port)
        cpu0, t0 = cpu_seconds(operator.pid), time.monotonic()
        commit_groups(admin, dict.fromkeys(topics, 10))  # every policy has work again
        ticks = fleet_ticks(port, before, 3)
        after = scrape(port)
        elapsed = time.monotonic() - t0
        thousand = (rss_mib(operator.pid), 100 * (cpu_seconds(operator.pid) - cpu0) / elapsed)
        runs = (
            after["kafka_retention_policy_start_lateness_seconds_count"]
            - before["kafka_retention_policy_start_lateness_seconds_count"]
        )
        sustained = runs_a_minute(ticks)
        late_sum = (
            after["kafka_retention_policy_start_lateness_seconds_sum"]
            - before["kafka_retention_policy_start_lateness_seconds_sum"]
        )
        over_30 = runs - (
            after['kafka_retention_policy_start_lateness_seconds_bucket{le="30.0"}']
            - before['kafka_retention_policy_start_lateness_seconds_bucket{le="30.0"}']
        )
        batches = (
            after["kafka_retention_batch_policies_count"]
            - before["kafka_retention_batch_policies_count"]
        )
        starts = [
            json.loads(
                stack.kubectl(
                    "get", "retentionpolicy", f"p-{t.rsplit('-', 1)[1]}", "-n", ns, "-o", "json"
                ).stdout
            )["status"]["lastRun"]["startedAt"]
            for t in topics[:: max(1, FLEET // 10)]
        ]
        say(f"sampled lastRun.startedAt: {starts}")
        say("reference: kafka-delete-records.sh once per policy")
        ref = [delete_records_once(bootstrap, t, 10) for t in topics[:5]]
        per_call = statistics.median(ref)
        rows.append(
            Row(
                f"RetentionPolicy runs sustained, {FLEET} policies "
                f"(interval {INTERVAL_S} s, 1 partition each)",
                f"{sustained:.0f} runs/min in {batches:.0f} batches; mean start "
                f"{late_sum / max(runs, 1):.1f} s after due, {over_30:.0f} runs > 30 s late",
                f"{60 / per_call:.0f} runs/min, one at a time (median {per_call:.2f} s a call)",
                "ours: the operator's lateness histogram counts runs; the rate is "
                f"{FLEET} runs a tick over the time between the first and the last of 4 "
                "moments its count passed a whole fleet, so it does not depend on where a "
                "window falls between ticks (all policies fall due together); "
                "reference: kafka-delete-records.sh per policy, as a cron job per policy would "
                "run it (JVM start each time)",
            )
        )
        windows = ((0, idle), (STEP, hundred), (FLEET, thousand))
        rows.append(
            Row(
                "operator footprint, idle and under load",
                f"idle (0 policies): {idle[0]:.0f} MiB, {idle[1]:.0f}% CPU; "
                f"{STEP} policies with nothing to cut: {hundred[0]:.0f} MiB, "
                f"{hundred[1]:.0f}% CPU; under load ({FLEET} policies, every one cutting): "
                f"{thousand[0]:.0f} MiB, {thousand[1]:.0f}% CPU",
                "-",
                "RSS of the operator's process tree (with Spark's JVM when it runs) at the end "
                "of each window; CPU as % of one core over the window: idle 20 s; "
                f"{STEP} policies one interval ({INTERVAL_S} s) after their first runs; under "
                f"load {elapsed:.0f} s, from the moment every group committed further (so "
                "each policy plans and deletes again) to the end of the rate's last tick. "
                "Small batches plan in process, so "
                "Spark's JVM does not start here.",
                points=tuple(
                    Point("footprint", series, n, value, "policies", "MiB; % of one core")
                    for n, (rss, cpu) in windows
                    for series, value in (("RSS (MiB)", rss), ("CPU (% of one core)", cpu))
                ),
            )
        )
    finally:
        stack.kubectl(
            "delete", "retentionpolicies", "--all", "-n", ns, "--timeout=120s", check=False
        )
        operator.stop()
        stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        for f in admin.delete_topics(topics).values():
            with contextlib.suppress(Exception):  # cleaning up a benchmark's topics
                f.result(timeout=120)
    return rows
