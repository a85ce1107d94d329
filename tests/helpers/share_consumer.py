"""A real share consumer (KIP-932, librdkafka's preview ShareConsumer) that accepts the
records below an offset and releases the rest, and a read of the group's share-partition
start offset through the group reader: what the tests on share groups start from."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import AcknowledgeType, ShareConsumer

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import GroupRead, TopicPartition
from tests.helpers.kafka_cli import SHARE_GROUP_COMMAND, kafka_tool


def read_from_earliest(bootstrap: str, group: str, topic: str) -> None:
    """A new share group starts at the high watermark by default; these tests' groups
    start at the log start of every partition of `topic`, as a consumer group with
    auto.offset.reset=earliest would. Stored before any member joins, with Kafka's own
    tool (--reset-offsets --to-earliest on a group that does not exist yet), not with the
    group config share.auto.offset.reset: the partition leader reads that config from its
    own copy of the metadata when the first member fetches, so a leader that has not
    applied it yet starts the group at the high watermark, and the group never sees the
    records before it. (Suspected of a CI failure where a group got no record in 60 s.)"""
    kafka_tool(
        SHARE_GROUP_COMMAND,
        bootstrap,
        "--reset-offsets",
        "--to-earliest",
        "--execute",
        "--group",
        group,
        "--topic",
        topic,
    )


def accept_below(
    bootstrap: str,
    group: str,
    topic: str,
    below: int,
    since: int = 0,
    partition: int = 0,
    timeout: float = 60,
) -> int:
    """Join `group`, accept every record of `topic`'s `partition` from `since` (where an
    earlier call left the group) to below `below`, release every record at or past it,
    and leave. Returns how many records were accepted."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    accepted: set[int] = set()
    delivered: list[int] = []  # every offset handed to this member, for the failure's story
    deadline = time.monotonic() + timeout
    try:
        consumer.subscribe([topic])
        wanted = set(range(since, below))
        while not wanted <= accepted:
            if time.monotonic() > deadline:
                missing = sorted(wanted - accepted)[:5]
                seen = f"{len(delivered)} deliveries" + (
                    f", offsets {min(delivered)}..{max(delivered)}" if delivered else ""
                )
                try:
                    start: object = start_offset_by_kafka(bootstrap, group, topic, partition)
                except AssertionError as err:  # the tool failing must not hide this story
                    start = f"unreadable ({err})"
                raise AssertionError(
                    f"share group {group} never got offsets {missing}... in {timeout} s "
                    f"({seen}; its start offset by Kafka's tool: {start})"
                )
            for msg in list(consumer.poll(1.0)):
                if msg.error() is not None:
                    continue
                offset = int(msg.offset() or 0)
                delivered.append(offset)
                if msg.partition() == partition and offset < below:
                    consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
                    accepted.add(offset)
                else:
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
            consumer.commit_sync()
        # The start offset moves when the broker handles the group's next fetch after the
        # acknowledgements (seen on 4.3.1): fetch once more, handing back what comes.
        for _ in range(2):
            for msg in list(consumer.poll(1.0)):
                if msg.error() is None:
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
            consumer.commit_sync()
    finally:
        consumer.close()
    return len(accepted)


def positions(bootstrap: str, wanted: dict[str, Iterable[TopicPartition]]) -> dict[str, GroupRead]:
    """Each group's type and positions as the operator reads them."""
    return KafkaAdmin(bootstrap).group_positions(wanted)


def start_offset_by_kafka(bootstrap: str, group: str, topic: str, partition: int = 0) -> int | None:
    """The group's start offset as Kafka's own tool prints it (kafka-share-groups.sh
    --describe --offsets): the oracle the operator's reading is checked against."""
    out = kafka_tool(SHARE_GROUP_COMMAND, bootstrap, "--describe", "--offsets", "--group", group)
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[:3] == [group, topic, str(partition)]:
            return None if fields[3] == "-" else int(fields[3])
    return None


def wait_for_start_offset(
    bootstrap: str, group: str, tp: TopicPartition, at_least: int, timeout: float = 60
) -> int:
    """The start offset trails the acknowledgements until the group's next fetch is
    processed: wait until the operator's read shows at least `at_least`, and return it.
    (It may pass a record released too often: the broker archives a record after
    group.share.delivery.count.limit deliveries, 5 by default.)"""
    deadline = time.monotonic() + timeout
    seen: int | None = None
    while time.monotonic() < deadline:
        seen = positions(bootstrap, {group: [tp]})[group].positions.get(tp)
        if seen is not None and seen >= at_least:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"share group {group} start offset on {tp}: {seen}, wanted {at_least}+")
