"""Invalid and hostile RetentionPolicy, RecordPurge and RecordErasure specs (issues 14, 48).

Every entry is a whole `spec` that the operator must refuse, and `field` is the spec field
the refusal must name, spelled as `SpecError.field` spells it (`spec.partitions[3].offset`,
`spec.topics.pattern`, ...). Each entry has one thing wrong, so the field is certain.

The unit test tests/unit/test_hostile_specs.py runs each entry through the parser of its
kind; an e2e test applies `manifest(entry, namespace)` for each to the API server, which
refuses most of them by schema and leaves the rest to the operator's InvalidSpec condition.

`gap` is set where the parser does NOT refuse an entry (or fails with an exception other
than SpecError): it names the operator bug, and the unit test marks the entry
xfail(strict=True), so fixing the bug turns it into a failure until `gap` is removed. The
29 entries this corpus found when it was written (strings read as lists of letters,
"false" read as true, times before 1970 that ListOffsets reads as "latest", durations past
the calendar, wrong JSON types crashing the parsers) are fixed; none has a gap now.

The two 20,000-item entries are up to 1.1 MB of JSON (under etcd's 1.5 MiB a request),
far more than the 256 KiB that client-side `kubectl apply` may keep in its last-applied
annotation: apply them server-side or with `kubectl create`.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from typing import Any, Final, Literal

Kind = Literal["RecordPurge", "RetentionPolicy", "RecordErasure"]
PURGE: Final[Kind] = "RecordPurge"
POLICY: Final[Kind] = "RetentionPolicy"
ERASURE: Final[Kind] = "RecordErasure"
API_VERSION: Final = "kafka-retention.io/v1alpha1"
BOOTSTRAP: Final = "127.0.0.1:39091"


@dataclasses.dataclass(frozen=True)
class Hostile:
    kind: Kind
    name: str  # a DNS-1123 label, unique in the corpus: the object's metadata.name
    spec: dict[str, Any] = dataclasses.field(repr=False)  # some hold 20,000 items
    field: str  # what SpecError.field must say
    gap: str | None = None  # the operator bug that lets this entry through today


def manifest(entry: Hostile, namespace: str) -> dict[str, Any]:
    """The whole object to apply; the spec is a copy, so callers may change it freely."""
    return {
        "apiVersion": API_VERSION,
        "kind": entry.kind,
        "metadata": {"name": entry.name, "namespace": namespace},
        "spec": copy.deepcopy(entry.spec),
    }


def _cluster(**extra: Any) -> dict[str, Any]:
    return {"bootstrapServers": BOOTSTRAP, **extra}


def _purge(**fields: Any) -> dict[str, Any]:
    return {"cluster": _cluster(), **fields}


def _cut(topic: Any = "orders", partition: Any = 0, offset: Any = 10) -> dict[str, Any]:
    """One spec.partitions entry (kafka-delete-records.sh's offset JSON)."""
    return {"topic": topic, "partition": partition, "offset": offset}


def _whole(before: Any, name: Any = "orders") -> dict[str, Any]:
    """One spec.topics entry of a RecordPurge."""
    return {"name": name, "before": before}


def _policy(**fields: Any) -> dict[str, Any]:
    """A valid policy (one topic, deleteConsumed) with `fields` added or replaced."""
    return {
        "cluster": _cluster(),
        "topics": {"names": ["orders"]},
        "deleteConsumed": {"groups": ["enricher"]},
        **fields,
    }


def _orphans(brokers: Any, **orphan_fields: Any) -> dict[str, Any]:
    """An orphanPartitions-only policy (it needs no topics) reaching brokers as given."""
    return {
        "cluster": _cluster(brokers=brokers),
        "orphanPartitions": {"enabled": True, **orphan_fields},
    }


_LOCAL_BROKERS: Final = {"access": "local"}
_GROUPS_5000: Final = [f"group-{i:04d}" for i in range(5000)]

RECORD_PURGES: Final[list[Hostile]] = [
    # --- spec.cluster ---
    # No cluster at all: nothing says which Kafka to delete from.
    Hostile(PURGE, "purge-no-cluster", {"partitions": [_cut()]}, "spec.cluster.bootstrapServers"),
    # An empty cluster object.
    Hostile(
        PURGE,
        "purge-cluster-empty",
        {"cluster": {}, "partitions": [_cut()]},
        "spec.cluster.bootstrapServers",
    ),
    # Empty string where a host:port list is required.
    Hostile(
        PURGE,
        "purge-bootstrap-empty",
        {"cluster": {"bootstrapServers": ""}, "partitions": [_cut()]},
        "spec.cluster.bootstrapServers",
    ),
    # Only whitespace: looks present, names no broker.
    Hostile(
        PURGE,
        "purge-bootstrap-blank",
        {"cluster": {"bootstrapServers": " \t "}, "partitions": [_cut()]},
        "spec.cluster.bootstrapServers",
    ),
    # Bool where a string is required.
    Hostile(
        PURGE,
        "purge-bootstrap-bool",
        {"cluster": {"bootstrapServers": True}, "partitions": [_cut()]},
        "spec.cluster.bootstrapServers",
    ),
    # List where a string is required.
    Hostile(
        PURGE,
        "purge-bootstrap-list",
        {"cluster": {"bootstrapServers": [BOOTSTRAP]}, "partitions": [_cut()]},
        "spec.cluster.bootstrapServers",
    ),
    # --- nothing to cut ---
    # Neither partitions nor topics: a purge of nothing.
    Hostile(PURGE, "purge-names-nothing", _purge(), "spec"),
    # Both lists present but empty.
    Hostile(PURGE, "purge-empty-lists", _purge(partitions=[], topics=[]), "spec"),
    # --- spec.partitions[].offset ---
    # -2 is Kafka's EARLIEST sentinel, never an offset to delete below.
    Hostile(
        PURGE,
        "purge-offset-minus-two",
        _purge(partitions=[_cut(offset=-2)]),
        "spec.partitions[0].offset",
    ),
    # The most negative int64.
    Hostile(
        PURGE,
        "purge-offset-min-int64",
        _purge(partitions=[_cut(offset=-(2**63))]),
        "spec.partitions[0].offset",
    ),
    # String where an integer is required.
    Hostile(
        PURGE,
        "purge-offset-string",
        _purge(partitions=[_cut(offset="10")]),
        "spec.partitions[0].offset",
    ),
    # A fractional offset.
    Hostile(
        PURGE,
        "purge-offset-float",
        _purge(partitions=[_cut(offset=10.5)]),
        "spec.partitions[0].offset",
    ),
    # The offset key left out.
    Hostile(
        PURGE,
        "purge-offset-missing",
        _purge(partitions=[{"topic": "orders", "partition": 0}]),
        "spec.partitions[0].offset",
    ),
    # --- spec.partitions[].partition ---
    # A negative partition number.
    Hostile(
        PURGE,
        "purge-partition-negative",
        _purge(partitions=[_cut(partition=-1)]),
        "spec.partitions[0].partition",
    ),
    # Below the int32 range.
    Hostile(
        PURGE,
        "purge-partition-below-int32",
        _purge(partitions=[_cut(partition=-(2**31) - 1)]),
        "spec.partitions[0].partition",
    ),
    # String where an integer is required.
    Hostile(
        PURGE,
        "purge-partition-string",
        _purge(partitions=[_cut(partition="0")]),
        "spec.partitions[0].partition",
    ),
    # List where an integer is required.
    Hostile(
        PURGE,
        "purge-partition-list",
        _purge(partitions=[_cut(partition=[0])]),
        "spec.partitions[0].partition",
    ),
    # --- spec.partitions[].topic ---
    # Empty topic name.
    Hostile(
        PURGE, "purge-topic-empty", _purge(partitions=[_cut(topic="")]), "spec.partitions[0].topic"
    ),
    # A space in a topic name.
    Hostile(
        PURGE,
        "purge-topic-space",
        _purge(partitions=[_cut(topic="my orders")]),
        "spec.partitions[0].topic",
    ),
    # Path traversal: topic names end up near log dir paths (orphans), '/' must never pass.
    Hostile(
        PURGE,
        "purge-topic-path",
        _purge(partitions=[_cut(topic="../../etc/passwd")]),
        "spec.partitions[0].topic",
    ),
    # 250 characters: Kafka's limit is 249.
    Hostile(
        PURGE,
        "purge-topic-250-chars",
        _purge(partitions=[_cut(topic="a" * 250)]),
        "spec.partitions[0].topic",
    ),
    # Non-ASCII letters: Kafka allows [a-zA-Z0-9._-] only.
    Hostile(
        PURGE,
        "purge-topic-unicode",
        _purge(partitions=[_cut(topic="zamówienia")]),
        "spec.partitions[0].topic",
    ),
    # A NUL byte that C code (librdkafka) would cut the name at.
    Hostile(
        PURGE,
        "purge-topic-nul",
        _purge(partitions=[_cut(topic="orders\x00")]),
        "spec.partitions[0].topic",
    ),
    # Integer where a topic name is required.
    Hostile(
        PURGE, "purge-topic-int", _purge(partitions=[_cut(topic=42)]), "spec.partitions[0].topic"
    ),
    # An internal topic without allowInternalTopics.
    Hostile(
        PURGE,
        "purge-topic-internal",
        _purge(partitions=[_cut(topic="__consumer_offsets")]),
        "spec.partitions[0].topic",
    ),
    # An internal topic with allowInternalTopics explicitly false.
    Hostile(
        PURGE,
        "purge-topic-internal-flag-false",
        _purge(partitions=[_cut(topic="__transaction_state")], allowInternalTopics=False),
        "spec.partitions[0].topic",
    ),
    # --- duplicates and huge lists ---
    # The same partition twice with different offsets: which one wins? (The CRD's list is
    # atomic, so the API server takes it; the operator names the second entry.)
    Hostile(
        PURGE,
        "purge-duplicate-partition",
        _purge(partitions=[_cut(offset=10), _cut(offset=20)]),
        "spec.partitions[1]",
    ),
    # 20,000 entries (2x the CRD's maxItems) whose last one repeats the first.
    Hostile(
        PURGE,
        "purge-20000-partitions-last-duplicate",
        _purge(partitions=[_cut(partition=p, offset=1) for p in range(19_999)] + [_cut(offset=1)]),
        "spec.partitions[19999]",
    ),
    # --- spec.topics[] ---
    # The same topic cut twice, in two different ways.
    Hostile(
        PURGE,
        "purge-topic-listed-twice",
        _purge(topics=[_whole({"highWatermark": True}), _whole({"committedBy": ["enricher"]})]),
        "spec.topics[1].name",
    ),
    # A topic cut both per partition and as a whole.
    Hostile(
        PURGE,
        "purge-topic-in-both-lists",
        _purge(partitions=[_cut()], topics=[_whole({"highWatermark": True})]),
        "spec.topics[0].name",
    ),
    # A whole-topic cut without a topic name.
    Hostile(
        PURGE,
        "purge-topic-name-missing",
        _purge(topics=[{"before": {"highWatermark": True}}]),
        "spec.topics[0].name",
    ),
    # Cutting the KRaft metadata log as a whole topic.
    Hostile(
        PURGE,
        "purge-topic-name-internal",
        _purge(topics=[_whole({"highWatermark": True}, name="__cluster_metadata")]),
        "spec.topics[0].name",
    ),
    # --- spec.topics[].before ---
    # No before: where to cut is unsaid.
    Hostile(
        PURGE, "purge-before-missing", _purge(topics=[{"name": "orders"}]), "spec.topics[0].before"
    ),
    # An empty before.
    Hostile(PURGE, "purge-before-empty", _purge(topics=[_whole({})]), "spec.topics[0].before"),
    # Conflicting forms: a time and the high watermark.
    Hostile(
        PURGE,
        "purge-before-timestamp-and-high-watermark",
        _purge(topics=[_whole({"timestamp": "2026-11-20T00:00:00Z", "highWatermark": True})]),
        "spec.topics[0].before",
    ),
    # All three forms at once.
    Hostile(
        PURGE,
        "purge-before-all-three",
        _purge(
            topics=[
                _whole(
                    {
                        "timestamp": "2026-11-20T00:00:00Z",
                        "committedBy": ["enricher"],
                        "highWatermark": True,
                    }
                )
            ]
        ),
        "spec.topics[0].before",
    ),
    # 5,000 groups (100x the CRD's maxItems) and a timestamp in one before.
    Hostile(
        PURGE,
        "purge-before-5000-groups-and-timestamp",
        _purge(topics=[_whole({"committedBy": _GROUPS_5000, "timestamp": "2026-11-20T00:00:00Z"})]),
        "spec.topics[0].before",
    ),
    # String where an object is required.
    Hostile(
        PURGE, "purge-before-string", _purge(topics=[_whole("yesterday")]), "spec.topics[0].before"
    ),
    # Empty list where an object is required.
    Hostile(PURGE, "purge-before-empty-list", _purge(topics=[_whole([])]), "spec.topics[0].before"),
    # --- spec.topics[].before.timestamp ---
    # Words, not a time.
    Hostile(
        PURGE,
        "purge-timestamp-words",
        _purge(topics=[_whole({"timestamp": "last tuesday"})]),
        "spec.topics[0].before.timestamp",
    ),
    # No time zone: which midnight?
    Hostile(
        PURGE,
        "purge-timestamp-no-zone",
        _purge(topics=[_whole({"timestamp": "2026-11-20T00:00:00"})]),
        "spec.topics[0].before.timestamp",
    ),
    # A date alone (no time, no zone).
    Hostile(
        PURGE,
        "purge-timestamp-date-only",
        _purge(topics=[_whole({"timestamp": "2026-11-20"})]),
        "spec.topics[0].before.timestamp",
    ),
    # Year 10000: past what RFC 3339 (and Python's datetime) can hold.
    Hostile(
        PURGE,
        "purge-timestamp-year-10000",
        _purge(topics=[_whole({"timestamp": "10000-01-01T00:00:00Z"})]),
        "spec.topics[0].before.timestamp",
    ),
    # Month 13.
    Hostile(
        PURGE,
        "purge-timestamp-month-13",
        _purge(topics=[_whole({"timestamp": "2026-13-01T00:00:00Z"})]),
        "spec.topics[0].before.timestamp",
    ),
    # A zone offset of a whole day.
    Hostile(
        PURGE,
        "purge-timestamp-offset-24h",
        _purge(topics=[_whole({"timestamp": "2026-11-20T00:00:00+24:00"})]),
        "spec.topics[0].before.timestamp",
    ),
    # Epoch milliseconds (an integer) where an RFC 3339 string is required.
    Hostile(
        PURGE,
        "purge-timestamp-epoch-millis",
        _purge(topics=[_whole({"timestamp": 1_795_132_800_000})]),
        "spec.topics[0].before.timestamp",
    ),
    # An empty time.
    Hostile(
        PURGE,
        "purge-timestamp-empty",
        _purge(topics=[_whole({"timestamp": ""})]),
        "spec.topics[0].before.timestamp",
    ),
    # --- spec.topics[].before.committedBy / highWatermark ---
    # committedBy with no group: the slowest of nobody.
    Hostile(
        PURGE,
        "purge-committed-by-empty",
        _purge(topics=[_whole({"committedBy": []})]),
        "spec.topics[0].before.committedBy",
    ),
    # highWatermark: false is not a way to say "do not cut".
    Hostile(
        PURGE,
        "purge-high-watermark-false",
        _purge(topics=[_whole({"highWatermark": False})]),
        "spec.topics[0].before.highWatermark",
    ),
    # String where a bool is required.
    Hostile(
        PURGE,
        "purge-high-watermark-string",
        _purge(topics=[_whole({"highWatermark": "true"})]),
        "spec.topics[0].before.highWatermark",
    ),
    # 1 where a bool is required (truthy, but not true).
    Hostile(
        PURGE,
        "purge-high-watermark-one",
        _purge(topics=[_whole({"highWatermark": 1})]),
        "spec.topics[0].before.highWatermark",
    ),
    # --- found by this corpus: the parsers let these through until they were fixed ---
    # String where a list of groups is required: the group "auditor" must stay protected.
    Hostile(
        PURGE,
        "purge-protect-groups-string",
        _purge(partitions=[_cut()], protectGroups="auditor"),
        "spec.protectGroups",
    ),
    # An empty group id (Kafka has none; the CRD says minLength 1).
    Hostile(
        PURGE,
        "purge-protect-groups-empty-name",
        _purge(partitions=[_cut()], protectGroups=[""]),
        "spec.protectGroups[0]",
    ),
    # The string "false" where a bool is required, on the flag that guards internal topics.
    Hostile(
        PURGE,
        "purge-allow-internal-string-false",
        _purge(partitions=[_cut(topic="__consumer_offsets")], allowInternalTopics="false"),
        "spec.allowInternalTopics",
    ),
    # Bool where a partition number is required.
    Hostile(
        PURGE,
        "purge-partition-bool",
        _purge(partitions=[_cut(partition=True)]),
        "spec.partitions[0].partition",
    ),
    # 2**63 does not fit Kafka's int64 offsets (the CLI's offset JSON has no schema).
    Hostile(
        PURGE,
        "purge-offset-beyond-int64",
        _purge(partitions=[_cut(offset=2**63)]),
        "spec.partitions[0].offset",
    ),
    # 2**31 does not fit Kafka's int32 partition numbers.
    Hostile(
        PURGE,
        "purge-partition-beyond-int32",
        _purge(partitions=[_cut(partition=2**31)]),
        "spec.partitions[0].partition",
    ),
    # Kafka refuses the topic names "." and ".." (they are directory names).
    Hostile(
        PURGE,
        "purge-topic-dot-dot",
        _purge(partitions=[_cut(topic="..")]),
        "spec.partitions[0].topic",
    ),
    # A trailing newline smuggled past the name check.
    Hostile(
        PURGE,
        "purge-topic-trailing-newline",
        _purge(topics=[_whole({"highWatermark": True}, name="orders\n")]),
        "spec.topics[0].name",
    ),
    # 1 ms before the epoch is -1 ms, which ListOffsets reads as LATEST (the high watermark).
    Hostile(
        PURGE,
        "purge-timestamp-before-epoch",
        _purge(topics=[_whole({"timestamp": "1969-12-31T23:59:59.999Z"})]),
        "spec.topics[0].before.timestamp",
    ),
    # String where a list is required.
    Hostile(
        PURGE,
        "purge-partitions-string",
        _purge(partitions="orders"),
        "spec.partitions",
    ),
    # A list (kafka-delete-records.sh's fields, positionally) where an object is required.
    Hostile(
        PURGE,
        "purge-partition-entry-list",
        _purge(partitions=[["orders", 0, 10]]),
        "spec.partitions[0]",
    ),
    # String where the cluster object is required.
    Hostile(
        PURGE,
        "purge-cluster-string",
        {"cluster": BOOTSTRAP, "partitions": [_cut()]},
        "spec.cluster",
    ),
    # String where a list of groups is required.
    Hostile(
        PURGE,
        "purge-committed-by-string",
        _purge(topics=[_whole({"committedBy": "enricher"})]),
        "spec.topics[0].before.committedBy",
    ),
    # A before that is the name of one of its keys.
    Hostile(
        PURGE,
        "purge-before-key-as-string",
        _purge(topics=[_whole("highWatermark")]),
        "spec.topics[0].before",
    ),
]

RETENTION_POLICIES: Final[list[Hostile]] = [
    # --- spec.cluster ---
    # No cluster at all.
    Hostile(
        POLICY,
        "policy-no-cluster",
        {"topics": {"names": ["orders"]}, "deleteConsumed": {"groups": ["enricher"]}},
        "spec.cluster.bootstrapServers",
    ),
    # Integer (a port) where the host:port list is required.
    Hostile(
        POLICY,
        "policy-bootstrap-int",
        _policy(cluster={"bootstrapServers": 39091}),
        "spec.cluster.bootstrapServers",
    ),
    # Object where a string is required.
    Hostile(
        POLICY,
        "policy-bootstrap-object",
        _policy(cluster={"bootstrapServers": {"host": "127.0.0.1", "port": 39091}}),
        "spec.cluster.bootstrapServers",
    ),
    # --- no rule ---
    # Topics and nothing to do with them.
    Hostile(
        POLICY, "policy-no-rule", {"cluster": _cluster(), "topics": {"names": ["orders"]}}, "spec"
    ),
    # A disabled orphanPartitions section is no rule either.
    Hostile(
        POLICY,
        "policy-only-disabled-orphans",
        {
            "cluster": _cluster(brokers=_LOCAL_BROKERS),
            "topics": {"names": ["orders"]},
            "orphanPartitions": {"enabled": False},
        },
        "spec",
    ),
    # --- spec.topics ---
    # A deleting rule without topics would apply to nothing (or, worse, to everything).
    Hostile(
        POLICY,
        "policy-no-topics",
        {"cluster": _cluster(), "deleteConsumed": {"groups": ["enricher"]}},
        "spec.topics",
    ),
    # An empty names list and no pattern.
    Hostile(POLICY, "policy-topics-empty-names", _policy(topics={"names": []}), "spec.topics"),
    # Empty list where the topics object is required.
    Hostile(POLICY, "policy-topics-empty-list", _policy(topics=[]), "spec.topics"),
    # An empty pattern: matches nothing, or everything, depending on who reads it.
    Hostile(POLICY, "policy-pattern-empty", _policy(topics={"pattern": ""}), "spec.topics.pattern"),
    # --- fields the resource does not define ---
    # A misspelt minRetention: dropped silently, the policy would run without its margin.
    Hostile(
        POLICY,
        "policy-unknown-min-retention-typo",
        _policy(deleteConsumed={"groups": ["enricher"], "minRetenion": "7d"}),
        "spec.deleteConsumed.minRetenion",
    ),
    # A field at the top of the spec.
    Hostile(
        POLICY,
        "policy-unknown-top-level",
        _policy(deleteAll=True),
        "spec.deleteAll",
    ),
    # An unknown key in the second cut of a purge.
    Hostile(
        PURGE,
        "purge-unknown-field-in-a-cut",
        _purge(partitions=[_cut(), {**_cut(partition=1), "offest": 5}]),
        "spec.partitions[1].offest",
    ),
    # --- spec.topics.pattern ---
    # An unclosed group.
    Hostile(
        POLICY,
        "policy-pattern-unclosed-group",
        _policy(topics={"pattern": "(orders"}),
        "spec.topics.pattern",
    ),
    # A glob, not a regular expression.
    Hostile(
        POLICY,
        "policy-pattern-glob",
        _policy(topics={"pattern": "*-repartition"}),
        "spec.topics.pattern",
    ),
    # A character range backwards.
    Hostile(
        POLICY,
        "policy-pattern-bad-range",
        _policy(topics={"pattern": "[z-a]"}),
        "spec.topics.pattern",
    ),
    # A variable-width look-behind (Python refuses it).
    Hostile(
        POLICY,
        "policy-pattern-variable-lookbehind",
        _policy(topics={"pattern": "(?<=a+)b"}),
        "spec.topics.pattern",
    ),
    # A look-ahead: Python runs it, RE2 (linear time) cannot.
    Hostile(
        POLICY,
        "policy-pattern-lookahead",
        _policy(topics={"pattern": "(?!__).*"}),
        "spec.topics.pattern",
    ),
    # A backreference.
    Hostile(
        POLICY,
        "policy-pattern-backreference",
        _policy(topics={"pattern": "(orders)-\\1"}),
        "spec.topics.pattern",
    ),
    # A trailing backslash.
    Hostile(
        POLICY,
        "policy-pattern-trailing-backslash",
        _policy(topics={"pattern": "orders\\"}),
        "spec.topics.pattern",
    ),
    # --- spec.topics.names ---
    # A space in a topic name.
    Hostile(
        POLICY,
        "policy-names-space",
        _policy(topics={"names": ["my orders"]}),
        "spec.topics.names[0]",
    ),
    # Path traversal, second in the list.
    Hostile(
        POLICY,
        "policy-names-path",
        _policy(topics={"names": ["orders", "../../etc"]}),
        "spec.topics.names[1]",
    ),
    # 250 characters: Kafka's limit is 249.
    Hostile(
        POLICY,
        "policy-names-250-chars",
        _policy(topics={"names": ["t" * 250]}),
        "spec.topics.names[0]",
    ),
    # Non-ASCII letters.
    Hostile(
        POLICY,
        "policy-names-unicode",
        _policy(topics={"names": ["bestellungen-ä"]}),
        "spec.topics.names[0]",
    ),
    # A NUL byte inside a name.
    Hostile(
        POLICY,
        "policy-names-nul",
        _policy(topics={"names": ["ord\x00ers"]}),
        "spec.topics.names[0]",
    ),
    # An empty name.
    Hostile(
        POLICY, "policy-names-empty-string", _policy(topics={"names": [""]}), "spec.topics.names[0]"
    ),
    # Object where a topic name is required.
    Hostile(
        POLICY,
        "policy-names-object",
        _policy(topics={"names": [{"name": "orders"}]}),
        "spec.topics.names[0]",
    ),
    # 20,000 names (20x the CRD's maxItems) whose last one is invalid.
    Hostile(
        POLICY,
        "policy-20000-names-last-bad",
        _policy(topics={"names": [f"topic-{i:05d}" for i in range(19_999)] + ["bad name"]}),
        "spec.topics.names[19999]",
    ),
    # --- spec.deleteConsumed ---
    # "Delete what these groups read", naming no group.
    Hostile(
        POLICY,
        "policy-consumed-groups-empty",
        _policy(deleteConsumed={"groups": []}),
        "spec.deleteConsumed.groups",
    ),
    # The groups key left out.
    Hostile(
        POLICY,
        "policy-consumed-groups-missing",
        _policy(deleteConsumed={"minRetention": "15m"}),
        "spec.deleteConsumed.groups",
    ),
    # Words, not a duration.
    Hostile(
        POLICY,
        "policy-min-retention-words",
        _policy(deleteConsumed={"groups": ["enricher"], "minRetention": "fifteen minutes"}),
        "spec.deleteConsumed.minRetention",
    ),
    # A negative duration.
    Hostile(
        POLICY,
        "policy-min-retention-negative",
        _policy(deleteConsumed={"groups": ["enricher"], "minRetention": "-15m"}),
        "spec.deleteConsumed.minRetention",
    ),
    # minRetention above maxRetention: the rules contradict each other.
    Hostile(
        POLICY,
        "policy-min-retention-over-max",
        _policy(deleteConsumed={"groups": ["enricher"], "minRetention": "2d"}, maxRetention="1d"),
        "spec.deleteConsumed.minRetention",
    ),
    # The same contradiction behind 5,000 groups (50x the CRD's maxItems).
    Hostile(
        POLICY,
        "policy-5000-groups-min-over-max",
        _policy(deleteConsumed={"groups": _GROUPS_5000, "minRetention": "2d"}, maxRetention="1d"),
        "spec.deleteConsumed.minRetention",
    ),
    # --- spec.deleteBefore ---
    # Words, not a time.
    Hostile(
        POLICY,
        "policy-delete-before-words",
        _policy(deleteBefore="last tuesday"),
        "spec.deleteBefore",
    ),
    # No time zone.
    Hostile(
        POLICY,
        "policy-delete-before-no-zone",
        _policy(deleteBefore="2026-11-01T00:00:00"),
        "spec.deleteBefore",
    ),
    # Year 10000.
    Hostile(
        POLICY,
        "policy-delete-before-year-10000",
        _policy(deleteBefore="10000-01-01T00:00:00Z"),
        "spec.deleteBefore",
    ),
    # February 30.
    Hostile(
        POLICY,
        "policy-delete-before-february-30",
        _policy(deleteBefore="2026-02-30T00:00:00Z"),
        "spec.deleteBefore",
    ),
    # Bool where a time is required.
    Hostile(POLICY, "policy-delete-before-bool", _policy(deleteBefore=True), "spec.deleteBefore"),
    # Epoch seconds (an integer) where an RFC 3339 string is required.
    Hostile(
        POLICY,
        "policy-delete-before-epoch-seconds",
        _policy(deleteBefore=1_793_491_200),
        "spec.deleteBefore",
    ),
    # --- spec.maxRetention ---
    # Zero: delete everything, always.
    Hostile(POLICY, "policy-max-retention-zero", _policy(maxRetention="0d"), "spec.maxRetention"),
    # A unit the operator does not know.
    Hostile(POLICY, "policy-max-retention-years", _policy(maxRetention="1y"), "spec.maxRetention"),
    # A fraction.
    Hostile(
        POLICY, "policy-max-retention-fraction", _policy(maxRetention="1.5h"), "spec.maxRetention"
    ),
    # Integer seconds where a duration string is required.
    Hostile(POLICY, "policy-max-retention-int", _policy(maxRetention=604_800), "spec.maxRetention"),
    # A space between number and unit.
    Hostile(
        POLICY, "policy-max-retention-spaced", _policy(maxRetention="7 d"), "spec.maxRetention"
    ),
    # --- spec.interval ---
    # Just under the 10 s floor.
    Hostile(POLICY, "policy-interval-too-short", _policy(interval="9s999ms"), "spec.interval"),
    # Zero: a busy loop.
    Hostile(POLICY, "policy-interval-zero", _policy(interval="0s"), "spec.interval"),
    # A negative interval.
    Hostile(POLICY, "policy-interval-negative", _policy(interval="-5m"), "spec.interval"),
    # 5,000 digits: Python refuses int() of more than 4,300.
    Hostile(
        POLICY, "policy-interval-5000-digits", _policy(interval="9" * 5000 + "d"), "spec.interval"
    ),
    # An empty interval.
    Hostile(POLICY, "policy-interval-empty", _policy(interval=""), "spec.interval"),
    # Units are lower case: M is not minutes (nor months).
    Hostile(POLICY, "policy-interval-upper-case", _policy(interval="5M"), "spec.interval"),
    # Bool where a duration is required.
    Hostile(POLICY, "policy-interval-bool", _policy(interval=True), "spec.interval"),
    # --- spec.notify ---
    # Watching no group.
    Hostile(
        POLICY, "policy-notify-groups-empty", _policy(notify={"groups": []}), "spec.notify.groups"
    ),
    # The groups key left out.
    Hostile(
        POLICY,
        "policy-notify-no-groups",
        _policy(notify={"atRiskWithin": "1h"}),
        "spec.notify.groups",
    ),
    # Words, not a duration.
    Hostile(
        POLICY,
        "policy-notify-at-risk-words",
        _policy(notify={"groups": ["auditor"], "atRiskWithin": "an hour"}),
        "spec.notify.atRiskWithin",
    ),
    # --- spec.tombstones ---
    # Watching no group.
    Hostile(
        POLICY, "policy-tombstones-no-groups", _policy(tombstones={}), "spec.tombstones.groups"
    ),
    # 0 %: always at risk.
    Hostile(
        POLICY,
        "policy-tombstones-warn-zero",
        _policy(tombstones={"groups": ["cache-loader"], "warnAtPercent": 0}),
        "spec.tombstones.warnAtPercent",
    ),
    # Above 100 %.
    Hostile(
        POLICY,
        "policy-tombstones-warn-over-100",
        _policy(tombstones={"groups": ["cache-loader"], "warnAtPercent": 101}),
        "spec.tombstones.warnAtPercent",
    ),
    # A negative share.
    Hostile(
        POLICY,
        "policy-tombstones-warn-negative",
        _policy(tombstones={"groups": ["cache-loader"], "warnAtPercent": -80}),
        "spec.tombstones.warnAtPercent",
    ),
    # Raising delete.retention.ms with no ceiling.
    Hostile(
        POLICY,
        "policy-tombstones-raise-without-max",
        _policy(tombstones={"groups": ["cache-loader"], "raiseDeleteRetention": {"enabled": True}}),
        "spec.tombstones.raiseDeleteRetention.max",
    ),
    # A ceiling that is not a duration.
    Hostile(
        POLICY,
        "policy-tombstones-raise-max-words",
        _policy(
            tombstones={
                "groups": ["cache-loader"],
                "raiseDeleteRetention": {"enabled": True, "max": "forever"},
            }
        ),
        "spec.tombstones.raiseDeleteRetention.max",
    ),
    # --- spec.orphanPartitions and spec.cluster.brokers ---
    # Deleting directories without saying where the brokers' volumes are.
    Hostile(
        POLICY,
        "policy-orphans-without-brokers",
        {"cluster": _cluster(), "orphanPartitions": {"enabled": True}},
        "spec.cluster.brokers",
    ),
    # An access mode that does not exist.
    Hostile(
        POLICY,
        "policy-orphans-access-ssh",
        _orphans({"access": "ssh"}),
        "spec.cluster.brokers.access",
    ),
    # exec into which pods?
    Hostile(
        POLICY,
        "policy-orphans-exec-without-selector",
        _orphans({"access": "exec"}),
        "spec.cluster.brokers.podSelector",
    ),
    # An empty label selector would pick every pod of the namespace.
    Hostile(
        POLICY,
        "policy-orphans-empty-match-labels",
        _orphans({"access": "exec", "podSelector": {"matchLabels": {}}}),
        "spec.cluster.brokers.podSelector",
    ),
    # A unit the operator does not know.
    Hostile(
        POLICY,
        "policy-orphans-removal-delay-years",
        _orphans(_LOCAL_BROKERS, removalDelay="1y"),
        "spec.orphanPartitions.removalDelay",
    ),
    # A negative minimum age (an integer, at that).
    Hostile(
        POLICY,
        "policy-orphans-min-age-negative",
        _orphans(_LOCAL_BROKERS, minAge=-1),
        "spec.orphanPartitions.minAge",
    ),
    # --- found by this corpus: the parsers let these through until they were fixed ---
    # String where a list of names is required.
    Hostile(
        POLICY,
        "policy-names-string",
        _policy(topics={"names": "orders"}),
        "spec.topics.names",
    ),
    # Integer where a topic name is required.
    Hostile(
        POLICY,
        "policy-names-number",
        _policy(topics={"names": [5]}),
        "spec.topics.names[0]",
    ),
    # A repeat count past what Python's re can hold (13 characters; the CRD allows 1024).
    Hostile(
        POLICY,
        "policy-pattern-repeat-overflow",
        _policy(topics={"pattern": "a{4294967296}"}),
        "spec.topics.pattern",
    ),
    # 500 nested groups (1,000 characters, within the CRD's maxLength of 1024).
    Hostile(
        POLICY,
        "policy-pattern-deep-nesting",
        _policy(topics={"pattern": "(" * 500 + ")" * 500}),
        "spec.topics.pattern",
    ),
    # Integer where a pattern string is required.
    Hostile(
        POLICY,
        "policy-pattern-number",
        _policy(topics={"pattern": 5}),
        "spec.topics.pattern",
    ),
    # Words where a percentage is required.
    Hostile(
        POLICY,
        "policy-tombstones-warn-words",
        _policy(tombstones={"groups": ["cache-loader"], "warnAtPercent": "high"}),
        "spec.tombstones.warnAtPercent",
    ),
    # List where the deleteConsumed object is required.
    Hostile(
        POLICY,
        "policy-consumed-list",
        _policy(deleteConsumed=["enricher"]),
        "spec.deleteConsumed",
    ),
    # Arabic-Indic digits: ten minutes to Python's \d and int(), not to the CRD's [0-9].
    Hostile(
        POLICY,
        "policy-interval-arabic-digits",
        _policy(interval="\u0661\u0660m"),
        "spec.interval",
    ),
    # 99999999 days (273,790 years): next run after the year 9999.
    Hostile(
        POLICY,
        "policy-interval-beyond-calendar",
        _policy(interval="99999999d"),
        "spec.interval",
    ),
    # 99999999 days of retention: its oldest kept time is before the year 1.
    Hostile(
        POLICY,
        "policy-max-retention-beyond-calendar",
        _policy(maxRetention="99999999d"),
        "spec.maxRetention",
    ),
    # 1 ms before the epoch is -1 ms, which ListOffsets reads as LATEST (the high watermark).
    Hostile(
        POLICY,
        "policy-delete-before-before-epoch",
        _policy(deleteBefore="1969-12-31T23:59:59.999Z"),
        "spec.deleteBefore",
    ),
    # The string "false" where a bool is required, on the switch that deletes directories.
    Hostile(
        POLICY,
        "policy-orphans-enabled-string-false",
        _orphans(_LOCAL_BROKERS, enabled="false"),
        "spec.orphanPartitions.enabled",
    ),
    # An empty group id.
    Hostile(
        POLICY,
        "policy-consumed-group-empty-name",
        _policy(deleteConsumed={"groups": [""]}),
        "spec.deleteConsumed.groups[0]",
    ),
    # List where the label map is required.
    Hostile(
        POLICY,
        "policy-orphans-match-labels-list",
        _orphans({"access": "exec", "podSelector": {"matchLabels": ["app=kafka"]}}),
        "spec.cluster.brokers.podSelector.matchLabels",
    ),
    # List where the cluster object is required.
    Hostile(
        POLICY,
        "policy-cluster-list",
        _policy(cluster=[BOOTSTRAP]),
        "spec.cluster",
    ),
]

# --- RecordErasure (issue 48) -----------------------------------------------------------
# The erasures aim at ERASE_TOPIC, a compacted topic the e2e test fills with records of
# ERASE_KEY: an erasure accepted by mistake would write a tombstone there, and its high
# watermark would move.
ERASE_TOPIC: Final = "orders-customers"
ERASE_KEY: Final = b"customer-4711"
ERASE_DIGEST: Final = hashlib.sha256(ERASE_KEY).hexdigest()
# Personal data pasted where a digest belongs: the refusal must name the field and never
# echo the value (64 characters, so only the hex check refuses it).
PASTED_EMAIL: Final = "erika.mustermann@example.com"
PASTED_64: Final = (PASTED_EMAIL * 3)[:64]


def _erasure(**fields: Any) -> dict[str, Any]:
    """A valid erasure (one digest on ERASE_TOPIC) with `fields` added or replaced."""
    return {
        "cluster": _cluster(),
        "topics": {"names": [ERASE_TOPIC]},
        "keys": [{"sha256": ERASE_DIGEST}],
        **fields,
    }


RECORD_ERASURES: Final[list[Hostile]] = [
    # --- spec.keys ---
    # Three hex characters: not a SHA-256.
    Hostile(
        ERASURE, "erase-digest-short", _erasure(keys=[{"sha256": "abc"}]), "spec.keys[0].sha256"
    ),
    # 64 characters, one not hex.
    Hostile(
        ERASURE,
        "erase-digest-not-hex",
        _erasure(keys=[{"sha256": ERASE_DIGEST[:63] + "g"}]),
        "spec.keys[0].sha256",
    ),
    # A customer's e-mail address pasted where its digest belongs.
    Hostile(
        ERASURE,
        "erase-digest-pasted-email",
        _erasure(keys=[{"sha256": ERASE_DIGEST}, {"sha256": PASTED_EMAIL}]),
        "spec.keys[1].sha256",
    ),
    # The same, padded to 64 characters: the length passes, the hex check must not.
    Hostile(
        ERASURE,
        "erase-digest-pasted-64-chars",
        _erasure(keys=[{"sha256": PASTED_64}]),
        "spec.keys[0].sha256",
    ),
    # Integer where a hex string is required.
    Hostile(ERASURE, "erase-digest-int", _erasure(keys=[{"sha256": 4711}]), "spec.keys[0].sha256"),
    # Two forms of one key: which one is meant?
    Hostile(
        ERASURE,
        "erase-key-two-forms",
        _erasure(keys=[{"sha256": ERASE_DIGEST, "string": "customer-4711"}]),
        "spec.keys[0]",
    ),
    # A key object with no form at all.
    Hostile(ERASURE, "erase-key-no-form", _erasure(keys=[{}]), "spec.keys[0]"),
    # base64 that is not.
    Hostile(
        ERASURE, "erase-key-bad-base64", _erasure(keys=[{"base64": "***"}]), "spec.keys[0].base64"
    ),
    # Nothing to erase.
    Hostile(ERASURE, "erase-no-keys", _erasure(keys=[]), "spec.keys"),
    # A single digest string where the list of keys is required.
    Hostile(ERASURE, "erase-keys-string", _erasure(keys=ERASE_DIGEST), "spec.keys"),
    # 10,001 digests: one past the most one resource may hold.
    Hostile(
        ERASURE,
        "erase-10001-keys",
        _erasure(keys=[{"sha256": hashlib.sha256(b"%d" % i).hexdigest()} for i in range(10_001)]),
        "spec.keys",
    ),
    # --- spec.topics ---
    # An internal topic.
    Hostile(
        ERASURE,
        "erase-internal-topic",
        _erasure(topics={"names": ["__consumer_offsets"]}),
        "spec.topics.names[0]",
    ),
    # No topic at all.
    Hostile(ERASURE, "erase-no-topics", _erasure(topics={}), "spec.topics"),
    # A topic listed twice.
    Hostile(
        ERASURE,
        "erase-topic-twice",
        _erasure(topics={"names": [ERASE_TOPIC, ERASE_TOPIC]}),
        "spec.topics.names[1]",
    ),
    # A path where a topic name is required.
    Hostile(
        ERASURE,
        "erase-topic-path",
        _erasure(topics={"names": ["../../etc/passwd"]}),
        "spec.topics.names[0]",
    ),
    # --- spec.onDeleteTopics, acceptCollateral, deadline ---
    # cut without having accepted its collateral (and not a dry run).
    Hostile(
        ERASURE,
        "erase-cut-without-accept",
        _erasure(onDeleteTopics="cut"),
        "spec.acceptCollateral",
    ),
    # cut with acceptCollateral given as the string "false".
    Hostile(
        ERASURE,
        "erase-cut-accept-string",
        _erasure(onDeleteTopics="cut", acceptCollateral="false"),
        "spec.acceptCollateral",
    ),
    # A mode that does not exist.
    Hostile(
        ERASURE,
        "erase-on-delete-shred",
        _erasure(onDeleteTopics="shred"),
        "spec.onDeleteTopics",
    ),
    # A deadline of nothing.
    Hostile(ERASURE, "erase-deadline-zero", _erasure(deadline="0s"), "spec.deadline"),
    # Words, not a duration.
    Hostile(ERASURE, "erase-deadline-words", _erasure(deadline="a month"), "spec.deadline"),
]

CORPUS: Final[list[Hostile]] = RECORD_PURGES + RETENTION_POLICIES + RECORD_ERASURES
# The entries the parsers refuse today, naming the field (the rest are known gaps).
REFUSED: Final[list[Hostile]] = [e for e in CORPUS if e.gap is None]

# --- strict tenancy (issue 26) ---------------------------------------------------------
# Specs a tenant with `create` on one namespace may write to reach past its
# KafkaClusterBinding. The session's e2e operator runs --tenancy=open, so these are not in
# CORPUS: tests/unit/test_hostile_specs.py runs them through strict tenancy and
# TENANCY_BINDING, and tests/e2e/test_tenancy.py applies them to a strict operator. The
# binding admits the namespace the entries are applied in, for every operation, on topics
# matching `orders.*` only, with orphan floors of 1h.
BINDING_NAME: Final = "hostile-binding"
_REF: Final = {"clusterRef": BINDING_NAME}


def tenancy_binding(namespace: str, cluster_id: str) -> dict[str, Any]:
    """The spec of the binding the TENANCY entries are judged against."""
    return {
        "clusterId": cluster_id,
        "connection": {"bootstrapServers": BOOTSTRAP},
        "tenants": [
            {
                "namespaces": [namespace],
                "operations": ["purge", "retention", "orphanCleanup", "erase"],
                "topics": {"allow": ["orders.*"]},
            }
        ],
        "brokers": {"access": "local"},
        "orphanCleanup": {"minRemovalDelay": "1h", "minAge": "1h"},
    }


TENANCY: Final[list[Hostile]] = [
    # Another team's brokers typed in.
    Hostile(
        PURGE,
        "tenant-inline-bootstrap",
        _purge(partitions=[_cut()]),
        "spec.cluster.bootstrapServers",
    ),
    # Another namespace's Strimzi Kafka and KafkaUser.
    Hostile(
        POLICY,
        "tenant-inline-strimzi",
        _policy(
            cluster={"strimzi": {"kafka": "victim", "namespace": "team-b", "kafkaUser": "admin"}}
        ),
        "spec.cluster.strimzi",
    ),
    # A Secret of the tenant's own with properties of its choosing, beside the binding.
    Hostile(
        POLICY,
        "tenant-ref-with-secret",
        _policy(cluster={**_REF, "clientConfigSecret": "mine"}),
        "spec.cluster.clientConfigSecret",
    ),
    # Another team's broker pods, to exec into.
    Hostile(
        POLICY,
        "tenant-ref-with-brokers",
        {
            "cluster": {
                **_REF,
                "brokers": {
                    "access": "exec",
                    "namespace": "team-b",
                    "podSelector": {"matchLabels": {"app": "kafka"}},
                },
            },
            "orphanPartitions": {"enabled": True, "removalDelay": "2h"},
        },
        "spec.cluster.brokers",
    ),
    # Orphan removal at once, and of directories younger than a millisecond.
    Hostile(
        POLICY,
        "tenant-orphans-no-delay",
        {"cluster": _REF, "orphanPartitions": {"enabled": True, "removalDelay": "0s"}},
        "spec.orphanPartitions.removalDelay",
    ),
    Hostile(
        POLICY,
        "tenant-orphans-no-age",
        {
            "cluster": _REF,
            "orphanPartitions": {"enabled": True, "removalDelay": "2h", "minAge": "1ms"},
        },
        "spec.orphanPartitions.minAge",
    ),
    # A topic outside the binding, an internal topic, a well-known internal one.
    Hostile(
        PURGE,
        "tenant-purge-foreign-topic",
        {"cluster": _REF, "partitions": [_cut(), _cut(topic="billing")]},
        "spec.partitions[1].topic",
    ),
    Hostile(
        PURGE,
        "tenant-purge-internal-topic",
        {
            "cluster": _REF,
            "partitions": [_cut(topic="__consumer_offsets")],
            "allowInternalTopics": True,
        },
        "spec.partitions[0].topic",
    ),
    Hostile(
        PURGE,
        "tenant-purge-changelog",
        {
            "cluster": _REF,
            "topics": [_whole({"highWatermark": True}, name="orders-store-changelog")],
        },
        "spec.topics[0].name",
    ),
    Hostile(
        POLICY,
        "tenant-policy-foreign-topic",
        _policy(cluster=_REF, topics={"names": ["orders", "billing"]}),
        "spec.topics.names[1]",
    ),
    # Internal topics of MirrorMaker 2, Strimzi's Connect and Confluent that the entry's
    # own allow (orders.*) matches: the binding's well-known list protects them anyway.
    Hostile(
        PURGE,
        "tenant-purge-mm2-checkpoints",
        {"cluster": _REF, "partitions": [_cut(topic="orders.checkpoints.internal")]},
        "spec.partitions[0].topic",
    ),
    Hostile(
        PURGE,
        "tenant-purge-mm2-heartbeats",
        {"cluster": _REF, "partitions": [_cut(), _cut(topic="orders.heartbeats")]},
        "spec.partitions[1].topic",
    ),
    Hostile(
        POLICY,
        "tenant-policy-strimzi-connect",
        _policy(cluster=_REF, topics={"names": ["orders-connect-cluster-offsets"]}),
        "spec.topics.names[0]",
    ),
    # An erasure of another team's topic: nothing may be written to it, not a tombstone.
    Hostile(
        ERASURE,
        "tenant-erase-foreign-topic",
        _erasure(cluster=_REF, topics={"names": [ERASE_TOPIC, "billing"]}),
        "spec.topics.names[1]",
    ),
    # A Streams changelog that the entry's allow matches: protected all the same.
    Hostile(
        ERASURE,
        "tenant-erase-changelog",
        _erasure(cluster=_REF, topics={"names": ["orders-store-changelog"]}),
        "spec.topics.names[0]",
    ),
]
