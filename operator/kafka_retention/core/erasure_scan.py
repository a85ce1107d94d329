"""What an erasure scan finds in one partition, and the tombstones it leads to.

A scan result holds offsets, counts and digests, never key bytes: it may travel through
status and ConfigMaps (a Spark pod run's answer), and the key of a tombstone is read back
from the log at a matched offset just before it is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_retention.core.facts import TopicPartition


@dataclass
class DigestHits:
    """One listed digest's records in one partition."""

    records: int = 0  # every record with the key, tombstones included
    values: int = 0  # those with a value (a tombstone has none)
    tombstones: int = 0
    first_offset: int = -1
    last_offset: int = -1
    last_value_offset: int | None = None
    last_tombstone_offset: int | None = None
    last_timestamp_ms: int = -1  # of the last record with the key (retention deadlines)


@dataclass
class PartitionScan:
    """One partition read over [start, end): its log start and high watermark then."""

    tp: TopicPartition
    start: int
    end: int
    examined: int = 0
    bytes_examined: int = 0
    hits: dict[str, DigestHits] = field(default_factory=dict)  # digest -> hits
    # Records of other keys at or below the last match: what a cut just past it removes.
    collateral_records: int = 0
    collateral_bytes: int = 0


@dataclass(frozen=True)
class TombstoneWrite:
    """Write a tombstone for `digest` to `tp`, with the key bytes of the record at
    `key_offset` (a record the scan matched)."""

    tp: TopicPartition
    digest: str
    key_offset: int


@dataclass(frozen=True)
class WrittenTombstone:
    offset: int
    timestamp_ms: int
