"""spec.tombstones (KIP-534, consumer side) on the real cluster: a group lagging past its
share of a compacted topic's delete.retention.ms is named, and with raiseDeleteRetention
the topic's setting is raised within the cap. The setting is read back with Kafka's own
admin client."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from devstack.stack import Stack
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.kube import events
from tests.helpers.policies import apply_policy_on, ran
from tests.helpers.records import old_then_new
from tests.helpers.topics import compacted

pytestmark = pytest.mark.stack

MINUTE = 60_000


def delete_retention_ms(admin: AdminClient, topic: str) -> int:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return int(entries["delete.retention.ms"].value)


def test_a_lagging_group_on_a_compacted_topic_is_named_and_delete_retention_raised(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    # The slow group's next record is 55 minutes old: past 80% of the topic's hour.
    stamps = old_then_new(10, 55 * MINUTE)
    config = compacted(60 * MINUTE)
    topic = kafka.topic({0: 20}, config, timestamps={0: stamps}, key=lambda p, i: b"k%d" % i)
    slow = kafka.group_at(topic, "slow", {0: 2})
    fresh = kafka.group_at(topic, "fresh", {0: 15})
    apply_policy_on(
        stack,
        e2e_ns,
        "tomb",
        topic,
        interval="1h",
        tombstones={
            "groups": [slow, fresh],
            "raiseDeleteRetention": {"enabled": True, "max": "3h"},
        },
    )
    obj = ran(stack, e2e_ns, "tomb")
    at_risk = condition(obj, "TombstonesAtRisk")
    assert at_risk["status"] == "True", at_risk
    assert f"group {slow}" in at_risk["message"]
    (entry,) = obj["status"]["tombstones"]
    assert (entry["group"], entry["topic"], entry["deleteRetentionSeconds"]) == (
        slow,
        topic,
        3600,
    )
    assert 55 * 60 <= entry["lagSeconds"] < 60 * 60
    # Raised so 55 minutes and a little is half of 80% of it: 138 or 139 minutes (rounded
    # up to a minute), under the 3h cap.
    raised = delete_retention_ms(kafka.admin, topic)
    assert 138 * MINUTE <= raised <= 139 * MINUTE
    (change,) = obj["status"]["deleteRetentionRaised"]
    assert (change["fromMs"], change["toMs"]) == (60 * MINUTE, raised)
    reasons = [e["reason"] for e in events(stack, e2e_ns, "tomb")]
    assert reasons.count("TombstonesAtRisk") == 1
    assert reasons.count("DeleteRetentionRaised") == 1


def test_a_tombstone_inventory_counts_them_with_the_oldest_age(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.make_topic(partitions=2, config=compacted(180 * MINUTE))
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce(topic, key=b"k%d" % i, value=b"x", partition=i % 2, timestamp=now + i)
    # Deletes of k3 (two hours ago) and k5 on partition 1, and k4 on partition 0.
    for key, partition, age in ((b"k3", 1, 120 * MINUTE), (b"k5", 1, 10 * MINUTE), (b"k4", 0, 0)):
        producer.produce(topic, key=key, value=None, partition=partition, timestamp=now - age)
    assert producer.flush(30) == 0
    apply_policy_on(
        stack,
        e2e_ns,
        "inventory",
        topic,
        interval="1h",
        tombstones={"groups": [f"{topic}-g"], "inventory": True},
    )
    # The scan runs in the operator's Spark session: allow for the JVM to start.
    obj = ran(stack, e2e_ns, "inventory")
    (entry,) = obj["status"]["tombstoneInventory"]
    assert {k: entry[k] for k in ("topic", "partitions", "recordsScanned", "tombstones")} == {
        "topic": topic,
        "partitions": 2,
        "recordsScanned": 23,
        "tombstones": 3,
    }
    assert entry["deleteRetentionSeconds"] == 180 * 60
    assert 120 * 60 <= entry["oldestAgeSeconds"] < 125 * 60
    assert condition(obj, "Degraded")["status"] == "False"
