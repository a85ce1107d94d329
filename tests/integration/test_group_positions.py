"""Group positions of every group type on the real cluster: KafkaAdmin.group_positions
finds what each id names (a classic group, a share group, a streams group, nothing) and
reads each one's position, checked against what Kafka's own tools print for the same
groups; and the group reader behind it, missing or killed."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from kafka_retention.adapters import group_reader
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import KafkaUnavailable
from tests.helpers.commits import commit
from tests.helpers.records import produce
from tests.helpers.share_consumer import (
    accept_below,
    read_from_earliest,
    start_offset_by_kafka,
    wait_for_start_offset,
)
from tests.helpers.streams_app import run_streams_app, streams_commit_by_kafka
from tests.helpers.topics import TopicFactory


def share_group_accepting_below(bootstrap: str, group: str, tp: TopicPartition, below: int) -> int:
    """A share group whose consumer accepted every record of `tp` below `below` and left;
    its start offset as the operator reads it once the broker has moved it."""
    read_from_earliest(bootstrap, group, tp.topic)
    accept_below(bootstrap, group, tp.topic, below, partition=tp.partition)
    return wait_for_start_offset(bootstrap, group, tp, at_least=below)


@pytest.mark.stack
def test_each_group_type_is_found_and_read_where_kafkas_tools_say_it_is(
    bootstrap: str, make_topic: TopicFactory
) -> None:
    topic, output = make_topic(partitions=1), make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, {0: 1000})
    tag = uuid.uuid4().hex[:8]
    classic, share, streams = f"classic-{tag}", f"share-{tag}", f"streams-{tag}"
    nobody = f"nobody-{tag}"
    # Tabs, newlines and a percent pass the line protocol both ways through the real reader.
    odd = f"nobody\t%41\n{tag}"
    commit(bootstrap, classic, topic, {0: 1000})
    with ThreadPoolExecutor(2) as pool:
        app = pool.submit(run_streams_app, bootstrap, streams, topic, output, 300)
        share_seen = share_group_accepting_below(bootstrap, share, tp, 300)
        app.result()

    read = KafkaAdmin(bootstrap).group_positions(
        {g: [tp] for g in (classic, share, streams, nobody, odd)}
    )

    assert read[classic] == GroupRead(GroupType.CLASSIC, {tp: 1000})
    assert read[share].type is GroupType.SHARE
    share_at = read[share].positions[tp]
    assert share_at == start_offset_by_kafka(bootstrap, share, topic)
    assert share_at is not None
    assert share_at >= share_seen >= 300
    assert read[streams].type is GroupType.STREAMS
    streams_at = read[streams].positions[tp]
    assert streams_at == streams_commit_by_kafka(bootstrap, streams, tp)
    assert streams_at is not None
    assert 300 <= streams_at <= 1000
    assert read[nobody] == GroupRead(GroupType.NONE, {tp: None})
    assert read[odd] == GroupRead(GroupType.NONE, {tp: None})


@pytest.mark.stack
def test_without_the_reader_a_share_group_is_refused_by_name_and_consumer_groups_still_read(
    bootstrap: str, make_topic: TopicFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, {0: 20})
    tag = uuid.uuid4().hex[:8]
    classic, share = f"classic-{tag}", f"share-{tag}"
    commit(bootstrap, classic, topic, {0: 12})
    share_group_accepting_below(bootstrap, share, tp, 5)
    monkeypatch.delenv(group_reader.ENV)
    monkeypatch.setattr(group_reader, "_shared", None)
    kafka = KafkaAdmin(bootstrap)

    with pytest.raises(KafkaUnavailable) as refused:
        kafka.group_positions({classic: [tp], share: [tp]})
    message = str(refused.value)
    assert share in message
    assert classic not in message
    assert "group reader" in message
    assert group_reader.ENV in message
    assert group_reader.shared() is None
    assert kafka.group_positions({classic: [tp]}) == {
        classic: GroupRead(GroupType.CLASSIC, {tp: 12})
    }


@pytest.mark.stack
def test_a_reader_process_that_died_is_started_again_on_the_next_read(
    bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, {0: 10})
    tag = uuid.uuid4().hex[:8]
    share = f"share-{tag}"
    share_at = share_group_accepting_below(bootstrap, share, tp, 4)
    kafka = KafkaAdmin(bootstrap)
    reader = group_reader.shared()
    assert reader is not None
    dead = reader._proc
    assert dead is not None
    assert dead.poll() is None

    dead.kill()
    dead.wait()

    assert kafka.group_positions({share: [tp]}) == {
        share: GroupRead(GroupType.SHARE, {tp: share_at})
    }
    again = reader._proc
    assert again is not None
    assert again is not dead
    assert again.poll() is None
    assert again.pid != dead.pid


@pytest.mark.stack
def test_a_read_waiting_on_a_reader_that_dies_fails_at_once_and_the_next_read_starts_another(
    bootstrap: str,
) -> None:
    reader = group_reader.shared()
    assert reader is not None
    tp = TopicPartition("t", 0)
    # A cluster that does not answer keeps the read waiting (up to its 20 s API timeout).
    nowhere = {
        "bootstrap.servers": "127.0.0.1:1",
        "default.api.timeout.ms": "20000",
        "request.timeout.ms": "20000",
    }
    killer = threading.Timer(2, lambda: reader._proc.kill() if reader._proc else None)
    started = time.monotonic()
    killer.start()
    try:
        with pytest.raises(group_reader.GroupReaderError, match="the process ended"):
            reader.read(nowhere, {"g": [tp]}, timeout=20)
    finally:
        killer.cancel()
    assert time.monotonic() - started < 10
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    assert reader.read({"bootstrap.servers": bootstrap}, {nobody: [tp]}, timeout=15) == {
        nobody: GroupRead(GroupType.NONE, {tp: None})
    }
