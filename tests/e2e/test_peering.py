"""Two replicas with --peering on the real API server and Kafka: one acts, the other
stands by; SIGKILL the acting one and the standby takes over. Every purge and every
policy run ends once, with its status written by whichever replica acts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.commits import commit
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.kube import events, get
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on
from tests.helpers.purges import apply_purge, purge_finished
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack

PARTITIONS = 4
LIFETIME_S = 10


def replica(stack: Stack, ns: str, log: Path) -> OperatorProcess:
    return OperatorProcess(
        stack, [ns], log, ("--peering", "kr-ha", "--peering-lifetime", str(LIFETIME_S))
    ).start()


def peers(stack: Stack, ns: str) -> dict[str, Any]:
    done = stack.kubectl("get", "kopfpeering", "kr-ha", "-n", ns, "-o", "json", check=False)
    if done.returncode:
        return {}
    status: dict[str, Any] = json.loads(done.stdout).get("status") or {}
    return {k: v for k, v in status.items() if v}


def purge(stack: Stack, ns: str, name: str, topic: str, offset: int) -> None:
    apply_purge(stack, ns, name, partitions=[{"topic": topic, "partition": 0, "offset": offset}])


def started_events(stack: Stack, ns: str, name: str) -> int:
    return sum(
        int(e.get("count") or 1) for e in events(stack, ns, name) if e["reason"] == "PurgeStarted"
    )


def test_the_standby_replica_takes_over_when_the_acting_one_is_killed(
    stack: Stack, namespace: str, kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic(dict.fromkeys(range(PARTITIONS), 100))
    commit(kafka.bootstrap, "reader", topic, dict.fromkeys(range(PARTITIONS), 20))
    first = replica(stack, namespace, tmp_path / "first.log")
    second = replica(stack, namespace, tmp_path / "second.log")
    try:
        # Kopf writes each replica into the peering object as it starts and every 1-5 s
        # after, and drops one unseen for LIFETIME_S: on a loaded machine both were not
        # seen together within 30 s once.
        eventually(
            lambda: len(peers(stack, namespace)) == 2,
            90,
            "both replicas in kr-ha",
            show=lambda: peers(stack, namespace),
        )
        apply_policy_on(
            stack, namespace, "ha", topic, interval="10s", deleteConsumed={"groups": ["reader"]}
        )
        eventually(lambda: log_starts(kafka.admin, topic, PARTITIONS) == [20] * 4, 60, "first cut")
        purge(stack, namespace, "before-kill", topic, 30)
        assert purge_finished(stack, namespace, "before-kill")["status"]["phase"] == "Succeeded"
        # The older replica acts; the younger stands by and has run nothing.
        assert "acting: running" in first.log.read_text()
        assert "acting: running" not in second.log.read_text()
        assert "before-kill" not in second.log.read_text()

        first.kill()
        killed_at = time.monotonic()
        commit(kafka.bootstrap, "reader", topic, dict.fromkeys(range(PARTITIONS), 60))
        # Its record lives on for LIFETIME_S; then the standby holds 5 s, then runs.
        eventually(
            lambda: log_starts(kafka.admin, topic, PARTITIONS) == [60] * 4, 90, "cut after takeover"
        )
        assert time.monotonic() - killed_at >= LIFETIME_S - 2, "took over while the peer lived"
        assert "acting: running 1 RetentionPolicies" in second.log.read_text()
        purge(stack, namespace, "after-kill", topic, 70)
        assert purge_finished(stack, namespace, "after-kill")["status"]["phase"] == "Succeeded"
        assert log_starts(kafka.admin, topic, PARTITIONS) == [70, 60, 60, 60]
        # Each purge began once: the takeover re-listed the finished one and left it be.
        assert started_events(stack, namespace, "before-kill") == 1
        assert started_events(stack, namespace, "after-kill") == 1
        ready = condition(get(stack, "retentionpolicy", namespace, "ha"), "Ready")
        assert ready["status"] == "True", ready
    finally:
        stack.kubectl(
            "delete", "retentionpolicy", "ha", "-n", namespace, "--timeout=60s", check=False
        )
        for proc in (first, second):
            if proc.running():
                assert proc.stop() == 0, proc.tail()
    # A replica that stops cleanly takes its record out at once.
    assert peers(stack, namespace) == {}
