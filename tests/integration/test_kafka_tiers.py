"""The Kafka adapter's tier reads on the real tiered cluster: where a partition's records
are (earliest local, latest tiered), its local bytes, and the remote log metadata decoded
from Kafka, each checked against the remote store's and the brokers' own files; and the
erasure scan, which finds a key in segments that are only in remote storage."""

from __future__ import annotations

import itertools
import time

import pytest

from devstack.stack import Stack
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.core.erasure import key_digest
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.tiers import SegmentState, below_cuts
from tests.helpers.records import produce
from tests.helpers.tiered import TIERED, remote_segments, wait_for_remote_segments
from tests.helpers.topics import TopicFactory

pytestmark = pytest.mark.stack

RECORDS = 15_000  # about 3.4 MB: three closed 1 MiB segments and an active one


def _local_log_bytes(stack: Stack, tp: TopicPartition) -> int:
    """What the brokers' partition directories hold in segment files (DescribeLogDirs'
    size: the .log files, not indexes or files already marked deleted)."""
    return sum(
        f.stat().st_size
        for node in stack.kafka.nodes
        for f in (node.log_dir / f"{tp.topic}-{tp.partition}").glob("*.log")
    )


def test_tier_offsets_bytes_and_remote_segments_agree_with_the_stores_own_files(
    stack: Stack, bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1, config=TIERED)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, {0: RECORDS}, value=b"r" * 200)
    files = wait_for_remote_segments(stack.kafka, topic, 0, at_least=3)
    kafka = KafkaAdmin(bootstrap)
    topic_id = kafka.topic_ids([topic])[topic]  # this topic alone: others come and go

    # Every copied segment the metadata names is a file of that size in the store, under
    # the same segment id (and the metadata may be a moment behind the files, not ahead).
    deadline = time.monotonic() + 30
    while True:
        copied = [
            s
            for s in kafka.remote_log().segments(tp, topic_id)
            if s.state is SegmentState.COPY_FINISHED
        ]
        files = remote_segments(stack.kafka, topic, 0)
        if len(copied) == len(files) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert [(s.start_offset, s.id.segment_id, s.size_bytes) for s in copied] == [
        (f.base_offset, f.segment_id, f.size) for f in files
    ]
    assert all(a.end_offset + 1 == b.start_offset for a, b in itertools.pairwise(copied))

    # Local retention has removed the uploaded segments from the brokers' disks: the local
    # log starts past the log start, right after what is tiered. Past local.retention.ms
    # the broker rolls the active segment and uploads it too, so the metadata is read
    # again beside each tier read: the two agree once neither is a copy behind the other.
    deadline = time.monotonic() + 30
    while True:
        where = kafka.tier_offsets([tp])[tp]
        tiered = [
            s
            for s in kafka.remote_log().segments(tp, topic_id)
            if s.state is SegmentState.COPY_FINISHED
        ]
        if (
            (where.earliest_local or 0) > copied[0].start_offset
            and where.latest_tiered == tiered[-1].end_offset
        ) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    start = kafka.offsets([tp], "earliest")[tp]
    assert start == 0
    assert tiered[: len(copied)] == copied
    assert where.latest_tiered == tiered[-1].end_offset
    assert where.earliest_local is not None
    assert 0 < where.earliest_local <= where.latest_tiered + 1

    deadline = time.monotonic() + 30
    while kafka.local_bytes([topic])[topic] != _local_log_bytes(stack, tp):
        assert time.monotonic() < deadline, "DescribeLogDirs never matched the local files"
        time.sleep(0.5)
    assert kafka.local_bytes([topic])[topic] < 3 * sum(f.size for f in files)


def test_a_cut_leaves_remote_segments_pending_until_the_metadata_says_they_are_deleted(
    stack: Stack, bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1, config=TIERED)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, {0: RECORDS}, value=b"r" * 200)
    files = wait_for_remote_segments(stack.kafka, topic, 0, at_least=3)
    kafka = KafkaAdmin(bootstrap)
    cut = files[2].base_offset  # the first two segments lie wholly below it
    assert kafka.delete_records({tp: cut}) == {tp: cut}

    topic_id = kafka.topic_ids([topic])[topic]  # this topic alone: others come and go
    deadline = time.monotonic() + 60
    while below_cuts(kafka.remote_log(), {tp: cut}, None).pending:
        assert time.monotonic() < deadline, "remote segments below the cut never deleted"
        time.sleep(0.5)
    # The metadata named both segments below the cut, and saw them through to deleted
    # (not merely nothing: an empty read would have left the loop at once).
    states = [s.state for s in kafka.remote_log().segments(tp, topic_id) if s.end_offset < cut]
    assert states == [SegmentState.DELETE_FINISHED] * 2
    # Kafka's word, checked against the store: the segments below the cut are gone, the
    # one holding the cut and those after it are still there.
    left = {f.base_offset for f in remote_segments(stack.kafka, topic, 0)}
    assert not left & {f.base_offset for f in files[:2]}
    assert files[2].base_offset in left


def test_the_erasure_scan_finds_a_key_in_remote_segments_below_the_earliest_local_offset(
    stack: Stack, bootstrap: str, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1, config=TIERED)
    tp = TopicPartition(topic, 0)
    key = b"customer-4711@example.com"
    # The key at offsets 10 and 5,010: both in segments that are remote (and local retention
    # deletes their local copies) once the partition holds three closed segments.
    produce(
        bootstrap,
        topic,
        {0: RECORDS},
        value=b"r" * 200,
        key=lambda _p, i: key if i in (10, 5_010) else f"other-{i}".encode(),
    )
    files = wait_for_remote_segments(stack.kafka, topic, 0, at_least=3)
    assert files[-1].base_offset > 5_010
    kafka = KafkaAdmin(bootstrap)
    deadline = time.monotonic() + 30
    while (kafka.tier_offsets([tp])[tp].earliest_local or 0) <= 5_010:
        assert time.monotonic() < deadline, "the key's segments never left the local log"
        time.sleep(0.5)

    erasure = ErasureAdmin(bootstrap)
    end = kafka.offsets([tp], "latest")[tp]
    assert isinstance(end, int)
    found = erasure.scan_keys({tp: (0, end)}, frozenset({key_digest(key)}))[tp]
    assert isinstance(found, PartitionScan), found
    hits = found.hits[key_digest(key)]
    assert (hits.records, hits.first_offset, hits.last_offset) == (2, 10, 5_010)
    assert found.examined == RECORDS
