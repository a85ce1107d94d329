"""Kafka 4 group types end to end: share groups (KIP-932) and streams groups (KIP-1071)
hold back cuts, protect purges and have their losses reported like consumer groups.

The groups are real: librdkafka's share consumer acknowledges part of a topic, and a
Kafka Streams application in the streams-group protocol commits part of one. Where a
share group stands is checked with Kafka's own kafka-share-groups tool, not with the
operator's reading of it."""

from __future__ import annotations

import pytest

from devstack.stack import Stack
from kafka_retention.core.facts import TopicPartition
from tests.helpers.commits import commit
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on, loss_events, ran, where
from tests.helpers.purges import purge_protecting, results
from tests.helpers.records import delete_records, produce
from tests.helpers.share_consumer import (
    accept_below,
    read_from_earliest,
    start_offset_by_kafka,
    wait_for_start_offset,
)
from tests.helpers.streams_app import run_streams_app
from tests.helpers.topics import NO_RETENTION
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack


def _share_group_at(bootstrap: str, group: str, topic: str, below: int, since: int = 0) -> int:
    """The share group accepts [since, below) and releases the rest; returns its start
    offset as Kafka's tool prints it once the operator's reading has caught up."""
    accept_below(bootstrap, group, topic, below, since=since)
    wait_for_start_offset(bootstrap, group, TopicPartition(topic, 0), below)
    found = start_offset_by_kafka(bootstrap, group, topic)
    assert found is not None
    assert found >= below
    return found


def _queue(kafka: Kafka, records: int, accepted: int) -> tuple[str, str, int]:
    """A one-partition topic of `records` records and a share group that accepted the
    first `accepted`: (topic, group, its start offset as Kafka's tool prints it)."""
    topic = kafka.topic({0: records}, NO_RETENTION)
    workers = f"{topic}-workers"
    read_from_earliest(kafka.bootstrap, workers, topic)
    start = _share_group_at(kafka.bootstrap, workers, topic, accepted)
    assert start < records
    return topic, workers, start


def test_a_policy_never_cuts_past_a_share_groups_start_offset_and_follows_it(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, workers, start = _queue(kafka, records=1000, accepted=300)
    done = f"{topic}-done"
    commit(kafka.bootstrap, done, topic, {0: 1000})  # a consumer group that read everything
    apply_policy_on(stack, e2e_ns, "queue", topic, deleteConsumed={"groups": [done, workers]})
    eventually(lambda: log_starts(kafka.admin, topic, 1) == [start], what="cut at the share group")
    obj = ran(stack, e2e_ns, "queue")
    # Never past it, run after run, while the share consumer is behind.
    obj = ran(stack, e2e_ns, "queue", after=obj["status"]["lastRun"]["completedAt"])
    assert log_starts(kafka.admin, topic, 1) == [start]
    assert condition(obj, "Ready")["status"] == "True"
    groups = {g["name"]: g for g in obj["status"]["groups"]}
    assert {n: g["type"] for n, g in groups.items()} == {done: "classic", workers: "share"}
    assert groups[workers]["recordsBehind"] == 1000 - start
    assert groups[done]["recordsBehind"] == 0
    wide = stack.kubectl("get", "retentionpolicy", "queue", "-n", e2e_ns, "-o", "wide").stdout
    assert f"{workers} (share)" in wide
    # The share consumer acknowledges more: the cut follows it, and only it.
    later = _share_group_at(kafka.bootstrap, workers, topic, 600, since=start)
    eventually(
        lambda: log_starts(kafka.admin, topic, 1) == [later],
        timeout=60,
        what="cut following the share group",
    )


def test_a_purge_protecting_a_share_group_stops_at_its_start_offset(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, workers, start = _queue(kafka, records=500, accepted=200)
    obj = purge_protecting(stack, e2e_ns, topic, workers)
    assert log_starts(kafka.admin, topic, 1) == [start]
    assert obj["status"]["groups"] == [{"name": workers, "type": "share"}]
    assert workers in results(obj)[(topic, 0)]["note"]


def test_a_manual_delete_past_a_watched_share_group_is_reported_once_naming_it(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, workers, start = _queue(kafka, records=500, accepted=100)
    apply_policy_on(stack, e2e_ns, "watch", topic, notify={"groups": [workers]})
    first = ran(stack, e2e_ns, "watch")
    assert condition(first, "DataLoss")["status"] == "False"
    assert first["status"]["groups"][0]["type"] == "share"
    # Someone deletes past the share group's start offset with Kafka's own kafka.admin client.
    delete_records(kafka.admin, topic, {0: 250})
    after = ran(stack, e2e_ns, "watch", after=first["status"]["lastRun"]["completedAt"])
    (lost,) = after["status"]["losses"]
    assert where(lost) == (workers, topic, 0, start, 250)
    assert (lost["records"], lost["cause"]) == (250 - start, "external")
    assert condition(after, "DataLoss")["status"] == "True"
    again = ran(stack, e2e_ns, "watch", after=after["status"]["lastRun"]["completedAt"])
    assert again["status"]["unconsumedLostTotal"] == 250 - start
    (event,) = loss_events(stack, e2e_ns, "watch")
    assert f"group {workers} lost {250 - start} unread records of {topic}-0" in event["message"]


def test_a_streams_group_holds_a_cut_at_its_commit_and_is_read_as_streams(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.make_topic(partitions=1, config=NO_RETENTION)
    output = kafka.make_topic(partitions=1, config=NO_RETENTION)
    produce(kafka.bootstrap, topic, {0: 1000})
    app = f"{topic}-app"
    run_streams_app(kafka.bootstrap, app, topic, output, records=300)
    done = kafka.group_at(topic, "done", {0: 1000})
    apply_policy_on(stack, e2e_ns, "streams", topic, deleteConsumed={"groups": [done, app]})
    obj = ran(stack, e2e_ns, "streams")
    (start,) = log_starts(kafka.admin, topic, 1)
    # The app commits what it processed: at least the 300 records, never all 1,000.
    assert 300 <= start < 1000
    groups = {g["name"]: g for g in obj["status"]["groups"]}
    assert groups[app]["type"] == "streams"
    assert groups[app]["recordsBehind"] == 1000 - start
