"""RetentionPolicy end to end: the operator process plans with Spark and deletes on the
real 3-broker cluster; every check reads log start offsets from Kafka itself."""

from __future__ import annotations

import time

import pytest

from devstack.stack import Stack
from tests.helpers.argocd import argocd_health
from tests.helpers.commits import commit
from tests.helpers.conditions import condition, with_reason
from tests.helpers.kafka import Kafka, read_by_fast_and_slow
from tests.helpers.kube import NOWHERE, apply, apply_refused, events, get, resource, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy, apply_policy_on, ran
from tests.helpers.records import HOUR, hours_ago_on_the_hour, old_then_new, produce, utc
from tests.helpers.topics import NO_RETENTION
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack


def test_log_start_follows_the_slower_group_and_a_group_without_commit_protects(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, fast, slow = read_by_fast_and_slow(kafka)
    apply_policy_on(stack, e2e_ns, "trim", topic, deleteConsumed={"groups": [fast, slow]})
    eventually(
        lambda: log_starts(kafka.admin, topic, 3) == [40, 60, 0],
        what="first cut",
        show=lambda: (
            log_starts(kafka.admin, topic, 3),
            get(stack, "retentionpolicy", e2e_ns, "trim").get("status"),
        ),
    )
    obj = ran(stack, e2e_ns, "trim")
    assert condition(obj, "Ready")["status"] == "True"
    assert obj["status"]["recordsDeletedTotal"] >= 100
    # The slow group moves on, and reaches partition 2: the log start follows.
    commit(kafka.bootstrap, slow, topic, {0: 85, 1: 75, 2: 50})
    eventually(
        lambda: log_starts(kafka.admin, topic, 3) == [85, 75, 50],
        timeout=60,
        what="cut following the slower group",
    )
    obj = ran(stack, e2e_ns, "trim", obj["status"]["lastRun"]["completedAt"])
    table = stack.kubectl("get", "retentionpolicy", "trim", "-n", e2e_ns).stdout
    header, row = table.split("\n")[:2]
    assert header.split()[:6] == ["NAME", "READY", "ON", "SCHEDULE", "TOPICS", "LAST"]
    assert row.split()[:4] == ["trim", "True", "True", "1"]
    assert {e["reason"] for e in events(stack, e2e_ns, "trim")} >= {"RecordsDeleted"}
    assert argocd_health(obj)[0] == "Healthy"  # what Argo CD shows (manifests/argocd)


def test_min_retention_holds_back_a_cut_on_recent_records(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 30}, NO_RETENTION, timestamps={0: old_then_new(20, 2 * HOUR)})
    group = kafka.group_at(topic, "reader", {0: 30})
    apply_policy_on(
        stack, e2e_ns, "young", topic, deleteConsumed={"groups": [group], "minRetention": "30m"}
    )
    ran(stack, e2e_ns, "young")
    assert log_starts(kafka.admin, topic, 1) == [20]


def test_delete_before_cuts_regardless_of_groups(stack: Stack, e2e_ns: str, kafka: Kafka) -> None:
    base = hours_ago_on_the_hour(48)
    topic = kafka.topic({0: 10}, NO_RETENTION, timestamps={0: [base + h * HOUR for h in range(10)]})
    cut = utc(base + 6 * HOUR)
    never = f"{topic}-never-read"  # a deleteConsumed group with no commits at all
    apply_policy_on(
        stack, e2e_ns, "before", topic, deleteBefore=cut, deleteConsumed={"groups": [never]}
    )
    obj = ran(stack, e2e_ns, "before")
    assert log_starts(kafka.admin, topic, 1) == [6]
    losses = obj["status"]["lastRun"]["unconsumedDeleted"]
    assert losses == [{"group": never, "topic": topic, "records": 6}]


def test_max_retention_cuts_past_an_idle_group_and_says_who_lost_what(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 30}, NO_RETENTION, timestamps={0: old_then_new(20, 3 * HOUR)})
    idle = kafka.group_at(topic, "idle", {0: 5})
    apply_policy_on(
        stack, e2e_ns, "cap", topic, deleteConsumed={"groups": [idle]}, maxRetention="1h"
    )
    obj = ran(stack, e2e_ns, "cap")
    assert log_starts(kafka.admin, topic, 1) == [20]
    assert obj["status"]["lastRun"]["unconsumedDeleted"] == [
        {"group": idle, "topic": topic, "records": 15}
    ]
    warnings = [
        e["message"]
        for e in events(stack, e2e_ns, "cap")
        if e["reason"] == "UnconsumedRecordsDeleted"
    ]
    assert any(f"group {idle} lost 15 unread records of {topic}" in m for m in warnings)


