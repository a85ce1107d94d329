"""What the planner knows about a partition: plain values read from Kafka just before."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class GroupType(StrEnum):
    """What a group id names on the cluster. The rules never look at it: a group's
    position is its position whatever the type (see GroupRead)."""

    CONSUMER = "consumer"  # KIP-848's consumer protocol
    CLASSIC = "classic"  # the classic protocol, and offsets committed without joining
    SHARE = "share"  # KIP-932
    STREAMS = "streams"  # KIP-1071
    NONE = "none"  # no group of that id: read as a consumer group that never committed


@dataclass(frozen=True)
class GroupRead:
    """Where one group is on the partitions it was asked about: its committed offset for
    consumer, classic and streams groups, its share-partition start offset (the earliest
    record still undelivered or in flight; everything below is done) for share groups.
    None where it has no position, which every rule reads as "not started here"."""

    type: GroupType
    positions: Mapping[TopicPartition, int | None]


@dataclass(frozen=True)
class PartitionFacts:
    """Offsets of one partition and the committed offsets of the groups that matter to it.

    `committed[g] is None` means group g has no committed offset on this partition, which
    every rule reads as "g has not started reading here": the whole partition is protected.
    """

    tp: TopicPartition
    log_start: int
    high_watermark: int
    committed: Mapping[str, int | None] = field(default_factory=dict)
    # Epoch milliseconds -> the earliest offset whose timestamp is at or after it (ListOffsets
    # for a timestamp), None when no record is that recent.
    offsets_for_times: Mapping[int, int | None] = field(default_factory=dict)

    def offset_for_time(self, epoch_ms: int) -> int | None:
        if epoch_ms not in self.offsets_for_times:
            raise KeyError(f"no offset was read for time {epoch_ms} on {self.tp}")
        return self.offsets_for_times[epoch_ms]
