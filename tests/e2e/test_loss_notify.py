"""spec.notify (KIP-490 from outside Kafka): records that vanish before a watched group
read them are reported once, with their cause, whatever removed them. Every check reads
offsets from Kafka itself; the deletes that cause the losses are made with Kafka's own
admin client, not the operator's."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient

from devstack.stack import Stack
from tests.conftest import TopicFactory
from tests.e2e.test_retention_policy import HOUR, NO_RETENTION, apply_policy, condition, ran
from tests.support import commit, events, log_starts, produce


def delete_records(admin: AdminClient, topic: str, cuts: dict[int, int]) -> None:
    """A manual DeleteRecords, as a person with kafka-delete-records.sh would."""
    futures = admin.delete_records([KTP(topic, p, o) for p, o in cuts.items()])
    for fut in futures.values():
        fut.result(timeout=30)


def loss_events(stack: Stack, ns: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events(stack, ns, name) if e["reason"] == "UnconsumedRecordsDeleted"]


@pytest.mark.stack
def test_a_manual_delete_past_a_watched_group_is_reported_once_as_external(
    stack: Stack, e2e_ns: str, admin: AdminClient, bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=2)
    produce(bootstrap, topic, {0: 60, 1: 60})
    slow, done = f"{topic}-slow", f"{topic}-done"
    commit(bootstrap, slow, topic, {0: 10, 1: 10})
    commit(bootstrap, done, topic, {0: 60, 1: 60})
    apply_policy(stack, e2e_ns, "watch", topics={"names": [topic]}, notify={"groups": [slow, done]})
    first = ran(stack, e2e_ns, "watch")
    assert condition(first, "DataLoss")["status"] == "False"
    assert first["status"]["unconsumedLostTotal"] == 0
    # Someone deletes past the slow group on partition 0, and past neither on partition 1.
    delete_records(admin, topic, {0: 35, 1: 5})
    after = ran(stack, e2e_ns, "watch", after=first["status"]["lastRun"]["completedAt"])
    (loss,) = after["status"]["losses"]
    assert {k: loss[k] for k in ("group", "topic", "partition", "fromOffset", "toOffset")} == {
        "group": slow,
        "topic": topic,
        "partition": 0,
        "fromOffset": 10,
        "toOffset": 35,
    }
    assert (loss["records"], loss["cause"]) == (25, "external")
    assert after["status"]["unconsumedLostTotal"] == 25
    assert condition(after, "DataLoss")["status"] == "True"
    # A watch-only policy deleted nothing itself.
    assert log_starts(admin, topic, 2) == [35, 5]
    # Two more runs: the same gap is not reported again.
    again = ran(stack, e2e_ns, "watch", after=after["status"]["lastRun"]["completedAt"])
    again = ran(stack, e2e_ns, "watch", after=again["status"]["lastRun"]["completedAt"])
    assert again["status"]["unconsumedLostTotal"] == 25
    assert len(again["status"]["losses"]) == 1
    (event,) = loss_events(stack, e2e_ns, "watch")
    assert event.get("count", 1) == 1
    assert f"group {slow} on {topic}-0" in event["message"]
    assert "cause external" in event["message"]


@pytest.mark.stack
def test_the_policys_own_max_retention_cut_is_reported_with_its_rule(
    stack: Stack, e2e_ns: str, admin: AdminClient, bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1, config=NO_RETENTION)
    now = int(time.time() * 1000)
    stamps = [now - 3 * HOUR + i for i in range(20)] + [now + i for i in range(10)]
    produce(bootstrap, topic, {0: 30}, timestamps={0: stamps})
    idle = f"{topic}-idle"
    commit(bootstrap, idle, topic, {0: 5})
    apply_policy(
        stack,
        e2e_ns,
        "cap",
        topics={"names": [topic]},
        maxRetention="1h",
        notify={"groups": [idle]},
    )
    obj = ran(stack, e2e_ns, "cap")
    assert log_starts(admin, topic, 1) == [20]
    (loss,) = obj["status"]["losses"]
    assert (loss["fromOffset"], loss["toOffset"], loss["cause"]) == (5, 20, "maxRetention")
