"""Tiered storage for the Kafka adapter: where each partition's records are (ListOffsets
earliest-local, latest-tiered and earliest-pending-upload, which librdkafka refuses, so
through the group reader's Java Admin), the brokers' local bytes (DescribeLogDirs, also
the Java Admin's), and the remote log metadata the brokers keep in Kafka itself.

The metadata topic (`__remote_log_metadata`, the default topic-based metadata manager's)
holds one record per segment event: copy started, copied, delete started, deleted. It is
read whole, from each partition's start to the high watermark seen at the start of the
read, and decoded here: Kafka's own serde (RemoteLogMetadataSerde) is a broker class no
client ships. KafkaAdmin takes these methods from TierReads.
"""

from __future__ import annotations

import base64
import struct
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient

from kafka_retention.adapters import group_reader
from kafka_retention.adapters.kafka_calls import connection_key
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.java_client import Unmappable
from kafka_retention.core.tiers import (
    MetadataRecord,
    RemoteLog,
    RemoteSegment,
    SegmentId,
    SegmentState,
    SegmentUpdate,
    TierOffsets,
)

METADATA_TOPIC = "__remote_log_metadata"
# The record kinds (api keys) of the remote log metadata; 2 (a partition deleted) and 3 (a
# snapshot) change no segment's state as this reads it.
_SEGMENT, _UPDATE = 0, 1
# A read of the metadata topic that receives nothing for this long gives up.
IDLE_TIMEOUT_S = 10.0
# How long one read of the metadata topic answers every caller of the same connection.
REMOTE_LOG_FRESH_S = 3.0
# connection_key -> (when read, what was read); a key unused for a minute goes.
_cache: dict[str, tuple[float, RemoteLog]] = {}
_cache_lock = threading.Lock()


class MetadataFormatError(ValueError):
    """A metadata record this decoder cannot read (a frame or version it does not know)."""


