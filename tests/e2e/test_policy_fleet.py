"""Many RetentionPolicies in one operator: every one runs on time, cuts right, and says so.

The operator is the session's (tests/e2e/conftest.py); the policies live in the test's own
namespace and are deleted at its end."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from devstack.stack import Stack
from tests.helpers.commits import commit_groups
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.policies import policy
from tests.helpers.records import produce_to_each

# Serial, paired (make test runs each test on a worker of its own beside the soak alone): it
# times 100 policies' rounds; the parallel phase's load on 2 cores would decide the result,
# the soak's and the two-policy test's do not (30 s of slack on a 20 s interval).
pytestmark = [pytest.mark.stack, pytest.mark.serial, pytest.mark.paired]

POLICIES = 100
INTERVAL_S = 20
# The operator's stated slack for a 20 s interval (services.scheduler.slack_for): 30 s.
SLACK_S = 30


def starts_by_policy(stack: Stack, ns: str) -> dict[str, dict[str, Any]]:
    done = stack.kubectl("get", "retentionpolicies", "-n", ns, "-o", "json")
    return {o["metadata"]["name"]: o.get("status", {}) for o in json.loads(done.stdout)["items"]}


def test_a_hundred_policies_each_run_twice_on_time_and_cut_at_their_group(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    prefix = f"fleet-{e2e_ns[-6:]}"
    topics = [f"{prefix}-{i:03d}" for i in range(POLICIES)]
    futures = kafka.admin.create_topics([NewTopic(t, 1, 1) for t in topics])
    for f in futures.values():
        f.result(timeout=60)
    produce_to_each(kafka.bootstrap, [(t, 0) for t in topics] * 30, b"v" * 100)
    first_cut = {t: 1 + i % 10 for i, t in enumerate(topics)}
    commit_groups(kafka.admin, {t: first_cut[t] for t in topics})
    applied = time.monotonic()
    body = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            policy(e2e_ns, i, t, f"{t}-g", kafka.bootstrap, INTERVAL_S)
            for i, t in enumerate(topics)
        ],
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))

    # Every policy runs once: each log start reaches its group's commit.
    seen: dict[str, set[str]] = {f"p{i:03d}": set() for i in range(POLICIES)}
    advanced_at = ""
    first_round = 0.0
    deadline = applied + 2 * INTERVAL_S + 2 * SLACK_S
    while time.monotonic() < deadline:
        for name, status in starts_by_policy(stack, e2e_ns).items():
            started = status.get("lastRun", {}).get("startedAt")
            if started:
                seen[name].add(started)
        if not advanced_at and all(seen.values()):
            first_round = time.monotonic() - applied
            assert [log_starts(kafka.admin, t, 1)[0] for t in topics] == [
                first_cut[t] for t in topics
            ]
            # Every group reads on: the next run must follow it.
            commit_groups(kafka.admin, {t: first_cut[t] + 10 for t in topics})
            # startedAt has whole seconds: a run started in a later second began after this.
            advanced_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
        if advanced_at and all(max(s) >= advanced_at for s in seen.values()):
            break
        time.sleep(2)
    assert advanced_at, f"not every policy ran once within {deadline - applied:.0f}s"
    assert first_round < INTERVAL_S + SLACK_S
    behind = sorted(n for n, s in seen.items() if len(s) < 2 or max(s) < advanced_at)
    assert not behind, f"{len(behind)} policies did not run again in time: {behind[:10]}"
    assert [log_starts(kafka.admin, t, 1)[0] for t in topics] == [first_cut[t] + 10 for t in topics]
    statuses = starts_by_policy(stack, e2e_ns)
    for name, status in statuses.items():
        conds = {c["type"]: c for c in status["conditions"]}
        assert conds["Ready"]["status"] == "True", (name, conds["Ready"])
        assert conds["OnSchedule"]["status"] == "True", (name, conds["OnSchedule"])
    stack.kubectl("delete", "retentionpolicies", "--all", "-n", e2e_ns, "--timeout=60s")
    for f in kafka.admin.delete_topics(topics).values():
        f.result(timeout=60)


def test_an_unreachable_cluster_delays_no_policy_of_another(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = f"fleet-up-{e2e_ns[-6:]}"
    kafka.admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
    produce_to_each(kafka.bootstrap, [(topic, 0)] * 30, b"v")
    commit_groups(kafka.admin, {topic: 10})
    down = policy(e2e_ns, 0, "anything", "g", "127.0.0.1:1", INTERVAL_S)  # nothing listens there
    up = policy(e2e_ns, 1, topic, f"{topic}-g", kafka.bootstrap, INTERVAL_S)
    stack.kubectl(
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [down, up]}),
    )
    deadline = time.monotonic() + INTERVAL_S + SLACK_S + 30
    starts: set[str] = set()
    while time.monotonic() < deadline and len(starts) < 2:
        status = starts_by_policy(stack, e2e_ns).get("p001", {})
        if status.get("lastRun", {}).get("startedAt"):
            starts.add(status["lastRun"]["startedAt"])
            commit_groups(kafka.admin, {topic: 10 + 5 * len(starts)})
        time.sleep(1)
    assert len(starts) >= 2, "the reachable cluster's policy did not run twice in time"
    assert log_starts(kafka.admin, topic, 1)[0] >= 10
    ready = {c["type"]: c for c in starts_by_policy(stack, e2e_ns)["p000"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KafkaUnavailable")
    stack.kubectl("delete", "retentionpolicies", "--all", "-n", e2e_ns, "--timeout=60s")
    kafka.admin.delete_topics([topic])[topic].result(timeout=60)
