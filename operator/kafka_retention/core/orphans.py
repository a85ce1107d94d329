"""Orphan partition directories on broker volumes (KAFKA-7362, KIP-370/KIP-550).

A broker keeps `<topic>-<partition>` directories the cluster no longer assigns to it: a
reassignment done while it was down, a topic deleted while it was away, and in KRaft the
`<topic>-<partition>.<32 hex>-stray` copies it renames and never deletes. This module
decides, without touching any disk, which directories are orphans and when one may go.

Deleting a directory a broker still serves loses data for good, so every rule leans to
keeping: a name the parser does not recognise, a symlink, a `-future` directory (a log
dir move in progress) are reported and never removed; a candidate waits `removalDelay`
of continuous orphanhood and `minAge` past its newest file, and the caller re-reads the
cluster metadata just before the delete (`orphan_guards.still_orphan`). The adapters get
paths only from `adapters.volume_commands.safe_child`, and its exec scripts take names as
positional parameters, so no shell string is ever built from a name found on a disk.

Whose disk it is comes first: a check pointed at one cluster's metadata and another
cluster's broker volumes would find every live directory unassigned. So a log dir is
judged only when its `meta.properties` names the `cluster.id` the metadata came from and
the `node.id` of a broker whose `log.dirs` names that dir, and circuit breakers hold
everything when the metadata looks wrong in bulk (core/orphan_guards.py: identity,
metadata and removal-cap blocks, and the decision that follows).

Kafka facts relied on (checked in Kafka's LocalLog and PartitionMetadataFile):
- the 32 hex of `-stray`/`-delete`/`-future` names is a fresh random UUID, not the topic
  id; for `-stray` and `-delete` the topic part is cut short so the name fits 255 chars;
- `partition.metadata` reads `version: 0` then `topic_id: <id>`, the id being Kafka's
  Uuid string: 16 bytes in URL-safe base64 without padding (22 characters).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from kafka_retention.core.specs import MAX_PARTITION

Kind = Literal["partition", "stray", "delete", "future", "broker_file", "unknown"]
Verdict = Literal["orphan", "assigned", "kept", "delete_pending", "future", "unknown"]

# topic name -> (live topic id, {partition: replica broker ids}), as the cluster says now.
Assignment = Mapping[str, tuple[str, Mapping[int, AbstractSet[int]]]]

METADATA_TOPIC = "__cluster_metadata"  # the KRaft metadata log: never a candidate
MAX_TOPIC_LENGTH = 249
_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
# The directory where a broker with tiered storage caches remote segments' indexes
# (Kafka's RemoteIndexCache.DIR_NAME), in its log dir beside the partitions.
REMOTE_INDEX_CACHE = "remote-log-index-cache"
# Files the broker keeps beside its partition dirs (with the .tmp its atomic writes leave).
BROKER_FILES = frozenset(
    # bootstrap.checkpoint: a KRaft broker's snapshot of the bootstrap metadata records.
    {"meta.properties", ".lock", ".kafka_cleanshutdown", "bootstrap.checkpoint", *_CHECKPOINTS}
    | {f"{c}.tmp" for c in _CHECKPOINTS}
    | {REMOTE_INDEX_CACHE}
)
LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
_PARTITION = r"(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>0|[1-9][0-9]{0,9})"
_PLAIN = re.compile(_PARTITION)
_SUFFIXED = re.compile(_PARTITION + r"\.[0-9a-f]{32}-(?P<kind>stray|delete|future)")
TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")
_SUFFIX_KINDS: Mapping[str, Kind] = {"stray": "stray", "delete": "delete", "future": "future"}


@dataclass(frozen=True)
class DirName:
    """What a log dir entry's name says it is; topic and partition only for partition
    kinds (a stray or delete topic may be a truncated prefix of the real name)."""

    kind: Kind
    topic: str | None = None
    partition: int | None = None


def _legal_topic(topic: str) -> bool:
    return 1 <= len(topic) <= MAX_TOPIC_LENGTH and topic not in (".", "..")


def parse_name(name: str) -> DirName:
    """The kind of a log dir entry; `unknown` for anything outside Kafka's naming, which
    covers `/`, NUL, whitespace, shell metacharacters and `..` (none is a legal topic
    character or name) and partition numbers with leading zeros."""
    if name in BROKER_FILES:
        return DirName("broker_file")
    if len(name) > 255 or not LEGAL_NAME.fullmatch(name):
        return DirName("unknown")
    match = _SUFFIXED.fullmatch(name) or _PLAIN.fullmatch(name)
    if not match or not _legal_topic(match["topic"]) or int(match["partition"]) > MAX_PARTITION:
        return DirName("unknown")
    if match["topic"] == METADATA_TOPIC:
        return DirName("broker_file")
    kind = _SUFFIX_KINDS.get(match.groupdict().get("kind") or "", "partition")
    return DirName(kind, match["topic"], int(match["partition"]))


def topic_id_from_partition_metadata(text: str) -> str | None:
    """The topic id a `partition.metadata` names; None when it names none we can trust
    (a missing, truncated or foreign id must never read as a different topic)."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "topic_id":
            value = value.strip()
            return value if TOPIC_ID.fullmatch(value) else None
    return None