class _Reader:
    """Kafka's message encoding, flexible versions: big-endian integers, unsigned varints,
    compact strings and arrays (length + 1), and a tagged-field section per struct."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise MetadataFormatError("remote log metadata record ends early")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise MetadataFormatError("varint too long in remote log metadata")

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def uuid(self) -> str:
        # As Kafka prints a Uuid: URL-safe base64 of its 16 bytes, without padding.
        return base64.urlsafe_b64encode(self.take(16)).rstrip(b"=").decode()

    def string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise MetadataFormatError("null string in remote log metadata")
        return self.take(n).decode("utf-8")

    def nullable_bytes(self) -> bytes | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n)

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())


def _segment_id(r: _Reader) -> SegmentId:
    topic = r.string()
    topic_id = r.uuid()
    partition = r.int32()
    r.tags()  # TopicIdPartitionEntry's
    segment = r.uuid()
    r.tags()  # RemoteLogSegmentIdEntry's
    return SegmentId(topic, topic_id, partition, segment)


def _state(value: int) -> SegmentState:
    try:
        return SegmentState(value)
    except ValueError:
        raise MetadataFormatError(f"unknown remote segment state {value}") from None


def decode(value: bytes) -> MetadataRecord | None:
    """One metadata record (AbstractApiMessageSerde's frame: frame version 1, api key,
    message version, then the message); None for kinds that change no segment."""
    r = _Reader(value)
    frame = r.uvarint()
    if frame != 1:
        raise MetadataFormatError(f"remote log metadata frame version {frame}")
    api_key, version = r.uvarint(), r.uvarint()
    if api_key not in (_SEGMENT, _UPDATE):
        return None
    if version != 0:
        raise MetadataFormatError(f"remote log metadata record {api_key} version {version}")
    seg = _segment_id(r)
    if api_key == _UPDATE:
        r.int32()  # broker id
        event_ms = r.int64()
        r.nullable_bytes()  # custom metadata
        return SegmentUpdate(seg, _state(r.int8()), event_ms)
    start, end = r.int64(), r.int64()
    r.int32()  # broker id
    max_ts, event_ms = r.int64(), r.int64()
    for _ in range(r.uvarint() - 1):  # leader epochs
        r.int32()
        r.int64()
        r.tags()
    size = r.int32()
    r.nullable_bytes()  # custom metadata
    state = _state(r.int8())
    return RemoteSegment(seg, start, end, size, max_ts, state, event_ms)


class TierReads:
    """Tier offsets, local bytes and the remote log; mixed into KafkaAdmin, which sets
    these attributes."""

    _admin: AdminClient
    _bootstrap: str
    _client_config: dict[str, str]
    _timeout: float

    def _java(self, what: str) -> tuple[group_reader.GroupReader, dict[str, str]]:
        reader = group_reader.shared()
        if reader is None:
            raise KafkaUnavailable(
                f"{what} is read with the group reader (Kafka's Java Admin), which is not "
                f"installed here (set {group_reader.ENV} to its jars: `make setup` builds "
                f"them, the image has them)"
            )
        try:
            properties = group_reader.admin_properties(
                self._bootstrap, self._client_config, self._timeout
            )
        except Unmappable as err:
            raise KafkaUnavailable(
                f"{what}: Kafka's Java client has no equivalent of client property {err}"
            ) from err
        return reader, properties

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, TierOffsets]:
        """Where each partition's records are; raises KafkaUnavailable when it cannot say."""
        wanted = list(dict.fromkeys(tps))
        if not wanted:
            return {}
        reader, properties = self._java("where tiered records are")
        try:
            return reader.read_tiers(properties, wanted, (), self._timeout)[0]
        except group_reader.GroupReaderError as err:
            raise KafkaUnavailable(f"tier offsets: {err}") from err

    def local_bytes(self, topics: Iterable[str]) -> dict[str, int]:
        """Each topic's bytes on the brokers' disks, every replica counted (what
        DescribeLogDirs says; remote bytes are never in it, kafka#20211)."""
        wanted = sorted(set(topics))
        if not wanted:
            return {}
        reader, properties = self._java("local log sizes")
        try:
            sizes = reader.read_tiers(properties, (), wanted, self._timeout)[1]
        except group_reader.GroupReaderError as err:
            raise KafkaUnavailable(f"local log sizes: {err}") from err
        out = dict.fromkeys(wanted, 0)
        for (_, tp), size in sizes.items():
            out[tp.topic] = out.get(tp.topic, 0) + size
        return out

    def remote_log(self) -> RemoteLog:
        """Every remote segment's latest state, from the brokers' remote log metadata.
        Raises KafkaUnavailable when the topic cannot be read whole (missing: the cluster
        has no topic-based metadata, or this connection may not read it).

        One read serves every caller with the same connection for REMOTE_LOG_FRESH_S: the
        topic is read whole, and several watched purges (or a purge and a policy batch) on
        one cluster would otherwise each read it every few seconds. The key is the whole
        connection (kafka_calls.connection_key)."""
        key = connection_key(self._bootstrap, self._client_config)
        with _cache_lock:
            now = time.monotonic()
            for stale in [k for k, (t, _) in _cache.items() if now - t > 60]:
                del _cache[stale]
            cached = _cache.get(key)
            if cached is not None and now - cached[0] < REMOTE_LOG_FRESH_S:
                return cached[1]
        config: dict[str, Any] = {
            **self._client_config,
            "bootstrap.servers": self._bootstrap,
            "group.id": f"kafka-retention-tiers-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            # An offset out of range (retention on the metadata topic moved its start
            # during the read) must fail the read, never skip to the end: the records
            # skipped would be segments counted as never there.
            "auto.offset.reset": "error",
            "log_level": 0,
        }
        try:
            consumer = Consumer(config)
            try:
                found = RemoteLog(self._metadata_records(consumer))
            finally:
                consumer.close()
        except KafkaException as exc:
            raise KafkaUnavailable(f"reading {METADATA_TOPIC}: {exc}") from exc
        with _cache_lock:
            _cache[key] = (time.monotonic(), found)
            for stale in [k for k, (at, _) in _cache.items() if time.monotonic() - at > 60]:
                del _cache[stale]
        return found

    def _metadata_records(self, consumer: Consumer) -> list[MetadataRecord]:
        meta = consumer.list_topics(METADATA_TOPIC, timeout=self._timeout)
        topic = meta.topics.get(METADATA_TOPIC)
        if topic is None or topic.error is not None or not topic.partitions:
            why = topic.error.str() if topic is not None and topic.error else "no such topic"
            raise KafkaUnavailable(f"reading {METADATA_TOPIC}: {why}")
        ends: dict[int, int] = {}
        starts: dict[int, int] = {}
        for p in sorted(topic.partitions):
            try:
                low, high = consumer.get_watermark_offsets(
                    KTP(METADATA_TOPIC, p), timeout=self._timeout
                )
            except Exception as exc:
                raise KafkaUnavailable(f"reading {METADATA_TOPIC}-{p}: {exc}") from exc
            if high > low:
                starts[p], ends[p] = int(low), int(high)
        if not ends:
            return []
        consumer.assign([KTP(METADATA_TOPIC, p, starts[p]) for p in ends])
        out: list[MetadataRecord] = []
        last = time.monotonic()
        while ends:
            batch = consumer.consume(num_messages=5000, timeout=0.1)
            if not batch and time.monotonic() - last > IDLE_TIMEOUT_S:
                raise KafkaUnavailable(
                    f"reading {METADATA_TOPIC}: nothing for {IDLE_TIMEOUT_S:.0f}s"
                )
            for msg in batch:
                p = int(msg.partition() or 0)
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        ends.pop(p, None)
                        continue
                    raise KafkaUnavailable(f"reading {METADATA_TOPIC}-{p}: {err.str()}")
                last = time.monotonic()
                offset = int(msg.offset() or 0)
                if p not in ends or offset >= ends[p]:
                    ends.pop(p, None)
                    continue
                value = msg.value()
                try:
                    record = decode(value) if value is not None else None
                except MetadataFormatError as err:
                    raise KafkaUnavailable(f"{METADATA_TOPIC}-{p} at {offset}: {err}") from err
                if record is not None:
                    out.append(record)
                if offset >= ends[p] - 1:
                    ends.pop(p, None)
        return out
