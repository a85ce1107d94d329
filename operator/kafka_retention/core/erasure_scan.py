"""What an erasure scan finds in one partition, and the tombstones it leads to.

A scan result holds offsets, counts and digests, never key bytes: it may travel through
status and ConfigMaps (a Spark pod run's answer), and the key of a tombstone is read back
from the log at a matched offset just before it is written.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_retention.core import typed_json
from kafka_retention.core.facts import TopicPartition

_DIGEST = re.compile(r"[0-9a-f]{64}")


class KeyMatcher:
    """Which listed digest a record key has, if any: SHA-256 of the key bytes looked up in
    a set of raw 32-byte digests (one hash and one set lookup a record, whatever the
    number of digests)."""

    def __init__(self, digests: Iterable[str]) -> None:
        self._hex: dict[bytes, str] = {}
        for i, digest in enumerate(digests):
            # The parser hands over lowercase hex; anything else here is a bug, and the
            # message names the position only (a malformed "digest" may be a pasted key).
            if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
                raise ValueError(f"digest #{i} is not 64 lowercase hexadecimal characters")
            self._hex[bytes.fromhex(digest)] = digest

    def __len__(self) -> int:
        return len(self._hex)

    def __repr__(self) -> str:
        return f"KeyMatcher({len(self._hex)} digests)"

    def match(self, key: bytes | None) -> str | None:
        """The listed digest (hex) of `key`, or None: keyless records never match."""
        if key is None:
            return None
        return self._hex.get(hashlib.sha256(key).digest())


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

    @property
    def matches(self) -> int:
        """Records with a listed key, tombstones included (0: the keys are gone here)."""
        return sum(h.records for h in self.hits.values())

    @property
    def values(self) -> int:
        """Records with a listed key and a value (0: the values are gone here)."""
        return sum(h.values for h in self.hits.values())

    def to_json(self) -> dict[str, Any]:
        """As json.dumps takes it: camelCase keys, hits by digest. No key bytes exist in
        a scan, so none can leave with it."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "start": self.start,
            "end": self.end,
            "examined": self.examined,
            "bytesExamined": self.bytes_examined,
            "hits": {d: typed_json.encode(h, typed_json.camel) for d, h in self.hits.items()},
            "collateralRecords": self.collateral_records,
            "collateralBytes": self.collateral_bytes,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PartitionScan:
        """The scan `to_json` wrote. Refuses (ValueError) unknown or mistyped fields and a
        hits key that is not a digest: the document may come back through a ConfigMap."""
        known = {
            "topic",
            "partition",
            "start",
            "end",
            "examined",
            "bytesExamined",
            "hits",
            "collateralRecords",
            "collateralBytes",
        }
        if not isinstance(raw, Mapping) or not known.issuperset(raw):
            raise ValueError("PartitionScan: not an object of the known fields")
        topic = raw.get("topic")
        if not isinstance(topic, str) or not topic:
            raise ValueError("PartitionScan.topic: expected a topic name")
        ints = {
            k: raw.get(k, 0)
            for k in (
                "partition",
                "start",
                "end",
                "examined",
                "bytesExamined",
                "collateralRecords",
                "collateralBytes",
            )
        }
        for k, v in ints.items():
            if type(v) is not int:  # bool is an int subclass, and never an offset
                raise ValueError(f"PartitionScan.{k}: expected an integer")
        found = raw.get("hits", {})
        if not isinstance(found, Mapping):
            raise ValueError("PartitionScan.hits: expected an object")
        hits: dict[str, DigestHits] = {}
        for i, (digest, entry) in enumerate(found.items()):
            if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
                raise ValueError(f"PartitionScan.hits: key #{i} is not a digest")
            hits[digest] = typed_json.decode(DigestHits, entry, typed_json.camel)
        return cls(
            TopicPartition(topic, ints["partition"]),
            ints["start"],
            ints["end"],
            ints["examined"],
            ints["bytesExamined"],
            hits,
            ints["collateralRecords"],
            ints["collateralBytes"],
        )


class ScanTally:
    """One partition's scan, fed record by record in offset order by whatever reads it
    (the operator's reader, a Spark executor). It keeps counts and offsets only: the key
    of a record is hashed and dropped."""

    def __init__(self, tp: TopicPartition, start: int, end: int, matcher: KeyMatcher) -> None:
        self._scan = PartitionScan(tp, start, end)
        self._matcher = matcher
        self._last_offset = start - 1
        # Records and bytes of other keys so far: at each match they become the
        # collateral, as a cut just past that match would take them all.
        self._others, self._other_bytes = 0, 0

    def add(
        self, offset: int, timestamp_ms: int, key: bytes | None, is_null: bool, size: int
    ) -> None:
        """One record: `is_null` when its value is null (a tombstone), `size` its bytes
        in the log. Offsets must rise and stay within [start, end)."""
        scan = self._scan
        if offset <= self._last_offset or offset >= scan.end:
            # Out of order or out of range, the collateral and last offsets would lie.
            raise ValueError(
                f"{scan.tp}: offset {offset} after {self._last_offset}, "
                f"range [{scan.start}, {scan.end})"
            )
        self._last_offset = offset
        scan.examined += 1
        scan.bytes_examined += size
        digest = self._matcher.match(key)
        if digest is None:
            self._others += 1
            self._other_bytes += size
            return
        hits = scan.hits.get(digest)
        if hits is None:
            hits = scan.hits[digest] = DigestHits(first_offset=offset)
        hits.records += 1
        hits.last_offset = offset
        hits.last_timestamp_ms = timestamp_ms
        if is_null:
            hits.tombstones += 1
            hits.last_tombstone_offset = offset
        else:
            hits.values += 1
            hits.last_value_offset = offset
        scan.collateral_records, scan.collateral_bytes = self._others, self._other_bytes

    def result(self) -> PartitionScan:
        return self._scan


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
