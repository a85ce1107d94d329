"""Consumer-group commits made without a running consumer, as a stopped one leaves them."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

# A coordinator that moves or is still loading answers these; the commit is made again
# (a test's own setup must not fail on a cluster an earlier test restarted brokers in).
_COORDINATOR_MOVING = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def commit(
    bootstrap: str, group: str, topic: str, offsets: Mapping[int, int], attempts: int = 30
) -> None:
    """Commit offsets for a group without joining it, as a stopped consumer leaves them."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        for attempt in range(attempts):
            try:
                consumer.commit(
                    offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                    asynchronous=False,
                )
                return
            except KafkaException as err:
                code = err.args[0].code() if err.args else None
                if code not in _COORDINATOR_MOVING or attempt == attempts - 1:
                    raise
                time.sleep(1)
    finally:
        consumer.close()


def commit_groups(admin: AdminClient, offsets: Mapping[str, int], suffix: str = "-g") -> None:
    """Commit each topic's own group (`<topic><suffix>`) at the offset given on partition
    0, many at once through the admin API, as their consumers would have. On a fresh
    cluster the group coordinators are still coming up: a partition's error comes back in
    the result (not raised), and those commits are made again until all are stored."""
    pending = dict(offsets)
    for _ in range(30):
        futures = {
            t: admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(f"{t}{suffix}", [TopicPartition(t, 0, offset)])]
            )[f"{t}{suffix}"]
            for t, offset in pending.items()
        }
        failed = {}
        for t, f in futures.items():
            try:
                result = f.result(timeout=60)
            except KafkaException:
                failed[t] = pending[t]
                continue
            if any(tp.error is not None for tp in result.topic_partitions):
                failed[t] = pending[t]
        if not failed:
            return
        pending = failed
        time.sleep(1)
    raise AssertionError(f"{len(pending)} group commits never stored, e.g. {list(pending)[:3]}")
