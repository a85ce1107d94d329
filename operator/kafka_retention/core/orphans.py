"""Orphan partition directories on broker volumes (KAFKA-7362, KIP-370/KIP-550).

A broker keeps `<topic>-<partition>` directories the cluster no longer assigns to it: a
reassignment done while it was down, a topic deleted while it was away, and in KRaft the
`<topic>-<partition>.<32 hex>-stray` copies it renames and never deletes. This module
decides, without touching any disk, which directories are orphans and when one may go.

Deleting a directory a broker still serves loses data for good, so every rule leans to
keeping: a name the parser does not recognise, a symlink, a `-future` directory (a log
dir move in progress) are reported and never removed; a candidate waits `removalDelay`
of continuous orphanhood and `minAge` past its newest file, and the caller re-reads the
cluster metadata just before the delete (`still_orphan`). The adapters get paths only
from `safe_child` and the exec scripts take names as positional parameters, so no shell
string is ever built from a name found on a disk.

Whose disk it is comes first: a check pointed at one cluster's metadata and another
cluster's broker volumes would find every live directory unassigned. So a log dir is
judged only when its `meta.properties` names the `cluster.id` the metadata came from and
the `node.id` of a broker whose `log.dirs` names that dir (`identity_block`), and
circuit breakers hold everything when the metadata looks wrong in bulk: no topics but
internal ones (`metadata_block`), or a broker losing more than a bounded share of its
partition directories (`removal_cap_block`). A `Block` says what was held and why.

Kafka facts relied on (checked in Kafka's LocalLog and PartitionMetadataFile):
- the 32 hex of `-stray`/`-delete`/`-future` names is a fresh random UUID, not the topic
  id; for `-stray` and `-delete` the topic part is cut short so the name fits 255 chars;
- `partition.metadata` reads `version: 0` then `topic_id: <id>`, the id being Kafka's
  Uuid string: 16 bytes in URL-safe base64 without padding (22 characters).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from kafka_retention.core.conditions import Reason
from kafka_retention.core.specs import MAX_PARTITION

Kind = Literal["partition", "stray", "delete", "future", "broker_file", "unknown"]
Verdict = Literal["orphan", "assigned", "kept", "delete_pending", "future", "unknown"]
State = Literal["Pending", "Remove", "Kept"]

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
# Files the broker keeps beside its partition dirs (with the .tmp its atomic writes leave).
BROKER_FILES = frozenset(
    # bootstrap.checkpoint: a KRaft broker's snapshot of the bootstrap metadata records.
    {"meta.properties", ".lock", ".kafka_cleanshutdown", "bootstrap.checkpoint", *_CHECKPOINTS}
    | {f"{c}.tmp" for c in _CHECKPOINTS}
)
_LEGAL = re.compile(r"[A-Za-z0-9._-]+")
_PARTITION = r"(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>0|[1-9][0-9]{0,9})"
_PLAIN = re.compile(_PARTITION)
_SUFFIXED = re.compile(_PARTITION + r"\.[0-9a-f]{32}-(?P<kind>stray|delete|future)")
_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")
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
    if len(name) > 255 or not _LEGAL.fullmatch(name):
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
            return value if _TOPIC_ID.fullmatch(value) else None
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
    if topic_id and _TOPIC_ID.fullmatch(live_id) and topic_id != live_id:
        return f"topic id {topic_id} differs from live topic id {live_id}"
    partition = dir_name.partition
    if partition is None or broker_id not in replicas.get(partition, ()):
        return f"not assigned to broker {broker_id}"
    return None


def _judge(broker_id: int, entry: Entry, assignment: Assignment, stray_dirs: bool) -> Finding:
    dir_name = parse_name(entry.name)

    def found(verdict: Verdict, reason: str) -> Finding:
        return Finding(entry, dir_name, verdict, reason)

    if entry.is_symlink:
        return found("unknown", "symlink, never followed")
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
    findings = (_judge(broker_id, e, assignment, stray_dirs) for e in entries)
    kept = (f for f in findings if f.kind != "broker_file" or f.entry.is_symlink)
    return sorted(kept, key=lambda f: f.entry.name)


def still_orphan(
    finding: Finding,
    fresh_assignment: Assignment,
    broker_id: int,
    cluster_id: str,
    fresh_cluster_id: str,
) -> bool:
    """The last check before a delete, against metadata read just now: the partition may
    have been assigned back (or its topic re-created) since the finding was made, and the
    fresh read must come from the cluster the finding was judged for (`cluster_id`, which
    the log dir's meta.properties named) and list topics at all."""
    if finding.verdict != "orphan" or not cluster_id or fresh_cluster_id != cluster_id:
        return False
    if metadata_block(fresh_cluster_id, fresh_assignment) is not None:
        return False
    return _judge(broker_id, finding.entry, fresh_assignment, True).verdict == "orphan"


# --- circuit breakers ------------------------------------------------------------------

# At most this share of a broker's partition directories may be orphans for anything to
# be removed on it. A broker rarely holds more than a few stale copies (a reassignment
# done while it was down, a topic deleted while it was away); metadata that disowns a
# quarter or more of what a broker holds is far likelier to be wrong (another cluster, a
# half-read or freshly restored metadata log) than right, and what it would delete is
# gone for good. A broker that really was drained while down stays as it is, reported
# with RemovalCapReached, until someone looks.
MAX_REMOVAL_PERCENT = 25
# The share alone would forbid every removal on a broker holding fewer than four
# partition directories (small and development clusters, a broker just added), which is
# exactly where one or two stale copies are the visible share. So a broker may always
# lose up to this many; a wrong read costs a tiny broker at most two directories, and
# only after the cluster.id, node.id and no-topics checks, removalDelay, minAge and the
# fresh read just before the delete have all agreed.
MIN_REMOVAL_ALLOWANCE = 2


@dataclass(frozen=True)
class Block:
    """Why nothing is removed on some brokers this run (`brokers`), or on any
    (`brokers` None). The message names brokers, log dirs and ids only."""

    reason: Reason
    message: str
    brokers: frozenset[int] | None = None

    def holds(self, broker: int) -> bool:
        return self.brokers is None or broker in self.brokers


def _named(brokers: Iterable[int]) -> str:
    ids = sorted(brokers)
    return f"broker{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids)) or 'none'}"


def identity_block(
    log_dir: str, identity: LogDirIdentity, cluster_id: str, owners: AbstractSet[int]
) -> Block | None:
    """Whether a log dir may be judged at all: its meta.properties must name the
    metadata's cluster id and the node id of one of `owners`, the live brokers whose
    log.dirs name it. A foreign cluster id holds the whole run (the volumes or the
    bootstrap servers point somewhere else, and nothing this check saw can be trusted);
    anything else holds the brokers the log dir could belong to."""
    node = identity.node_id
    suspects = frozenset(owners | ({node} if node is not None else set()))
    if not identity.meta_found:
        return Block(
            Reason.META_PROPERTIES_MISSING,
            f"log dir {log_dir} of {_named(owners)} has no meta.properties: "
            f"nothing removed on {_named(suspects)}",
            suspects,
        )
    if identity.cluster_id is None:
        return Block(
            Reason.CLUSTER_ID_MISSING,
            f"meta.properties of log dir {log_dir} ({_named(owners)}) names no "
            f"cluster.id, the metadata came from cluster {cluster_id}: nothing removed on "
            f"{_named(suspects)}",
            suspects,
        )
    if identity.cluster_id != cluster_id:
        return Block(
            Reason.CLUSTER_ID_MISMATCH,
            f"meta.properties of log dir {log_dir} ({_named(owners)}, node.id "
            f"{'none' if node is None else node}) names cluster.id {identity.cluster_id}, "
            f"the metadata came from cluster {cluster_id}: nothing removed on any broker",
        )
    if node is None or node not in owners:
        return Block(
            Reason.NODE_ID_MISMATCH,
            f"meta.properties of log dir {log_dir} names node.id "
            f"{'none' if node is None else node}, the log.dirs of {_named(owners)} "
            f"name it: nothing removed on {_named(suspects)}",
            suspects,
        )
    return None


def cluster_change_block(cluster_id: str, later_cluster_id: str) -> Block | None:
    """Reads of one check that came from different clusters: nothing holds together."""
    if later_cluster_id == cluster_id:
        return None
    return Block(
        Reason.CLUSTER_ID_MISMATCH,
        f"the cluster id changed from {cluster_id} to {later_cluster_id} between reads of "
        "the same check: nothing removed on any broker",
    )


def metadata_block(cluster_id: str, assignment: Assignment) -> Block | None:
    """A metadata read with no topics but internal ones disowns every directory at once:
    a new or wrong cluster, or a read that lost its topics; never a reason to delete."""
    if any(not topic.startswith("__") for topic in assignment):
        return None
    return Block(
        Reason.NO_TOPICS_IN_METADATA,
        f"the metadata of cluster {cluster_id} lists no topics but internal ones: "
        "nothing removed on any broker",
    )


def removal_allowance(partition_dirs: int) -> int:
    """How many orphans a broker holding `partition_dirs` may have and still lose them."""
    return max(partition_dirs * MAX_REMOVAL_PERCENT // 100, MIN_REMOVAL_ALLOWANCE)


def removal_cap_block(broker_id: int, findings: Iterable[Finding]) -> Block | None:
    """The circuit breaker for one broker, over every finding of all its listed log
    dirs: more orphans than `removal_allowance` of its partition directories (every kind,
    assigned or not; not symlinks, files or unknown names) removes nothing on it. All
    orphans count, not only those due this run, so metadata that disowns a broker's data
    in bulk cannot chip it away as delays run out one by one."""
    judged = [f for f in findings if f.verdict != "unknown"]
    orphans = sum(1 for f in judged if f.verdict == "orphan")
    allowed = removal_allowance(len(judged))
    if orphans <= allowed:
        return None
    return Block(
        Reason.REMOVAL_CAP_REACHED,
        f"{orphans} of the {len(judged)} partition directories of broker {broker_id} look "
        f"orphaned, more than the {allowed} allowed ({MAX_REMOVAL_PERCENT}% of them, at "
        f"least {MIN_REMOVAL_ALLOWANCE}): nothing removed on broker {broker_id}",
        frozenset({broker_id}),
    )


@dataclass(frozen=True)
class Decision:
    state: State
    reason: str
    remove_after_ms: int | None = None


def decide(
    finding: Finding,
    first_seen_ms: int | None,
    now_ms: int,
    removal_delay_ms: int,
    min_age_ms: int,
    dry_run: bool,
) -> Decision:
    """KIP-370's rule for one finding. `first_seen_ms` must come from
    `carry_first_seen`, i.e. the start of this finding's unbroken run as an orphan;
    None counts as first seen now. remove_after is the earliest time both clocks allow
    (the delay since first seen, minAge since the newest file)."""
    if finding.verdict != "orphan":
        return Decision("Kept", "assigned again" if first_seen_ms is not None else finding.reason)
    first_seen = now_ms if first_seen_ms is None else first_seen_ms
    newest = finding.entry.newest_segment_mtime_ms
    aged_at = newest + min_age_ms if newest is not None else 0
    remove_after = max(first_seen + removal_delay_ms, aged_at)
    if now_ms < first_seen + removal_delay_ms:
        return Decision("Pending", "removal delay", remove_after)
    if now_ms < aged_at:
        return Decision("Pending", "segments younger than minAge", remove_after)
    if dry_run:
        return Decision("Kept", "dry run", remove_after)
    return Decision("Remove", finding.reason, remove_after)


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


def _checked_log_dir(log_dir: str) -> str:
    if not log_dir.startswith("/") or "\0" in log_dir or posixpath.normpath(log_dir) != log_dir:
        raise ValueError(f"log dir {log_dir!r} is not an absolute, normalised path")
    return log_dir


def safe_child(log_dir: str, name: str) -> str:
    """The path of a removable directory: `name` must be one legal path component that
    parses as a partition or stray directory (so no `/`, `..`, NUL or shell
    metacharacter), `log_dir` absolute and normalised. ValueError otherwise."""
    if parse_name(name).kind not in ("partition", "stray"):
        raise ValueError(f"{name!r} is not a removable partition directory name")
    return posixpath.join(_checked_log_dir(log_dir), name)


# Exec access: constant POSIX sh scripts, the log dir and the name passed as positional
# parameters ($1, $2; "kr" is $0). They use only what busybox and GNU coreutils share
# (no `find -printf`, no awk). LC_ALL=C keeps bracket ranges to ASCII.
LIST_SCRIPT = r"""export LC_ALL=C
cd -- "$1" || exit 3
total() { s=0 m=; while read -r a b; do s=$((s + a))
  if [ -z "$m" ] || [ "$b" -gt "$m" ]; then m=$b; fi; done; printf '%s\t%s' "$s" "$m"; }
for e in * .[!.]* ..?*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  n=$e i=
  case $e in *[!A-Za-z0-9._-]*) n=hex:$(printf %s "$e" | od -An -v -tx1 | tr -d ' \n') ;; esac
  if [ -L "$e" ]; then t=l sm=$(printf '0\t')
  elif [ -d "$e" ]; then
    t=d sm=$(find "./$e" -type f -exec stat -c '%s %Y' {} + 2>/dev/null | total)
    if [ -f "./$e/partition.metadata" ] && [ ! -L "./$e/partition.metadata" ]; then
      i=$(head -c 4096 "./$e/partition.metadata" | sed -n 's/^topic_id: *//p' \
        | head -n 1 | tr -cd 'A-Za-z0-9_-')
    fi
  else t=f sm=$(printf '%s\t' "$(stat -c %s "./$e")")
  fi
  printf '%s\t%s\t%s\t%s\t.\n' "$n" "$t" "$sm" "$i"
done
echo '#end'
"""
# The checks repeat safe_child's on the broker's side of the exec, then refuse a symlink
# or anything but a directory. `rm -r` never follows symlinks inside the tree, and should
# the directory be swapped for a symlink after the check, rm removes the link, not its
# target.
REMOVE_SCRIPT = r"""export LC_ALL=C
case $1 in /*) ;; *) echo 'refused: log dir not absolute' >&2; exit 2 ;; esac
case $2 in ''|.|..|*[!A-Za-z0-9._-]*) echo 'refused: illegal name' >&2; exit 2 ;; esac
if [ -L "$1/$2" ]; then echo 'refused: symlink' >&2; exit 4; fi
if [ ! -d "$1/$2" ]; then echo 'refused: not a directory' >&2; exit 5; fi
rm -rf -- "$1/$2" && [ ! -e "$1/$2" ] && echo removed
"""
# Says which of three things it found, so a log dir that is simply not in this pod (a
# pod of another broker) is told apart from one whose meta.properties is missing: the
# latter holds the broker, the former is skipped. A symlink or a FIFO planted as
# meta.properties is not a regular file: never followed, never opened.
READ_META_SCRIPT = r"""export LC_ALL=C
if [ ! -d "$1" ]; then echo '#no-log-dir'; exit 0; fi
if [ -L "$1/meta.properties" ] || [ ! -f "$1/meta.properties" ]; then
  echo '#no-meta'; exit 0
fi
echo '#meta'
head -c 65536 -- "$1/meta.properties"
"""
LISTING_END = "#end"
REMOVED = "removed"


def list_argv(log_dir: str) -> list[str]:
    return ["sh", "-c", LIST_SCRIPT, "kr", _checked_log_dir(log_dir)]


def remove_argv(log_dir: str, name: str) -> list[str]:
    safe_child(log_dir, name)
    return ["sh", "-c", REMOVE_SCRIPT, "kr", log_dir, name]


def read_meta_argv(log_dir: str) -> list[str]:
    return ["sh", "-c", READ_META_SCRIPT, "kr", _checked_log_dir(log_dir)]


def parse_meta_answer(text: str) -> LogDirIdentity | None:
    """READ_META_SCRIPT's output: None when the log dir is not there, NO_META when it
    has no meta.properties, else what the file names. ValueError for anything else (a
    transport that mangled the answer must not read as "no log dir here")."""
    marker, _, rest = text.partition("\n")
    if marker == "#no-log-dir":
        return None
    if marker == "#no-meta":
        return NO_META
    if marker == "#meta":
        return identity_from_meta(rest)
    raise ValueError("unexpected answer to the meta.properties read")


def listing_complete(text: str) -> bool:
    """Whether the listing ran to its end: a cut-off listing misses entries."""
    return text.rstrip("\n").endswith("\n" + LISTING_END) or text.strip() == LISTING_END


def parse_listing(text: str) -> list[Entry]:
    """Entries from LIST_SCRIPT's output, skipping any line that does not read. Names
    outside Kafka's characters arrive hex-encoded, so no name can forge a line; a line
    must end with its `.` field, so a cut-off line never yields a truncated topic id."""
    entries = (_listing_entry(line.split("\t")) for line in text.splitlines())
    return [e for e in entries if e is not None]


def _listing_entry(fields: list[str]) -> Entry | None:
    if len(fields) != 6 or fields[5] != "." or fields[1] not in ("d", "l", "f"):
        return None
    name, kind, size, mtime, topic_id = fields[:5]
    decoded = _listing_name(name)
    if decoded is None or not size.isdigit() or not (mtime.isdigit() or mtime == ""):
        return None
    return Entry(
        name=decoded,
        is_dir=kind == "d",
        is_symlink=kind == "l",
        size_bytes=int(size),
        # Rounded up: a file must never look older than it is.
        newest_segment_mtime_ms=(int(mtime) + 1) * 1000 if mtime else None,
        topic_id=topic_id if _TOPIC_ID.fullmatch(topic_id) else None,
    )


def _listing_name(name: str) -> str | None:
    if not name.startswith("hex:"):
        return name if _LEGAL.fullmatch(name) else None
    try:
        return bytes.fromhex(name[4:]).decode("utf-8", "surrogateescape")
    except ValueError:
        return None
