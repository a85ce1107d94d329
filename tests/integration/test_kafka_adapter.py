"""The Kafka adapter against the real cluster, where its requests are split in pieces."""

from __future__ import annotations

import pytest

from kafka_retention.adapters import kafka
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition
from tests.conftest import TopicFactory
from tests.support import commit, produce


@pytest.mark.stack
def test_committed_offsets_asked_in_pieces_come_back_whole(
    bootstrap: str, make_topic: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two partitions a request: seven partitions take four requests, and every answer,
    # including "nothing committed", lands on its own partition.
    monkeypatch.setattr(kafka, "COMMITTED_PER_REQUEST", 2)
    topic = make_topic(partitions=7)
    produce(bootstrap, topic, dict.fromkeys(range(7), 20))
    group = f"{topic}-g"
    commit(bootstrap, group, topic, {p: 10 + p for p in range(7) if p != 4})

    got = KafkaAdmin(bootstrap).committed(group, [TopicPartition(topic, p) for p in range(7)])

    assert got == {TopicPartition(topic, p): (None if p == 4 else 10 + p) for p in range(7)}
