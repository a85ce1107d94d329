"""Executor-side record scans: they read records by offset range with RecordReader."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kafka_retention.adapters.kafka import RecordReader
from kafka_retention.core.facts import TopicPartition
from retention_jobs.request import Connection

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
    reader = _reader(conn)
    try:
        for topic, partition, start, end in items:
            sizes = [
                r.size
                for r in reader.read(
                    TopicPartition(topic, partition), start, min(end, start + sample)
                )
            ]
            yield topic, partition, (sum(sizes) / len(sizes)) if sizes else None
    finally:
        reader.close()


def time_lags(
    items: Iterable[tuple[str, int, str, int, int]], conn: Connection, now_ms: int
) -> Iterator[LagRow]:
    """(topic, partition, group, committed, high watermark) -> how old the next record the
    group would read is (0 when it has read everything)."""
    reader = _reader(conn)
    try:
        for topic, partition, group, committed, hw in items:
            if committed >= hw:
                yield topic, partition, group, 0
                continue
            # The next record the group reads (compaction may have moved it past `committed`).
            first = next(iter(reader.read(TopicPartition(topic, partition), committed, hw)), None)
            yield (
                topic,
                partition,
                group,
                (None if first is None else max(0, now_ms - first.timestamp_ms)),
            )
    finally:
        reader.close()


def unconsumed(
    items: Iterable[tuple[str, int, str, int, int]], conn: Connection, key_sample: int
) -> Iterator[UnconsumedRow]:
    """(topic, partition, group, from, to) -> what a cut at `to` removes that the group has
    not read: record count, bytes, and the first keys with their offsets."""
    reader = _reader(conn)
    try:
        for topic, partition, group, start, end in items:
            count = size = 0
            keys: list[tuple[int, str | None]] = []
            for rec in reader.read(TopicPartition(topic, partition), start, end):
                count += 1
                size += rec.size
                if len(keys) < key_sample:
                    keys.append(
                        (
                            rec.offset,
                            None
                            if rec.key is None
                            else rec.key.decode("utf-8", "backslashreplace")[:200],
                        )
                    )
            yield topic, partition, group, count, size, keys
    finally:
        reader.close()


def tombstones(
    items: Iterable[tuple[str, int, int, int]], conn: Connection, oldest_kept: int
) -> Iterator[TombstoneRow]:
    """(topic, partition, log start, end) -> records read, tombstones, their oldest and
    newest timestamps, and the oldest few (offset, timestamp), oldest first."""
    reader = _reader(conn)
    try:
        for topic, partition, start, end in items:
            read = count = 0
            oldest: int | None = None
            newest: int | None = None
            first: list[tuple[int, int]] = []
            for rec in reader.read(TopicPartition(topic, partition), start, end):
                read += 1
                if not rec.tombstone:
                    continue
                count += 1
                oldest = rec.timestamp_ms if oldest is None else min(oldest, rec.timestamp_ms)
                newest = rec.timestamp_ms if newest is None else max(newest, rec.timestamp_ms)
                first.append((rec.offset, rec.timestamp_ms))
                if len(first) > oldest_kept * 4:
                    first = sorted(first, key=lambda x: x[1])[:oldest_kept]
            first = sorted(first, key=lambda x: x[1])[:oldest_kept]
            yield topic, partition, read, count, oldest, newest, first
    finally:
        reader.close()
