"""Tiered topics on the local stack (its brokers run LocalTieredStorage, see
hack/devstack/kafka.py): the config that sends data to remote storage within seconds, and
the remote store's files, read directly to check what the brokers say; and records written
with CreateTimes spread over hours (HOURLY_TIERED: each hour a segment of its own), read
back with a consumer, with the segment files on the brokers' disks (never what the
operator says)."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition

from devstack.kafka import KafkaCluster
from tests.helpers.records import produce

# 1 MiB segments leave the local log within a few seconds of being closed (uploaded, then
# past local.retention.ms); retention.ms -1 keeps everything in remote storage.
TIERED = {
    "remote.storage.enable": "true",
    "segment.bytes": "1048576",
    "local.retention.ms": "1000",
    "retention.ms": "-1",
}


@dataclass(frozen=True)
class RemoteFile:
    base_offset: int
    segment_id: str
    size: int


def remote_store(cluster: KafkaCluster) -> Path:
    return cluster.node(1).remote_dir / "kafka-tiered-storage"


def remote_segments(
    cluster: KafkaCluster, topic: str, partition: int, topic_id: str | None = None
) -> list[RemoteFile]:
    """The segment .log files in the remote store for one partition, by base offset (its
    directory is <topic>-<partition>-<topic id>; only that id's when given)."""
    out = []
    prefix = f"{topic}-{partition}-"
    for d in remote_store(cluster).glob(f"{prefix}*"):
        rest = d.name[len(prefix) :]
        if rest != topic_id if topic_id else len(rest) != 22:  # an id: 16 bytes, base64
            continue
        for f in d.glob("*.log"):
            base, _, segment = f.stem.partition("-")
            try:
                out.append(RemoteFile(int(base), segment, f.stat().st_size))
            except FileNotFoundError:  # deleted by the remote log manager meanwhile
                continue
    return sorted(out, key=lambda r: r.base_offset)


def wait_for_remote_segments(
    cluster: KafkaCluster, topic: str, partition: int, at_least: int, timeout: float = 60
) -> list[RemoteFile]:
    """The partition's remote segment files once at least `at_least` are there."""
    deadline = time.monotonic() + timeout
    while True:
        found = remote_segments(cluster, topic, partition)
        if len(found) >= at_least or time.monotonic() > deadline:
            assert len(found) >= at_least, f"{topic}-{partition}: {len(found)} remote segments"
            return found
        time.sleep(0.5)


# Remote storage on, and: a segment rolls when a record is 10 minutes younger than the
# segment's first (so records an hour apart go to segments of their own, segment.bytes
# cannot go below 1 MiB), local copies go a second after their newest record is that old
# and they are in remote storage, and the broker itself never deletes by age.
HOURLY_TIERED = {
    "remote.storage.enable": "true",
    "segment.ms": "600000",
    "local.retention.ms": "1000",
    "retention.ms": "-1",
}
HOUR = 3_600_000


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp_ms: int
    key: str | None


def produce_hours_apart(
    bootstrap: str, topic: str, hours_ago: Iterable[float], per_hour: int, now_ms: int
) -> None:
    """`per_hour` records to partition 0 for each entry of `hours_ago`, oldest first, a
    millisecond apart, keyed `order-<offset>`; each hour flushed on its own, so that it
    starts a segment of its own."""
    written = 0
    for hours in hours_ago:
        start = now_ms - int(hours * HOUR)
        produce(
            bootstrap,
            topic,
            {0: per_hour},
            timestamps={0: [start + i for i in range(per_hour)]},
            key=_keys_from(written),
        )
        written += per_hour


def _keys_from(base: int) -> Callable[[int, int], bytes | None]:
    return lambda _partition, i: b"order-%d" % (base + i)


def read_records(bootstrap: str, topic: str, partition: int, end: int) -> list[Record]:
    """Every record of a partition from its log start up to offset `end` (exclusive), read
    with a plain consumer: from remote storage where the brokers keep them there."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"tiered-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    out: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, partition, -2)])  # OFFSET_BEGINNING
        deadline = time.monotonic() + 30
        while (not out or out[-1].offset < end - 1) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, err
                continue
            offset = int(msg.offset() or 0)
            if offset >= end:
                break
            key = msg.key()
            out.append(Record(offset, msg.timestamp()[1], None if key is None else key.decode()))
    finally:
        consumer.close()
    read = [r.offset for r in out]
    assert read == list(range(read[0] if read else 0, end)), f"{topic}-{partition}: read {read}"
    return out


def local_segment_bases(log_dirs: Iterable[Path], topic: str, partition: int) -> list[int]:
    """Base offsets of the partition's segment files with data, on any of these log dirs."""
    return sorted(
        {
            int(f.name.removesuffix(".log"))
            for d in log_dirs
            for f in (d / f"{topic}-{partition}").glob("*.log")
            if f.stat().st_size > 0
        }
    )


def wait_until_remote(
    log_dirs: Iterable[Path],
    cluster: KafkaCluster,
    topic: str,
    topic_id: str,
    below: int,
    partition: int = 0,
) -> None:
    """Until every offset below `below` is in remote storage only: no broker keeps a
    segment with data starting below it, and the remote store has segments of the
    partition (the brokers delete local copies only once copied)."""
    dirs = list(log_dirs)
    deadline = time.monotonic() + 60
    while True:
        local = local_segment_bases(dirs, topic, partition)
        remote = [f.base_offset for f in remote_segments(cluster, topic, partition, topic_id)]
        if remote and (not local or local[0] >= below):
            return
        assert time.monotonic() < deadline, f"local segments {local}, remote {remote}"
        time.sleep(0.5)


def store_snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under `root`: its size and SHA-256, by relative path."""
    out = {}
    for f in sorted(root.rglob("*")):
        if f.is_file() and not f.is_symlink():
            data = f.read_bytes()
            out[str(f.relative_to(root))] = (len(data), hashlib.sha256(data).hexdigest())
    return out