_NODE_ID = re.compile(r"[0-9]{1,10}")
# What Kafka writes as cluster.id is a base64 Uuid (22 characters); anything outside this
# bounded alphabet is read as no id at all, so a planted file cannot put text of its
# choosing into a status message.
_CLUSTER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _properties(text: str) -> dict[str, str]:
    """Java properties as Kafka's meta.properties uses them: `key=value` lines, `#`/`!`
    comments; the last of a repeated key wins, as in java.util.Properties."""
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith(("#", "!")):
            props[key.strip()] = value.strip()
    return props


@dataclass(frozen=True)
class LogDirIdentity:
    """Whose a log dir is, as its `meta.properties` says. None for a field it does not
    name in a form Kafka writes; `meta_found` False when the log dir is there but has no
    meta.properties (a regular file) at all."""

    node_id: int | None
    cluster_id: str | None
    meta_found: bool = True


NO_META = LogDirIdentity(None, None, meta_found=False)


def identity_from_meta(text: str) -> LogDirIdentity:
    """The node id (`node.id`, or `broker.id` as ZooKeeper-era dirs wrote it) and the
    cluster id a meta.properties names. Both keys naming different nodes is no node id."""
    props = _properties(text)
    nodes = {
        int(props[k]) for k in ("node.id", "broker.id") if _NODE_ID.fullmatch(props.get(k, ""))
    }
    cluster = props.get("cluster.id", "")
    return LogDirIdentity(
        nodes.pop() if len(nodes) == 1 else None,
        cluster if _CLUSTER_ID.fullmatch(cluster) else None,
    )


def node_id_from_meta(text: str) -> int:
    """The node id in a log dir's `meta.properties`; ValueError when it names none."""
    node = identity_from_meta(text).node_id
    if node is None:
        raise ValueError("meta.properties names no node.id")
    return node


@dataclass(frozen=True)
class Entry:
    """One log dir entry as an adapter saw it, without following symlinks."""

    name: str
    is_dir: bool
    is_symlink: bool
    size_bytes: int  # regular files inside, summed (a file: its own size)
    newest_segment_mtime_ms: int | None  # newest regular file inside; None if none
    topic_id: str | None  # from partition.metadata, when present and well formed


@dataclass(frozen=True)
class Finding:
    entry: Entry
    dir_name: DirName
    verdict: Verdict
    reason: str

    @property
    def kind(self) -> Kind:
        return self.dir_name.kind


def _live_topic(
    dir_name: DirName, topic_id: str | None, assignment: Assignment
) -> tuple[str, Mapping[int, AbstractSet[int]]] | None:
    """The live topic a directory belongs to; a stray name may carry a truncated topic,
    so a stray is also found by its topic id."""
    live = assignment.get(dir_name.topic or "")
    if live is None and dir_name.kind == "stray" and topic_id is not None:
        live = next((t for t in assignment.values() if t[0] == topic_id), None)
    return live


def live_topic_name(dir_name: DirName, topic_id: str | None, assignment: Assignment) -> str | None:
    """The live topic a directory is a copy of, when the ids do not say it is another
    topic's (one deleted, or made again under its name since); None when there is none."""
    name = dir_name.topic or ""
    live = assignment.get(name)
    if dir_name.kind == "stray" and topic_id and (live is None or live[0] != topic_id):
        # A stray's name may be cut short, and so may spell another live topic's name:
        # its topic id says whose copy it is, and that topic's holds must apply to it.
        by_id = next((n for n, t in sorted(assignment.items()) if t[0] == topic_id), None)
        if by_id is not None:
            name, live = by_id, assignment[by_id]
    if live is None:
        return None
    if topic_id and TOPIC_ID.fullmatch(live[0]) and topic_id != live[0]:
        return None
    return name


