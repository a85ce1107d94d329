"""RecordPurge: the spec as typed values, and the per-partition plan computed from facts.

Pure: the service gathers facts through the Kafka adapter, this module decides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, partial
from typing import Any, Literal

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.specs import (
    MAX_OFFSET,
    MAX_PARTITION,
    STRIMZI_FIELDS,
    ClusterRef,
    Shape,
    SpecError,
    flag,
    group_ids,
    integer,
    is_topic_name,
    known_fields,
    obj,
    objects,
    parse_cluster,
    parse_time,
)
from kafka_retention.core.strimzi import StrimziRef

BeforeKind = Literal["timestamp", "committedBy", "highWatermark"]

# Plain-words texts for errors users must act on; the Kafka error name leads so that
# scripts and searches find it.
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"


@dataclass(frozen=True)
class ExplicitCut:
    """spec.partitions[]: one partition's offset as kafka-delete-records takes it (-1:
    the high watermark)."""

    tp: TopicPartition
    offset: int


@dataclass(frozen=True)
class TopicCut:
    """spec.topics[]: every partition of a topic, cut before a time or at what groups
    have consumed."""

    topic: str
    kind: BeforeKind
    timestamp: datetime | None = None
    groups: tuple[str, ...] = ()

    @property
    def timestamp_ms(self) -> int | None:
        return None if self.timestamp is None else int(self.timestamp.timestamp() * 1000)


@dataclass(frozen=True)
class PurgeRequest:
    bootstrap_servers: str
    client_config_secret: str | None
    partitions: tuple[ExplicitCut, ...]
    topics: tuple[TopicCut, ...]
    protect_groups: tuple[str, ...]
    dry_run: bool
    allow_internal_topics: bool
    strimzi: StrimziRef | None = None  # spec.cluster.strimzi, resolved when connecting
    binding: str | None = None  # spec.cluster.clusterRef

    @property
    def cluster(self) -> ClusterRef:
        return ClusterRef(
            self.bootstrap_servers, self.client_config_secret, self.strimzi, self.binding
        )

    def named_topics(self) -> list[tuple[str, str]]:
        """(field, topic) of every topic the spec names, in spec order."""
        return [
            (f"spec.partitions[{i}].topic", c.tp.topic) for i, c in enumerate(self.partitions)
        ] + [(f"spec.topics[{i}].name", t.topic) for i, t in enumerate(self.topics)]

    def topic_names(self) -> set[str]:
        return {c.tp.topic for c in self.partitions} | {t.topic for t in self.topics}

    def guard_groups(self, topic: str) -> tuple[str, ...]:
        """Groups whose committed offsets bound every cut on this topic: the protected
        groups, plus the committedBy groups that defined the cut in the first place."""
        return self._guard_groups_by_topic.get(topic, self._protected)

    @cached_property
    def _protected(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.protect_groups)))

    @cached_property
    def _guard_groups_by_topic(self) -> dict[str, tuple[str, ...]]:
        # Computed once: it is asked for every partition, several times, and a purge may
        # name hundreds of topics over 100,000 partitions.
        groups: dict[str, set[str]] = {}
        for t in self.topics:
            groups.setdefault(t.topic, set(self.protect_groups)).update(t.groups)
        return {topic: tuple(sorted(names)) for topic, names in groups.items()}

    def all_groups(self) -> tuple[str, ...]:
        return tuple(sorted({g for t in self.topic_names() for g in self.guard_groups(t)}))


def _topic(value: Any, field_path: str, allow_internal: bool) -> str:
    if not is_topic_name(value):
        raise SpecError(field_path, f"{value!r} is not a valid Kafka topic name")
    if value.startswith("__") and not allow_internal:
        raise SpecError(
            field_path,
            f"{value} is an internal topic; set spec.allowInternalTopics: true to purge it",
        )
    return value


# The fields of a RecordPurge spec, as the CRD defines them (test_crds compares).
PURGE_FIELDS: Shape = {
    "cluster": {
        "clusterRef": None,
        "bootstrapServers": None,
        "clientConfigSecret": None,
        "strimzi": STRIMZI_FIELDS,
    },
    "partitions": {"topic": None, "partition": None, "offset": None},
    "topics": {
        "name": None,
        "before": {"timestamp": None, "committedBy": None, "highWatermark": None},
    },
    "protectGroups": None,
    "dryRun": None,
    "allowInternalTopics": None,
}


def parse_spec(spec: Mapping[str, Any]) -> PurgeRequest:
    """Check what the CRD schema cannot, so nothing is deleted on a spec that is wrong.

    The schema already rejects most mistakes at apply time; this runs again here because
    the operator may meet objects stored before a schema change, or a CLI-built spec.
    """
    spec = obj(spec, "spec")
    known_fields(spec, PURGE_FIELDS, "spec")
    cluster = parse_cluster(spec)
    allow_internal = flag(spec.get("allowInternalTopics"), "spec.allowInternalTopics", False)

    explicit: list[ExplicitCut] = []
    for i, entry in enumerate(objects(spec.get("partitions"), "spec.partitions")):
        path = f"spec.partitions[{i}]"
        topic = _topic(entry.get("topic"), f"{path}.topic", allow_internal)
        partition = integer(entry.get("partition"), f"{path}.partition", 0, MAX_PARTITION)
        # -1: the high watermark.
        offset = integer(entry.get("offset"), f"{path}.offset", -1, MAX_OFFSET)
        explicit.append(ExplicitCut(TopicPartition(topic, partition), offset))
    seen: dict[TopicPartition, int] = {}
    for i, cut in enumerate(explicit):
        if cut.tp in seen:
            raise SpecError(
                f"spec.partitions[{i}]",
                f"{cut.tp} is also listed at spec.partitions[{seen[cut.tp]}]",
            )
        seen[cut.tp] = i

    topics: list[TopicCut] = []
    explicit_topics = {c.tp.topic for c in explicit}
    for i, entry in enumerate(objects(spec.get("topics"), "spec.topics")):
        path = f"spec.topics[{i}]"
        name = _topic(entry.get("name"), f"{path}.name", allow_internal)
        if name in explicit_topics:
            raise SpecError(
                f"{path}.name",
                f"topic {name} is also cut in spec.partitions; name each topic in one place only",
            )
        if any(t.topic == name for t in topics):
            raise SpecError(f"{path}.name", f"topic {name} is listed twice")
        topics.append(_before(obj(entry.get("before"), f"{path}.before"), name, f"{path}.before"))

    if not explicit and not topics:
        raise SpecError("spec", "name at least one entry in partitions or topics")
    return PurgeRequest(
        bootstrap_servers=cluster.bootstrap_servers,
        client_config_secret=cluster.client_config_secret,
        strimzi=cluster.strimzi,
        binding=cluster.binding,
        partitions=tuple(explicit),
        topics=tuple(topics),
        protect_groups=group_ids(spec.get("protectGroups"), "spec.protectGroups"),
        dry_run=flag(spec.get("dryRun"), "spec.dryRun", False),
        allow_internal_topics=allow_internal,
    )


def _before(before: Mapping[str, Any], topic: str, path: str) -> TopicCut:
    given = [k for k in ("timestamp", "committedBy", "highWatermark") if k in before]
    if len(given) != 1:
        raise SpecError(path, "needs exactly one of timestamp, committedBy or highWatermark")
    if "timestamp" in before:
        when = parse_time(before["timestamp"], f"{path}.timestamp")
        return TopicCut(topic, "timestamp", timestamp=when)
    if "committedBy" in before:
        groups = group_ids(before["committedBy"], f"{path}.committedBy")
        if not groups:
            raise SpecError(f"{path}.committedBy", "needs at least one group")
        return TopicCut(topic, "committedBy", groups=groups)
    if before["highWatermark"] is not True:
        raise SpecError(f"{path}.highWatermark", "can only be true; omit it otherwise")
    return TopicCut(topic, "highWatermark")


@dataclass(frozen=True)
class PartitionPlan:
    """One partition's cut: `target` is where the log start should end up."""

    tp: TopicPartition
    log_start: int
    high_watermark: int
    target: int
    reason: str
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def records_to_delete(self) -> int:
        return 0 if self.error else rules.records_deleted_by(self.target, self.log_start)


