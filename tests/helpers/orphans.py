"""Orphan partition directories planted in the brokers' log dirs, and how the tests tell
that a directory was left exactly as it was."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from devstack.kafka import KafkaCluster
from tests.helpers.kafka import Kafka
from tests.helpers.records import produce
from tests.helpers.topics import create_on

# The hex part of the names a KRaft broker gives stray and future replicas.
HEX = "00112233445566778899aabbccddeeff"


def digest(path: Path) -> str:
    """A hash of every name and file content below `path` (symlinks not followed)."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        h.update(str(f.relative_to(path)).encode())
        if f.is_file() and not f.is_symlink():
            h.update(f.read_bytes())
    return h.hexdigest()


def orphan_copy(
    cluster: KafkaCluster, kafka: Kafka, topic: str, records: int, planted: list[Path]
) -> tuple[Path, str]:
    """A one-partition topic on broker 1 holding `records` records, and a copy of its
    directory planted on broker 2, which does not host it (an orphan there): the copy,
    and the digest of broker 1's live directory."""
    live = cluster.node(1).log_dir / f"{topic}-0"
    create_on(kafka.admin, topic, [1])
    produce(kafka.bootstrap, topic, {0: records})
    copy = cluster.node(2).log_dir / f"{topic}-0"
    shutil.copytree(live, copy)
    planted.append(copy)
    return copy, digest(live)


def entries(obj: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    """A policy's status.orphans by (broker, directory name)."""
    return {(e["broker"], e["name"]): e for e in obj.get("status", {}).get("orphans", [])}


def reclaimed(obj: dict[str, Any]) -> bool:
    """A check for wait_for: the policy removed an orphan directory (bytes reclaimed)."""
    reclaimed_bytes: int = obj.get("status", {}).get("orphanBytesReclaimedTotal", 0)
    return reclaimed_bytes > 0
