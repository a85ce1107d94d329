"""The stack's Kafka as most tests take it: one fixture (`kafka`, tests/conftest.py) for
its bootstrap servers, an AdminClient and topics of the test's own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

from tests.helpers.commits import commit
from tests.helpers.records import produce
from tests.helpers.topics import TopicFactory


@dataclass(frozen=True)
class Kafka:
    bootstrap: str
    admin: AdminClient
    make_topic: TopicFactory

    def topic(
        self,
        records: Mapping[int, int],
        config: dict[str, str] | None = None,
        *,
        timestamps: Mapping[int, list[int]] | None = None,
        key: Callable[[int, int], bytes | None] | None = None,
        value: bytes = b"v" * 100,
    ) -> str:
        """A new topic of one partition per entry of `records`, holding records[p] records
        in partition p (written as produce() writes them)."""
        topic = self.make_topic(partitions=len(records), config=config)
        produce(self.bootstrap, topic, records, timestamps=timestamps, key=key, value=value)
        return topic

    def group_at(self, topic: str, suffix: str, offsets: Mapping[int, int]) -> str:
        """A consumer group `<topic>-<suffix>` that committed these offsets of `topic`
        (as a stopped consumer leaves them): its name."""
        group = f"{topic}-{suffix}"
        commit(self.bootstrap, group, topic, offsets)
        return group


def read_by_fast_and_slow(kafka: Kafka) -> tuple[str, str, str]:
    """A topic of 100 records in each of 3 partitions, read by a fast group and by a slow
    one that has committed nothing on partition 2 yet: (topic, fast, slow)."""
    topic = kafka.topic({0: 100, 1: 100, 2: 100})
    fast = kafka.group_at(topic, "fast", {0: 90, 1: 80, 2: 70})
    slow = kafka.group_at(topic, "slow", {0: 40, 1: 60})
    return topic, fast, slow