@dataclass
class PlanInput:
    """Facts for every partition the request covers, plus what could not be read."""

    facts: dict[TopicPartition, PartitionFacts] = field(default_factory=dict)
    # Per-topic problems found before any offset was read (unknown, compact-only, ...).
    topic_errors: dict[str, str] = field(default_factory=dict)
    partition_errors: dict[TopicPartition, str] = field(default_factory=dict)
    # Partitions of each whole-topic cut, as the cluster reported them.
    topic_partitions: dict[str, list[int]] = field(default_factory=dict)


def plan_purge(request: PurgeRequest, given: PlanInput) -> list[PartitionPlan]:
    """The cut for every partition the request names, safety rules applied."""
    out: list[PartitionPlan] = []
    for cut in request.partitions:
        out.append(_plan_one(request, given, cut.tp, partial(_explicit, offset=cut.offset)))
    for tcut in request.topics:
        if tcut.topic in given.topic_errors:
            out.append(_unplanned(TopicPartition(tcut.topic, -1), given.topic_errors[tcut.topic]))
            continue
        for p in sorted(given.topic_partitions.get(tcut.topic, [])):
            tp = TopicPartition(tcut.topic, p)
            out.append(_plan_one(request, given, tp, partial(_for_topic, cut=tcut)))
    return out


