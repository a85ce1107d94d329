"""Tiered topics on the local stack (its brokers run LocalTieredStorage, see
hack/devstack/kafka.py): the config that sends data to remote storage within seconds, and
the remote store's files, read directly to check what the brokers say."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from devstack.kafka import KafkaCluster

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
