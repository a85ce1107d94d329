"""Executor-side record scans: they read records by offset range with RecordReader."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kafka_retention.adapters.kafka_records import (
    RecordInfo,
    RecordReader,
    average_record_sizes,
    key_text,
)
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_request import Connection

SizeRow = tuple[str, int, float | None]
LagRow = tuple[str, int, str, int | None]
UnconsumedRow = tuple[str, int, str, int, int, list[tuple[int, str | None]]]
TombstoneRow = tuple[str, int, int, int, int | None, int | None, list[tuple[int, int]]]


def _reader(conn: Connection) -> RecordReader:
    return RecordReader(conn.bootstrap_servers, conn.client_config)


def average_sizes(
    items: Iterable[tuple[str, int, int, int]], conn: Connection, sample: int
) -> Iterator[SizeRow]:
    """(topic, partition, log start, end) -> average stored bytes of the first records."""
    ranges = {TopicPartition(t, p): (start, end) for t, p, start, end in items}
    reader = _reader(conn)
    try:
        found = average_record_sizes(reader, ranges, sample)
    finally:
        reader.close()
    for tp in ranges:
        yield tp.topic, tp.partition, found.get(tp)


def time_lags(
    items: Iterable[tuple[str, int, str, int, int]], conn: Connection, now_ms: int
) -> Iterator[LagRow]:
    """(topic, partition, group, committed, high watermark) -> how old the next record the
    group would read is (0 when it has read everything). One read per group covers all of
    that group's partitions in this slice."""
    by_group: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
    for topic, partition, group, committed, hw in items:
        if committed >= hw:
            yield topic, partition, group, 0
        else:
            # The next record the group reads; compaction may have moved it past
            # `committed`, so the range runs to the high watermark and stops at the first.
            by_group.setdefault(group, {})[TopicPartition(topic, partition)] = (committed, hw)
    reader = _reader(conn)
    try:
        for group, ranges in by_group.items():
            first = {tp: rec.timestamp_ms for tp, rec in reader.read_many(ranges, first=1)}
            for tp in ranges:
                ts = first.get(tp)
                yield tp.topic, tp.partition, group, (None if ts is None else max(0, now_ms - ts))
    finally:
        reader.close()


def unconsumed(
    items: Iterable[tuple[str, int, str, int, int]], conn: Connection, key_sample: int
) -> Iterator[UnconsumedRow]:
    """(topic, partition, group, from, to) -> what a cut at `to` removes that the group has
    not read: record count, bytes, and the first keys with their offsets."""
    by_group: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
    for topic, partition, group, start, end in items:
        by_group.setdefault(group, {})[TopicPartition(topic, partition)] = (start, end)
    reader = _reader(conn)
    try:
        for group, ranges in by_group.items():
            found = {tp: _Tally() for tp in ranges}
            for tp, rec in reader.read_many(ranges):
                found[tp].add(rec, key_sample)
            for tp, tally in found.items():
                yield tp.topic, tp.partition, group, tally.count, tally.size, tally.keys
    finally:
        reader.close()


Range = tuple[str, int, int, int]  # topic, partition, start, end (exclusive)


def first_keys(
    conn: Connection, ranges: Iterable[Range], key_sample: int
) -> dict[Range, list[tuple[int, str | None]]]:
    """The first `key_sample` records' (offset, key) of each range: the sample the other
    scans show beside what they count. A few records at each start, so small fetches;
    a partition asked for several ranges is read once per range, in rounds."""
    found: dict[Range, list[tuple[int, str | None]]] = {}
    if key_sample <= 0:
        return found
    rounds: list[dict[TopicPartition, tuple[int, int]]] = []
    for topic, partition, start, end in ranges:
        tp = TopicPartition(topic, partition)
        free = next((r for r in rounds if tp not in r), None)
        if free is None:
            rounds.append(free := {})
        free[tp] = (start, end)
    reader = RecordReader(
        conn.bootstrap_servers, conn.client_config, partition_fetch_bytes=SAMPLE_FETCH_BYTES
    )
    try:
        for asked in rounds:
            for tp, rec in reader.read_many(asked, first=key_sample):
                key = (tp.topic, tp.partition, *asked[tp])
                found.setdefault(key, []).append((rec.offset, key_text(rec.key)))
    finally:
        reader.close()
    return found


# A fetch of each partition for a key sample: about ten records of a few KiB each.
SAMPLE_FETCH_BYTES = 256 * 1024


class _Tally:
    def __init__(self) -> None:
        self.count = self.size = 0
        self.keys: list[tuple[int, str | None]] = []

    def add(self, rec: RecordInfo, key_sample: int) -> None:
        self.count += 1
        self.size += rec.size
        if len(self.keys) < key_sample:
            self.keys.append((rec.offset, key_text(rec.key)))


class _Tombstones:
    def __init__(self) -> None:
        self.read = self.count = 0
        self.oldest: int | None = None
        self.newest: int | None = None
        self.first: list[tuple[int, int]] = []

    def add(self, rec: RecordInfo, kept: int) -> None:
        self.read += 1
        if not rec.tombstone:
            return
        ts = rec.timestamp_ms
        self.count += 1
        self.oldest = ts if self.oldest is None else min(self.oldest, ts)
        self.newest = ts if self.newest is None else max(self.newest, ts)
        self.first.append((rec.offset, ts))
        if len(self.first) > kept * 4:  # keep memory bounded on huge partitions
            self.first = sorted(self.first, key=lambda x: x[1])[:kept]


def tombstones(
    items: Iterable[tuple[str, int, int, int]], conn: Connection, oldest_kept: int
) -> Iterator[TombstoneRow]:
    """(topic, partition, log start, end) -> records read, tombstones, their oldest and
    newest timestamps, and the oldest few (offset, timestamp), oldest first."""
    ranges = {TopicPartition(t, p): (start, end) for t, p, start, end in items}
    found = {tp: _Tombstones() for tp in ranges}
    reader = _reader(conn)
    try:
        for tp, rec in reader.read_many(ranges):
            found[tp].add(rec, oldest_kept)
    finally:
        reader.close()
    for tp, t in found.items():
        oldest_first = sorted(t.first, key=lambda x: x[1])[:oldest_kept]
        yield tp.topic, tp.partition, t.read, t.count, t.oldest, t.newest, oldest_first
