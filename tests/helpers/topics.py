"""Topics on the real stack: the test's own (RF 3, served by every broker), and ones laid
on exactly the brokers a test names."""

from __future__ import annotations

import time
from typing import Protocol

import tenacity
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers.broker_metadata import PartitionView

# Broker retention would delete old-stamped records by itself: topics whose records carry
# old timestamps turn it off.
NO_RETENTION = {"retention.ms": "-1"}


def compacted(delete_retention_ms: int) -> dict[str, str]:
    """The config of a compacted topic that keeps tombstones this long."""
    return {"cleanup.policy": "compact", "delete.retention.ms": str(delete_retention_ms)}


# A compacted topic the cleaner works on within seconds on the local stack: segments roll
# after a second (on the next append: tests keep writing), any dirt makes the log
# cleanable, the cleaner must clean within a second of a write, and a tombstone goes a
# second after its first cleaning. segment.bytes cannot go below 1 MiB, so time rolls.
FAST_COMPACTION = {
    "cleanup.policy": "compact",
    "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "1000",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "1000",
}


class TopicFactory(Protocol):
    def __call__(self, partitions: int = 3, config: dict[str, str] | None = None) -> str: ...


def in_sync(served: dict[int, PartitionView], partitions: int) -> bool:
    """Every partition served, led, and in sync on all three brokers."""
    return len(served) == partitions and all(
        p.error == 0 and p.leader >= 0 and len(p.isr) == 3 for p in served.values()
    )


def create_on(
    admin: AdminClient, name: str, brokers: list[int], config: dict[str, str] | None = None
) -> str:
    """A one-partition topic on exactly these brokers (with `config`); its topic id
    (Kafka's form), once it has a leader."""
    new = NewTopic(name, num_partitions=1, replica_assignment=[brokers], config=config or {})
    admin.create_topics([new])[name].result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        meta = admin.list_topics(name, timeout=10).topics.get(name)
        if meta is not None and meta.error is None and meta.partitions[0].leader >= 0:
            break
        time.sleep(0.2)
    return topic_id(admin, name)


# A broker whose metadata has not caught up with a topic just (re-)created answers
# UNKNOWN_TOPIC_OR_PART for a moment, even after another broker listed it (CI saw it).
@tenacity.retry(
    retry=tenacity.retry_if_exception_type(KafkaException),
    stop=tenacity.stop_after_delay(30),
    wait=tenacity.wait_fixed(0.5),
    reraise=True,
)
def topic_id(admin: AdminClient, name: str) -> str:
    desc = admin.describe_topics(TopicCollection([name]))[name].result(timeout=30)
    return str(desc.topic_id).replace("+", "-").replace("/", "_")


def wait_for_gone(admin: AdminClient, name: str) -> None:
    deadline = time.monotonic() + 30
    while name in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{name} was not deleted"
        time.sleep(0.2)


def cluster_id(admin: AdminClient) -> str:
    return str(admin.list_topics(timeout=10).cluster_id)
