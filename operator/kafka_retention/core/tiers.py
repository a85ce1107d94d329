"""Tiered storage (KIP-405): where a partition's records are, on the brokers' disks or in
remote storage, and what the brokers' remote log metadata says of each remote segment.

DeleteRecords moves a partition's log start at once, but the remote segments wholly below
it are deleted later, by the leader's remote log manager (KAFKA-15410); until then they
still take space in remote storage. The remote log metadata (the brokers' own record of
each segment: copy started, copied, delete started, deleted) is what tells a cut's remote
bytes gone. `RemoteLog` folds those records; the adapter reads and decodes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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

    def remote_bytes(self, tp: TopicPartition, topic_id: str | None = None) -> int:
        """Bytes of the partition's segments in remote storage: copied, or copied and
        not deleted yet (a segment being copied is not counted until it is whole)."""
        return sum(
            s.size_bytes
            for s in self.segments(tp, topic_id)
            if s.state in (SegmentState.COPY_FINISHED, SegmentState.DELETE_STARTED)
        )


@dataclass
class BelowCuts:
    """The remote segments wholly below each partition's cut (a purge's cut, a policy's
    log start), as the remote log metadata says now: those not deleted yet, and those
    recorded deleted since the cut went out."""

    pending: int = 0  # not DELETE_FINISHED yet (copied, or being deleted)
    pending_bytes: int = 0
    deleting: int = 0  # of the pending ones, DELETE_STARTED already
    # Partitions with a pending segment, in the order the cuts were given; pending bytes
    # by topic.
    partitions_pending: list[TopicPartition] = field(default_factory=list)
    pending_bytes_of: dict[str, int] = field(default_factory=dict)
    deleted: int = 0  # DELETE_FINISHED since the cut went out
    deleted_bytes: int = 0
    last_deleted_ms: int | None = None  # the brokers' time of the last of them

    def lag_s(self, since_ms: int) -> float | None:
        """Seconds from the cut to the brokers' record of the last segment deleted
        (never below 0: their clocks against the operator's); None if none was."""
        if self.last_deleted_ms is None:
            return None
        return max(0.0, (self.last_deleted_ms - since_ms) / 1000)


def below_cuts(
    log: RemoteLog,
    cuts: Mapping[TopicPartition, int],
    since_ms: int | None,
    topic_ids: Mapping[str, str] | None = None,
) -> BelowCuts:
    """Fold each partition's segments wholly below its cut (end offset, inclusive, below
    it: a segment holding the cut stays whole). `since_ms`: when the cut went out (None:
    unknown, so nothing counts as deleted by it), less CLOCK_SLACK_MS. `topic_ids`: the
    topics' ids now, so that a former topic of the same name is not counted (a topic
    without one: by name alone)."""
    out = BelowCuts()
    ids = topic_ids or {}
    for tp, cut in cuts.items():
        for s in log.segments(tp, ids.get(tp.topic)):
            if s.end_offset >= cut:
                continue
            if s.state != SegmentState.DELETE_FINISHED:
                if not out.partitions_pending or out.partitions_pending[-1] != tp:
                    out.partitions_pending.append(tp)
                out.pending += 1
                out.pending_bytes += s.size_bytes
                out.pending_bytes_of[tp.topic] = (
                    out.pending_bytes_of.get(tp.topic, 0) + s.size_bytes
                )
                out.deleting += s.state == SegmentState.DELETE_STARTED
            elif since_ms is not None and s.event_ms >= since_ms - CLOCK_SLACK_MS:
                out.deleted += 1
                out.deleted_bytes += s.size_bytes
                last = out.last_deleted_ms
                out.last_deleted_ms = s.event_ms if last is None else max(last, s.event_ms)
    return out
