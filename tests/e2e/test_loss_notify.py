"""spec.notify (KIP-490 from outside Kafka): records that vanish before a watched group
read them are reported once, with their cause, whatever removed them. Every check reads
offsets from Kafka itself; the deletes that cause the losses are made with Kafka's own
admin client, not the operator's."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.commits import commit
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on, loss_events, ran, where
from tests.helpers.purges import apply_purge, cuts, purge_finished
from tests.helpers.records import HOUR, delete_records, old_then_new, produce
from tests.helpers.topics import NO_RETENTION
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack


def test_a_manual_delete_past_a_watched_group_is_reported_once_as_external(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 60, 1: 60})
    slow, done = f"{topic}-slow", f"{topic}-done"
    commit(kafka.bootstrap, slow, topic, {0: 10, 1: 10})
    commit(kafka.bootstrap, done, topic, {0: 60, 1: 60})
    apply_policy_on(stack, e2e_ns, "watch", topic, notify={"groups": [slow, done]})
    first = ran(stack, e2e_ns, "watch")
    assert condition(first, "DataLoss")["status"] == "False"
    assert first["status"]["unconsumedLostTotal"] == 0
    # Someone deletes past the slow group on partition 0, and past neither on partition 1.
    delete_records(kafka.admin, topic, {0: 35, 1: 5})
    after = ran(stack, e2e_ns, "watch", after=first["status"]["lastRun"]["completedAt"])
    (loss,) = after["status"]["losses"]
    assert where(loss) == (slow, topic, 0, 10, 35)
    assert (loss["records"], loss["cause"]) == (25, "external")
    assert after["status"]["unconsumedLostTotal"] == 25
    assert condition(after, "DataLoss")["status"] == "True"
    # A watch-only policy deleted nothing itself.
    assert log_starts(kafka.admin, topic, 2) == [35, 5]
    # The next run finds the same gap and does not report it again.
    again = ran(stack, e2e_ns, "watch", after=after["status"]["lastRun"]["completedAt"])
    assert again["status"]["unconsumedLostTotal"] == 25
    assert len(again["status"]["losses"]) == 1
    (event,) = loss_events(stack, e2e_ns, "watch")
    assert event.get("count", 1) == 1
    assert f"group {slow} lost 25 unread records of {topic}-0" in event["message"]
    assert "cause external" in event["message"]


def test_the_policys_own_max_retention_cut_is_reported_with_its_rule(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    stamps = old_then_new(20, 3 * HOUR)
    topic = kafka.topic(
        {0: 30}, NO_RETENTION, timestamps={0: stamps}, key=lambda p, i: b"order-%d" % i
    )
    idle = kafka.group_at(topic, "idle", {0: 5})
    apply_policy_on(stack, e2e_ns, "cap", topic, maxRetention="1h", notify={"groups": [idle]})
    obj = ran(stack, e2e_ns, "cap")
    assert log_starts(kafka.admin, topic, 1) == [20]
    (loss,) = obj["status"]["losses"]
    assert (loss["fromOffset"], loss["toOffset"], loss["cause"]) == (5, 20, "maxRetention")
    assert (loss["group"], loss["records"]) == (idle, 15)
    # The first keys it lost, read before the cut removed them.
    assert loss["sampleKeys"] == [{"offset": o, "key": f"order-{o}"} for o in range(5, 10)]
    # Kopf posts events from a queue after the run's status is written.
    eventually(lambda: bool(loss_events(stack, e2e_ns, "cap")), timeout=30, what="loss event")
    (event,) = loss_events(stack, e2e_ns, "cap")
    assert event.get("count", 1) == 1
    assert "cause maxRetention, keys 'order-5', 'order-6'" in event["message"]


def test_a_record_purge_past_a_watched_group_is_named_as_the_cause(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 50, 1: 50})
    slow = kafka.group_at(topic, "slow", {0: 10, 1: 10})
    apply_policy_on(stack, e2e_ns, "blame", topic, notify={"groups": [slow]})
    first = ran(stack, e2e_ns, "blame")
    apply_purge(
        stack,
        e2e_ns,
        "trim",
        partitions=cuts(topic, {0: 30}),
    )
    assert purge_finished(stack, e2e_ns, "trim")["status"]["phase"] == "Succeeded"
    # And someone else's delete on partition 1, which no purge explains.
    delete_records(kafka.admin, topic, {1: 20})
    after = ran(stack, e2e_ns, "blame", after=first["status"]["lastRun"]["completedAt"])
    found = {loss["partition"]: loss for loss in after["status"]["losses"]}
    assert (found[0]["cause"], found[0]["recordPurge"]) == ("recordPurge", f"{e2e_ns}/trim")
    assert (found[0]["fromOffset"], found[0]["toOffset"]) == (10, 30)
    assert (found[1]["cause"], "recordPurge" in found[1]) == ("external", False)
    assert log_starts(kafka.admin, topic, 2) == [30, 20]


def test_records_aged_out_by_the_brokers_retention_are_reported_with_that_cause(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    # A topic that stopped receiving data: every record is older than its retention.ms, so
    # the broker deletes them all (the active segment too) at its next retention check.
    topic = kafka.make_topic(partitions=1, config={"retention.ms": str(HOUR)})
    slow = f"{topic}-slow"
    apply_policy_on(stack, e2e_ns, "aged", topic, notify={"groups": [slow]})
    first = ran(stack, e2e_ns, "aged")
    now = int(time.time() * 1000)
    produce(
        kafka.bootstrap, topic, {0: 30}, timestamps={0: [now - 3 * HOUR + i for i in range(30)]}
    )
    commit(kafka.bootstrap, slow, topic, {0: 5})
    deadline = time.monotonic() + 60
    while log_starts(kafka.admin, topic, 1) != [30]:
        assert time.monotonic() < deadline, "the broker's retention did not delete the records"
        time.sleep(0.5)
    obj = ran(stack, e2e_ns, "aged", after=first["status"]["lastRun"]["completedAt"])
    (loss,) = obj["status"]["losses"]
    assert (loss["group"], loss["fromOffset"], loss["toOffset"]) == (slow, 5, 30)
    assert loss["cause"] == "brokerRetention"


def test_at_risk_is_raised_before_retention_reaches_unread_records(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    # The first 20 records reach the 2h retention in about 10 minutes; the rest are new.
    stamps = old_then_new(20, 2 * HOUR - 10 * 60_000)
    topic = kafka.topic({0: 30}, {"retention.ms": str(2 * HOUR)}, timestamps={0: stamps})
    behind, current = f"{topic}-behind", f"{topic}-current"
    commit(kafka.bootstrap, behind, topic, {0: 5})
    commit(kafka.bootstrap, current, topic, {0: 25})
    apply_policy_on(stack, e2e_ns, "risk", topic, notify={"groups": [behind, current]})
    obj = ran(stack, e2e_ns, "risk")
    risk = condition(obj, "AtRisk")
    assert risk["status"] == "True", risk
    (entry,) = obj["status"]["atRisk"]
    assert (entry["group"], entry["committedOffset"], entry["by"]) == (behind, 5, "brokerRetention")
    # 10 minutes left, known to a quarter of the default 1h window.
    assert entry["withinSeconds"] == 900
    # Nothing is lost yet, and nothing was deleted.
    assert obj["status"]["losses"] == []
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_a_restarted_operator_reports_nothing_twice(
    stack: Stack, namespace: str, kafka: Kafka, tmp_path: Path
) -> None:
    # Its own operator (the namespace is not the session operator's), stopped and started.
    topic = kafka.topic({0: 60})
    slow = kafka.group_at(topic, "slow", {0: 10})
    first_operator = OperatorProcess(stack, [namespace], tmp_path / "first.log").start()
    try:
        apply_policy_on(stack, namespace, "watch", topic, notify={"groups": [slow]})
        first = ran(stack, namespace, "watch")
        delete_records(kafka.admin, topic, {0: 35})
        found = ran(stack, namespace, "watch", after=first["status"]["lastRun"]["completedAt"])
        assert found["status"]["unconsumedLostTotal"] == 25
        # Kopf posts events from a queue after the run's status is written: let the first
        # operator post it before it stops (a stop in between would drop it).
        eventually(
            lambda: len(loss_events(stack, namespace, "watch")) == 1,
            timeout=30,
            what="the first operator's loss event",
        )
    finally:
        assert first_operator.stop() == 0
    second_operator = OperatorProcess(stack, [namespace], tmp_path / "second.log").start()
    try:
        later = ran(stack, namespace, "watch", after=found["status"]["lastRun"]["completedAt"])
    finally:
        # Deleted while an operator can still remove its finalizer.
        stack.kubectl("delete", "retentionpolicy", "watch", "-n", namespace, "--timeout=60s")
        assert second_operator.stop() == 0
    assert later["status"]["unconsumedLostTotal"] == 25
    assert len(later["status"]["losses"]) == 1
    assert len(loss_events(stack, namespace, "watch")) == 1
