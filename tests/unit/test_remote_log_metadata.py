"""The brokers' remote log metadata (KIP-405), decoded and folded: records captured from
the local stack's brokers (LocalTieredStorage, Kafka 4.3.1) as the fixtures."""

from __future__ import annotations

import pytest

from kafka_retention.adapters.kafka_tiers import MetadataFormatError, decode
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.tiers import (
    RemoteLog,
    RemoteSegment,
    SegmentId,
    SegmentState,
    SegmentUpdate,
    below_cuts,
    is_tiered,
)

# A segment of tiered1-0 (offsets 0-4595, 999,756 bytes) whose copy started, and the
# update that says it finished, as broker 1 wrote them to __remote_log_metadata.
COPY_STARTED = bytes.fromhex(
    "01000008746965726564319e6868213ea6464299945c8484a93bb20000000000dbf3e26b387d44e990d363"
    "5254d4df6300000000000000000000000000000011f300000001000001a225a3f8f7000001a2268f0d0502"
    "00000000000000000000000000000f414c000001000101"
)
COPY_FINISHED = bytes.fromhex(
    "01010008746965726564319e6868213ea6464299945c8484a93bb20000000000dbf3e26b387d44e990d363"
    "5254d4df630000000001000001a2268f0d84000100"
)
TP = TopicPartition("tiered1", 0)


def test_a_segment_record_gives_its_partition_offsets_size_and_state() -> None:
    record = decode(COPY_STARTED)
    assert isinstance(record, RemoteSegment)
    assert record.id.tp == TP
    assert record.id.topic_id == "nmhoIT6mRkKZlFyEhKk7sg"  # as the remote store names it
    assert (record.start_offset, record.end_offset) == (0, 4595)
    assert record.size_bytes == 999_756
    assert record.state is SegmentState.COPY_STARTED


def test_an_update_record_names_the_same_segment_with_its_new_state() -> None:
    first, update = decode(COPY_STARTED), decode(COPY_FINISHED)
    assert isinstance(first, RemoteSegment)
    assert isinstance(update, SegmentUpdate)
    assert update.id == first.id
    assert update.state is SegmentState.COPY_FINISHED


def test_bytes_count_once_a_copy_finishes_and_stop_once_deleted() -> None:
    first = decode(COPY_STARTED)
    assert isinstance(first, RemoteSegment)
    log = RemoteLog([first])
    assert log.remote_bytes(TP) == 0  # a copy in progress is not in remote storage yet
    log.add(SegmentUpdate(first.id, SegmentState.COPY_FINISHED, 1))
    assert log.remote_bytes(TP) == 999_756
    log.add(SegmentUpdate(first.id, SegmentState.DELETE_STARTED, 2))
    assert log.remote_bytes(TP) == 999_756  # still there until the store says it is gone
    log.add(SegmentUpdate(first.id, SegmentState.DELETE_FINISHED, 3))
    assert log.remote_bytes(TP) == 0


def _segment(start: int, end: int, state: SegmentState, topic_id: str = "id-a") -> RemoteSegment:
    return RemoteSegment(SegmentId("t", topic_id, 0, f"s{start}"), start, end, 10, 0, state, 0)


def test_pending_below_a_cut_is_every_undeleted_segment_wholly_under_it() -> None:
    tp = TopicPartition("t", 0)
    log = RemoteLog(
        [
            _segment(0, 99, SegmentState.DELETE_FINISHED),
            _segment(100, 199, SegmentState.DELETE_STARTED),
            _segment(200, 299, SegmentState.COPY_FINISHED),
            _segment(300, 399, SegmentState.COPY_FINISHED),  # holds the cut: still read
        ]
    )
    found = below_cuts(log, {tp: 350}, since_ms=None)
    assert (found.pending, found.pending_bytes, found.deleting) == (2, 20, 1)
    assert found.partitions_pending == [tp]
    assert found.deleted == 0  # no cut time: nothing counts as deleted by it
    assert below_cuts(log, {tp: 100}, since_ms=None).pending == 0


def test_deleted_counts_only_segments_the_brokers_recorded_after_the_cut_less_the_slack() -> None:
    tp = TopicPartition("t", 0)
    old = RemoteSegment(
        SegmentId("t", "a", 0, "old"), 0, 9, 10, 0, SegmentState.DELETE_FINISHED, 1_000
    )
    new = RemoteSegment(
        SegmentId("t", "a", 0, "new"), 10, 19, 10, 0, SegmentState.DELETE_FINISHED, 95_000
    )
    found = below_cuts(RemoteLog([old, new]), {tp: 20}, since_ms=100_000)
    assert (found.deleted, found.last_deleted_ms) == (1, 95_000)  # within CLOCK_SLACK_MS
    assert found.lag_s(100_000) == 0.0  # the brokers' clock behind: never below 0
    assert found.lag_s(90_000) == 5.0


def test_a_topic_made_again_under_its_name_is_told_apart_by_its_id() -> None:
    tp = TopicPartition("t", 0)
    log = RemoteLog(
        [
            _segment(0, 99, SegmentState.COPY_FINISHED, "old"),
            _segment(0, 49, SegmentState.COPY_FINISHED, "new"),
        ]
    )
    assert [s.end_offset for s in log.segments(tp, "new")] == [49]
    assert len(log.segments(tp)) == 2


def test_an_update_of_a_segment_never_seen_changes_nothing() -> None:
    log = RemoteLog([SegmentUpdate(SegmentId("t", "x", 0, "s"), SegmentState.DELETE_FINISHED, 1)])
    assert log.segments(TopicPartition("t", 0)) == []


def test_a_partition_deletion_record_is_no_segment() -> None:
    assert decode(bytes([1, 2, 0]) + COPY_FINISHED[3:]) is None


@pytest.mark.parametrize(
    "value",
    [COPY_STARTED[:-5], bytes([2]) + COPY_STARTED[1:], COPY_FINISHED[:3] + b"\x00"],
    ids=["truncated", "unknown-frame", "empty-name"],
)
def test_a_record_that_cannot_be_read_is_an_error_not_a_guess(value: bytes) -> None:
    with pytest.raises(MetadataFormatError):
        decode(value)


def test_a_record_with_an_unknown_state_is_an_error() -> None:
    with pytest.raises(MetadataFormatError, match="state 9"):
        decode(COPY_FINISHED[:-2] + b"\x09\x00")


@pytest.mark.parametrize(
    ("config", "tiered"),
    [
        ({"remote.storage.enable": "true"}, True),
        ({"remote.storage.enable": "false"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_a_topic_is_tiered_only_when_its_config_enables_remote_storage(
    config: dict[str, str] | None, tiered: bool
) -> None:
    assert is_tiered(config) is tiered