def orphan_reason(
    broker_id: int, dir_name: DirName, topic_id: str | None, assignment: Assignment
) -> str | None:
    """Why the partition a directory holds is not this broker's; None when it is. A
    directory without a readable topic id is judged by its name alone."""
    live = _live_topic(dir_name, topic_id, assignment)
    if live is None:
        return "topic no longer exists"
    live_id, replicas = live
    # An id we could not read on either side proves nothing: never an orphan by id alone.
    if topic_id and TOPIC_ID.fullmatch(live_id) and topic_id != live_id:
        return f"topic id {topic_id} differs from live topic id {live_id}"
    partition = dir_name.partition
    if partition is None or broker_id not in replicas.get(partition, ()):
        return f"not assigned to broker {broker_id}"
    return None


def judge(broker_id: int, entry: Entry, assignment: Assignment, stray_dirs: bool) -> Finding:
    dir_name = parse_name(entry.name)

    def found(verdict: Verdict, reason: str) -> Finding:
        return Finding(entry, dir_name, verdict, reason)

    if entry.is_symlink:
        return found("unknown", "symlink, never followed")
    if dir_name.kind == "broker_file":
        return found("kept", "the broker's own")
    if dir_name.kind == "unknown":
        return found("unknown", "not a Kafka partition directory name")
    if not entry.is_dir:
        return found("unknown", "not a directory")
    if dir_name.kind == "future":
        return found("future", "log dir move in progress")
    if dir_name.kind == "delete":
        return found("delete_pending", "the broker deletes it after its grace period")
    reason = orphan_reason(broker_id, dir_name, entry.topic_id, assignment)
    if reason and (dir_name.topic or "").startswith("__"):
        # DESIGN: internal topics are never touched unless a field says so; none does here.
        return found("kept", f"internal topic, never removed ({reason})")
    if dir_name.kind == "partition":
        return found("orphan", reason) if reason else found("assigned", "assigned")
    if not stray_dirs:
        return found("kept", "strayDirs is disabled")
    # A stray copy of a partition this broker hosts again is garbage too, but the safety
    # rule deletes only what the metadata does not assign: keep it until it moves away.
    if reason is None:
        return found("kept", f"stray copy of a partition assigned to broker {broker_id}")
    return found("orphan", "stray replica renamed by the broker")


def classify(
    broker_id: int, entries: Iterable[Entry], assignment: Assignment, stray_dirs: bool = True
) -> list[Finding]:
    """Every entry of one log dir judged against the cluster's assignment, in name
    order; the broker's own files (checkpoints, meta.properties, the metadata log) are
    left out. Only `orphan` findings are candidates for removal."""
    findings = (judge(broker_id, e, assignment, stray_dirs) for e in entries)
    kept = (f for f in findings if f.kind != "broker_file" or f.entry.is_symlink)
    return sorted(kept, key=lambda f: f.entry.name)


class OrphanKey(NamedTuple):
    """One directory on one broker's log dir: the identity first-seen times hang on."""

    broker: int
    log_dir: str
    name: str


def carry_first_seen(
    previous: Mapping[OrphanKey, int], current_orphans: Iterable[OrphanKey], now_ms: int
) -> dict[OrphanKey, int]:
    """First-seen times after a check: earlier times kept for dirs that are still
    orphans, now for new ones; dirs no longer orphans drop out, so one that is assigned
    again and later orphaned again starts a fresh delay."""
    return {key: previous.get(key, now_ms) for key in current_orphans}


def encode_first_seen(first_seen: Mapping[OrphanKey, int]) -> list[dict[str, Any]]:
    """Status form, sorted for stable patches. Times are rounded up to the second:
    a first-seen time read back never makes a directory look orphaned for longer."""
    return [
        {"broker": k.broker, "logDir": k.log_dir, "name": k.name, "firstSeen": _rfc3339(ms)}
        for k, ms in sorted(first_seen.items())
    ]


def decode_first_seen(items: Iterable[Any]) -> dict[OrphanKey, int]:
    """Status form back to times; an item that does not read is dropped, which only
    restarts that directory's delay (the safe direction)."""
    out: dict[OrphanKey, int] = {}
    for item in items:
        try:
            key = OrphanKey(int(item["broker"]), str(item["logDir"]), str(item["name"]))
            out[key] = _parse_rfc3339(str(item["firstSeen"]))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _rfc3339(ms: int) -> str:
    seconds = -(-ms // 1000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_rfc3339(text: str) -> int:
    parsed = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return int(parsed.timestamp()) * 1000