def test_dry_run_changes_nothing(stack: Stack, e2e_ns: str, kafka: Kafka) -> None:
    topic = kafka.topic({0: 50, 1: 50})
    group = kafka.group_at(topic, "g", {0: 50, 1: 20})
    apply_policy_on(
        stack, e2e_ns, "preview", topic, dryRun=True, deleteConsumed={"groups": [group]}
    )
    obj = ran(stack, e2e_ns, "preview")
    assert log_starts(kafka.admin, topic, 2) == [0, 0]
    assert "dry run: would delete 70 records" in condition(obj, "Ready")["message"]
    assert obj["status"]["lastRun"]["recordsDeleted"] == 0


def test_new_topic_matching_the_pattern_is_picked_up_and_compact_only_is_skipped(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    first = kafka.make_topic(partitions=1)
    prefix = first.rsplit("-", 1)[0]
    produce(kafka.bootstrap, first, {0: 20})
    compacted = kafka.make_topic(partitions=1, config={"cleanup.policy": "compact"})
    apply_policy(stack, e2e_ns, "pattern", topics={"pattern": f"{prefix}-.*"}, maxRetention="1ms")
    obj = ran(stack, e2e_ns, "pattern")
    assert log_starts(kafka.admin, first, 1) == [20]
    notes = {t["name"]: t.get("note", "") for t in obj["status"]["topics"]}
    assert "cleanup.policy=compact" in notes[compacted]
    later = kafka.make_topic(partitions=1)
    assert later.startswith(prefix)
    produce(kafka.bootstrap, later, {0: 7})
    eventually(
        lambda: log_starts(kafka.admin, later, 1) == [7],
        timeout=60,
        what="topic created after the policy",
    )


def test_invalid_policies_are_refused_at_apply_time_or_named_in_a_condition(
    stack: Stack, e2e_ns: str
) -> None:
    spec = {"cluster": NOWHERE, "topics": {"names": ["t"]}}
    stderr = apply_refused(stack, resource("RetentionPolicy", "no-rule", e2e_ns, spec=spec))
    assert "at least one deleting rule" in stderr
    apply_policy(stack, e2e_ns, "bad-regex", topics={"pattern": "(unclosed"}, maxRetention="1d")
    obj = wait_for(stack, "retentionpolicy", e2e_ns, "bad-regex", with_reason("InvalidSpec"))
    assert "spec.topics.pattern" in condition(obj, "Ready")["message"]
    assert get(stack, "retentionpolicy", e2e_ns, "bad-regex")["status"].get("lastRun") is None


def test_a_policy_left_with_an_earlier_versions_finalizer_can_still_be_deleted(
    stack: Stack, e2e_ns: str
) -> None:
    spec = {
        "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
        "topics": {"names": ["nothing-here"]},
        "maxRetention": "7d",
    }
    body = resource("RetentionPolicy", "old", e2e_ns, spec=spec)
    body["metadata"]["finalizers"] = ["kafka-retention.io/finalizer"]
    apply(stack, body)
    stack.kubectl("delete", "retentionpolicy", "old", "-n", e2e_ns, "--wait=false")
    eventually(
        lambda: (
            stack.kubectl("get", "retentionpolicy", "old", "-n", e2e_ns, check=False).returncode
            != 0
        ),
        timeout=30,
        what="the policy was deleted",
    )


def test_a_peer_naming_the_same_cluster_another_way_still_holds_a_cut_back(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    """The overlap rule compares clusters by Kafka's own id: a policy that names the
    brokers in another order is on the same cluster, and its protected group holds back
    a deleteBefore that would otherwise take everything."""
    base = hours_ago_on_the_hour(48)
    topic = kafka.topic({0: 20}, NO_RETENTION, timestamps={0: [base + i for i in range(20)]})
    reader = kafka.group_at(topic, "reader", {0: 10})
    apply_policy_on(stack, e2e_ns, "guard", topic, deleteConsumed={"groups": [reader]})
    eventually(lambda: log_starts(kafka.admin, topic, 1) == [10], what="the guard's own cut")
    reordered = ",".join(reversed(kafka.bootstrap.split(",")))
    assert reordered != kafka.bootstrap
    cut = utc(int(time.time() * 1000) - HOUR)
    apply_policy_on(
        stack, e2e_ns, "sweep", topic, cluster={"bootstrapServers": reordered}, deleteBefore=cut
    )
    obj = ran(stack, e2e_ns, "sweep")
    obj = ran(stack, e2e_ns, "sweep", obj["status"]["lastRun"]["completedAt"])
    assert log_starts(kafka.admin, topic, 1) == [10]
    (summary,) = obj["status"]["topics"]
    assert f"overlaps with policy {e2e_ns}/guard" in summary["note"]
