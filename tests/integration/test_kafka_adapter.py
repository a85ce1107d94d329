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


@pytest.mark.stack
def test_offsets_and_deletes_sent_in_pieces_land_on_their_own_partitions(
    bootstrap: str, make_topic: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two partitions a request: seven partitions take four ListOffsets requests a kind
    # and four DeleteRecords requests, all in flight together; each partition has its own
    # record count and cut, so an answer landing on the wrong partition shows.
    monkeypatch.setattr(kafka, "PARTITIONS_PER_REQUEST", 2)
    topic = make_topic(partitions=7)
    produce(bootstrap, topic, {p: 10 + p for p in range(7)})
    tps = [TopicPartition(topic, p) for p in range(7)]
    admin = KafkaAdmin(bootstrap)

    starts, ends = admin.log_bounds(tps)
    assert starts == dict.fromkeys(tps, 0)
    assert ends == {tp: 10 + tp.partition for tp in tps}

    deleted = admin.delete_records({tp: tp.partition for tp in tps})
    assert deleted == {tp: tp.partition for tp in tps}
    assert admin.log_bounds(tps)[0] == {tp: tp.partition for tp in tps}
    # A timestamp before every record: each partition's first offset, its new log start.
    assert admin.offsets_for_timestamp(tps, 0) == {tp: tp.partition for tp in tps}
