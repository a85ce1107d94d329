"""What the planner knows about a partition: plain values read from Kafka just before."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


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
