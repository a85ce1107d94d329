"""Reading records by offset range (the record reader, one assign-only consumer) and what
they weigh: the key as text, and each record's size in the log."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KTP

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaUnavailable

# Per-record bytes the log spends besides key, value and headers (varints, attributes,
# a share of the batch header): a rough constant, good enough for an estimate.
RECORD_OVERHEAD_BYTES = 16


def stored_size(msg: Message) -> int:
    size = len(msg.key() or b"") + len(msg.value() or b"") + RECORD_OVERHEAD_BYTES
    headers = msg.headers() or []
    pairs = list(headers.items()) if isinstance(headers, dict) else headers
    for key, value in pairs:
        # A header key is text here: its bytes in the log, as Spark's octet_length counts.
        size += len(key.encode() if isinstance(key, str) else key) + len(value or b"")
    return size


@dataclass(frozen=True)
class RecordInfo:
    offset: int
    timestamp_ms: int
    key: bytes | None
    size: int  # estimated stored bytes: key + value + headers + RECORD_OVERHEAD_BYTES
    tombstone: bool  # a null value: a delete marker on a compacted topic


MAX_KEY_CHARS = 200


def key_text(key: bytes | None) -> str | None:
    """A record key as status and events show it: UTF-8 where it is, escaped bytes where
    not, cut at MAX_KEY_CHARS (keys can be large binary blobs)."""
    return None if key is None else key.decode("utf-8", "backslashreplace")[:MAX_KEY_CHARS]


class RecordReader:
    """Reads records by offset range with one assign-only consumer (it never joins a group
    or commits). Used by the Spark scans on executors and by byte estimates."""

    # A read that receives nothing for this long gives up (KafkaUnavailable).
    IDLE_TIMEOUT_S = 10.0

    def __init__(
        self,
        bootstrap: str,
        client_config: Mapping[str, str] | None = None,
        *,
        partition_fetch_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        """`partition_fetch_bytes` bounds what one fetch brings of each partition: smaller
        for reads of a few records (a broker still sends a whole first batch however big)."""
        self._consumer = Consumer(
            {
                **(client_config or {}),
                "bootstrap.servers": bootstrap,
                "group.id": f"kafka-retention-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "fetch.max.bytes": max(16 * 1024 * 1024, partition_fetch_bytes),
                "max.partition.fetch.bytes": partition_fetch_bytes,
                "log_level": 0,
            }
        )

    def read(self, tp: TopicPartition, start: int, end: int) -> Iterator[RecordInfo]:
        """Records with offsets in [start, end); fewer where retention or compaction removed
        some. Raises KafkaUnavailable when nothing arrives for the idle timeout."""
        for _, record in self.read_many({tp: (start, end)}):
            yield record

    def read_many(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], first: int | None = None
    ) -> Iterator[tuple[TopicPartition, RecordInfo]]:
        """Records of several partitions at once, each within its own [start, end).

        One assignment for all of them: a slice of hundreds of partitions costs one fetch
        round per broker rather than one consumer round trip per partition. A partition
        that reached its end is paused so the fetcher stops reading it. With `first`, each
        partition yields only its first `first` records in range (a point lookup, or the
        first keys, that still works where compaction removed the exact offsets).
        """
        open_ranges = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
        left = dict.fromkeys(open_ranges, first or 0)
        if not open_ranges or (first is not None and first <= 0):
            return
        assigned = [KTP(tp.topic, tp.partition, start) for tp, (start, _) in open_ranges.items()]
        self._consumer.assign(assigned)
        # A pause outlives unassign in librdkafka: a partition paused by an earlier read
        # of this reader would otherwise deliver nothing now.
        self._consumer.resume(assigned)
        try:
            last_progress = time.monotonic()
            while open_ranges:
                # consume() waits out its timeout unless the batch fills: keep it short so
                # a point lookup costs milliseconds, while bulk reads still fill batches.
                batch = self._consumer.consume(num_messages=5000, timeout=0.05)
                if not batch and time.monotonic() - last_progress > self.IDLE_TIMEOUT_S:
                    pending = ", ".join(str(tp) for tp in list(open_ranges)[:5])
                    raise KafkaUnavailable(
                        f"no records from {pending} for {self.IDLE_TIMEOUT_S:.0f}s"
                    )
                for msg in batch:
                    tp = TopicPartition(str(msg.topic()), int(msg.partition() or 0))
                    if tp not in open_ranges:
                        continue
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            self._done(open_ranges, tp)
                            continue
                        raise KafkaUnavailable(f"reading {tp}: {err.str()}")
                    last_progress = time.monotonic()
                    offset = int(msg.offset() or 0)
                    end = open_ranges[tp][1]
                    if offset >= end:
                        self._done(open_ranges, tp)
                        continue
                    yield (
                        tp,
                        RecordInfo(
                            offset,
                            int(msg.timestamp()[1]),
                            msg.key(),
                            stored_size(msg),
                            msg.value() is None,
                        ),
                    )
                    left[tp] -= 1
                    if left[tp] == 0 or offset == end - 1:
                        self._done(open_ranges, tp)
        finally:
            self._consumer.unassign()

    def _done(self, open_ranges: dict[TopicPartition, tuple[int, int]], tp: TopicPartition) -> None:
        del open_ranges[tp]
        self._consumer.pause([KTP(tp.topic, tp.partition)])

    def close(self) -> None:
        self._consumer.close()


def average_record_sizes(
    reader: RecordReader, ranges: Mapping[TopicPartition, tuple[int, int]], sample: int
) -> dict[TopicPartition, float]:
    """Average stored bytes of the first `sample` records of each [start, end) range."""
    wanted = {tp: (start, min(end, start + sample)) for tp, (start, end) in ranges.items()}
    sizes: dict[TopicPartition, list[int]] = {tp: [] for tp in wanted}
    for tp, record in reader.read_many(wanted):
        sizes[tp].append(record.size)
    return {tp: sum(found) / len(found) for tp, found in sizes.items() if found}