def _unplanned(tp: TopicPartition, error: str) -> PartitionPlan:
    return PartitionPlan(tp, -1, -1, -1, "not planned", error=error)


def _plan_one(
    request: PurgeRequest,
    given: PlanInput,
    tp: TopicPartition,
    propose: Callable[[PartitionFacts], rules.Cut | str],
) -> PartitionPlan:
    if tp.topic in given.topic_errors:
        return _unplanned(tp, given.topic_errors[tp.topic])
    if tp in given.partition_errors:
        return _unplanned(tp, given.partition_errors[tp])
    facts = given.facts.get(tp)
    if facts is None:
        return _unplanned(tp, f"{UNKNOWN_TOPIC_OR_PARTITION}: partition {tp} does not exist")
    proposed = propose(facts)
    if isinstance(proposed, str):
        return PartitionPlan(
            tp, facts.log_start, facts.high_watermark, -1, "not planned", error=proposed
        )
    return enforce_safety(request, facts, proposed)


def enforce_safety(request: PurgeRequest, facts: PartitionFacts, cut: rules.Cut) -> PartitionPlan:
    """The ceilings every cut passes through, at planning and again right before deleting."""
    cut = rules.protect_groups(
        cut, facts.committed, request.guard_groups(facts.tp.topic), facts.log_start
    )
    cut = rules.at_most_high_watermark(cut, facts.high_watermark)
    notes = cut.notes
    if cut.offset <= facts.log_start:
        notes = (*notes, f"log start {facts.log_start} is already at or past the cut")
    return PartitionPlan(
        facts.tp, facts.log_start, facts.high_watermark, cut.offset, cut.reason, notes
    )


def _explicit(facts: PartitionFacts, offset: int) -> rules.Cut | str:
    if offset > facts.high_watermark:
        return (
            f"{OFFSET_OUT_OF_RANGE}: offset {offset} is above the high watermark "
            f"{facts.high_watermark} of {facts.tp}"
        )
    return rules.explicit(offset, facts.high_watermark)


def _for_topic(facts: PartitionFacts, cut: TopicCut) -> rules.Cut:
    if cut.kind == "timestamp":
        if cut.timestamp is None or cut.timestamp_ms is None:
            raise ValueError(f"timestamp cut on {cut.topic} without a time")
        return rules.before_timestamp(
            facts.offset_for_time(cut.timestamp_ms),
            facts.high_watermark,
            cut.timestamp.isoformat(),
        )
    if cut.kind == "committedBy":
        return rules.consumed_by(facts.committed, cut.groups, facts.log_start)
    return rules.explicit(-1, facts.high_watermark)


def recheck(request: PurgeRequest, planned: PartitionPlan, fresh: PartitionFacts) -> PartitionPlan:
    """Re-apply the ceilings to a planned target with facts read just now.

    Groups may have rewound their offsets and the high watermark may have dropped (an
    unclean leader election) since planning; a target is only ever lowered here, never
    raised, so a purge never deletes more than it showed in its plan.
    """
    return enforce_safety(request, fresh, rules.Cut(planned.target, planned.reason, planned.notes))
