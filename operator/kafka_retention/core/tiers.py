"""Tiered storage (KIP-405): where a partition's records are, on the brokers' disks or in
remote storage, and what the brokers' remote log metadata says of each remote segment.

DeleteRecords moves a partition's log start at once, but the remote segments wholly below
it are deleted later, by the leader's remote log manager (KAFKA-15410); until then they
still take space in remote storage. The remote log metadata (the brokers' own record of
each segment: copy started, copied, delete started, deleted) is what tells a cut's remote
bytes gone. `RemoteLog` folds those records; the adapter reads and decodes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from kafka_retention.core.facts import TopicPartition

# Topic settings that make a topic tiered and say what stays on the brokers' disks.
REMOTE_STORAGE_ENABLE = "remote.storage.enable"
# A remote segment recorded deleted this long before a cut still counts as deleted by it:
# the brokers stamp the metadata with their clocks, the operator the cut with its own.
CLOCK_SLACK_MS = 30_000
RETENTION_SETTINGS = (
    "retention.ms",
    "retention.bytes",
    "local.retention.ms",
    "local.retention.bytes",
)


def is_tiered(config: dict[str, str] | None) -> bool:
    """Whether a topic's configs enable remote storage (KIP-405)."""
    return (config or {}).get(REMOTE_STORAGE_ENABLE, "false").strip().lower() == "true"


class SegmentState(IntEnum):
    """RemoteLogSegmentState's ids, as the metadata records carry them."""

    COPY_STARTED = 0
    COPY_FINISHED = 1
    DELETE_STARTED = 2
    DELETE_FINISHED = 3


@dataclass(frozen=True)
class TierOffsets:
    """Where one partition's records are (ListOffsets, KIP-1005 and KIP-1023): the first
    offset still on the brokers' disks, the last offset copied to remote storage, and the
    first offset not yet copied. None where the broker has no such offset (nothing
    tiered, or a broker too old to say)."""

    earliest_local: int | None
    latest_tiered: int | None
    pending_upload: int | None


@dataclass(frozen=True)
class SegmentId:
    topic: str
    topic_id: str
    partition: int
    segment_id: str

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class RemoteSegment:
    """A segment the remote log manager copied (or began to copy), in its latest state."""

    id: SegmentId
    start_offset: int
    end_offset: int  # inclusive, as Kafka records it
    size_bytes: int
    max_timestamp_ms: int
    state: SegmentState
    event_ms: int  # when the latest state was recorded


@dataclass(frozen=True)
class SegmentUpdate:
    """A later state of a segment already recorded."""

    id: SegmentId
    state: SegmentState
    event_ms: int


# What one metadata record says; other record kinds (a partition's deletion, snapshots)
# change no segment and are left out by the decoder.
MetadataRecord = RemoteSegment | SegmentUpdate


class RemoteLog:
    """Each remote segment's latest state, folded from the metadata records in the order
    the brokers wrote them (all records of a partition are in one metadata partition, so
    their order holds)."""

    def __init__(self, records: Iterable[MetadataRecord] = ()) -> None:
        self._segments: dict[SegmentId, RemoteSegment] = {}
        self._by_tp: dict[TopicPartition, set[SegmentId]] = {}
        for record in records:
            self.add(record)

    def add(self, record: MetadataRecord) -> None:
        if isinstance(record, RemoteSegment):
            self._segments[record.id] = record
            self._by_tp.setdefault(record.id.tp, set()).add(record.id)
            return
        known = self._segments.get(record.id)
        if known is not None:
            self._segments[record.id] = RemoteSegment(
                known.id,
                known.start_offset,
                known.end_offset,
                known.size_bytes,
                known.max_timestamp_ms,
                record.state,
                record.event_ms,
            )

    def segments(self, tp: TopicPartition, topic_id: str | None = None) -> list[RemoteSegment]:
        """The partition's segments in offset order; only those of topic id `topic_id`
        when given (a topic deleted and made again under its name has a new id)."""
        found = [self._segments[s] for s in self._by_tp.get(tp, ())]
        if topic_id is not None:
            found = [s for s in found if s.id.topic_id == topic_id]
        return sorted(found, key=lambda s: (s.start_offset, s.end_offset, s.id.segment_id))

    def pending_below(
        self, tp: TopicPartition, offset: int, topic_id: str | None = None
    ) -> list[RemoteSegment]:
        """Segments wholly below `offset` (a cut, the log start) that are not deleted
        yet: what still takes remote space though no reader can reach it."""
        return [
            s
            for s in self.segments(tp, topic_id)
            if s.end_offset < offset and s.state != SegmentState.DELETE_FINISHED
        ]

    def remote_bytes(self, tp: TopicPartition, topic_id: str | None = None) -> int:
        """Bytes of the partition's segments in remote storage: copied, or copied and
        not deleted yet (a segment being copied is not counted until it is whole)."""
        return sum(
            s.size_bytes
            for s in self.segments(tp, topic_id)
            if s.state in (SegmentState.COPY_FINISHED, SegmentState.DELETE_STARTED)
        )
