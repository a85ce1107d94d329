"""RetentionPolicy spec as typed values, and which topics it selects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kafka_retention.core.patterns import compile_pattern, first_match
from kafka_retention.core.policy import RetentionRules
from kafka_retention.core.retention_rules import registry
from kafka_retention.core.retention_rules.rule import Watch
from kafka_retention.core.specs import (
    STRIMZI_FIELDS,
    BrokerAccess,
    ClusterRef,
    Shape,
    SpecError,
    duration,
    flag,
    group_ids,
    integer,
    is_topic_name,
    known_fields,
    names,
    obj,
    parse_brokers,
    parse_cluster,
    topic_pattern,
)
from kafka_retention.core.strimzi import StrimziRef

DEFAULT_INTERVAL_MS = 5 * 60_000
MIN_INTERVAL_MS = 10_000
DEFAULT_AT_RISK_WITHIN_MS = 3_600_000


@dataclass(frozen=True)
class TopicSelector:
    names: tuple[str, ...] = ()
    pattern: str | None = None
    exclude: tuple[str, ...] = ()
    # From the KafkaClusterBinding the policy runs under (services.tenancy): patterns a
    # topic must match (none: any) and patterns it must not. They travel with the
    # selector to Spark jobs, which select topics themselves.
    allow: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()

    def select(self, topics: Iterable[str]) -> list[str]:
        """Named or matching topics, minus excluded ones and those the binding does not
        allow; internal ('__') topics never."""
        regex = compile_pattern(self.pattern) if self.pattern else None
        chosen = set(self.names)
        if regex is not None:
            chosen |= {t for t in topics if regex.fullmatch(t)}
        return sorted(t for t in chosen if self._candidate(t) and self.permits(t))

    def withheld(self, topics: Iterable[str]) -> list[str]:
        """Topics the pattern matches that the KafkaClusterBinding's protect list keeps
        from this policy, among those its allow list grants: what status may name (a
        topic outside the allow list is outside what the namespace may see, so it is not
        listed). A topic the spec names is refused before any run (services.tenancy)."""
        if not self.pattern or not self.protect:
            return []
        regex = compile_pattern(self.pattern)
        return sorted(
            t
            for t in topics
            if regex.fullmatch(t)
            and self._candidate(t)
            and first_match(self.protect, t) is not None
            and self._allowed(t)
        )

    def permits(self, topic: str) -> bool:
        return first_match(self.protect, topic) is None and self._allowed(topic)

    def _candidate(self, topic: str) -> bool:
        """Neither internal ('__') nor excluded by the spec."""
        return not topic.startswith("__") and topic not in self.exclude

    def _allowed(self, topic: str) -> bool:
        return not self.allow or first_match(self.allow, topic) is not None


@dataclass(frozen=True)
class TombstoneSpec:
    """spec.tombstones: groups watched on compacted topics, the share of
    delete.retention.ms their lag may reach, and the optional cap to raise it to."""

    groups: tuple[str, ...]
    warn_at_percent: int = 80
    raise_max_ms: int | None = None  # None: never raise delete.retention.ms
    # Count tombstones and their oldest age by reading the topics' records (a Spark scan).
    inventory: bool = False


# BrokerAccess.access of a policy whose brokers its KafkaClusterBinding names, until
# services.tenancy fills them in.
UNBOUND = "binding"


@dataclass(frozen=True)
class OrphanSpec:
    """spec.orphanPartitions (KIP-370's rules)."""

    brokers: BrokerAccess
    removal_delay_ms: int = 86_400_000
    min_age_ms: int | None = None  # None: the broker's log retention
    stray_dirs: bool = True
    dry_run: bool = False
    # The KafkaClusterBinding's orphanCleanup.minAge (services.tenancy): a floor also for
    # the broker retention used when minAge is left out.
    min_age_floor_ms: int = 0
    # The binding's topic filter (allow/protect): directories of other topics are neither
    # removed nor listed in the tenant's status. None: every topic (open tenancy).
    topics: TopicSelector | None = None


@dataclass(frozen=True)
class PolicySpec:
    bootstrap_servers: str
    client_config_secret: str | None
    topics: TopicSelector
    rules: RetentionRules
    interval_ms: int
    dry_run: bool
    # spec.notify.atRiskWithin: how far ahead AtRisk looks for retention reaching unread
    # records of the notify groups.
    at_risk_within_ms: int = DEFAULT_AT_RISK_WITHIN_MS
    tombstones: TombstoneSpec | None = None
    orphans: OrphanSpec | None = None
    strimzi: StrimziRef | None = None  # spec.cluster.strimzi, resolved at run time
    binding: str | None = None  # spec.cluster.clusterRef
    # Set from the binding when a run is admitted (services.tenancy): the id every
    # connection for this policy must answer with.
    cluster_id: str | None = None
    # Set from the binding too. False for a reader's policy (its tenant entry grants
    # protect, not retention): it plans and holds other namespaces' cuts back by its
    # groups, and deletes nothing itself.
    cuts: bool = True
    # Whether its groups without a committed offset on a partition hold another
    # namespace's cut back there (the entry's uncommittedGroupsHold; open tenancy: yes).
    hold_uncommitted: bool = True

    @property
    def cluster(self) -> ClusterRef:
        return ClusterRef(
            self.bootstrap_servers, self.client_config_secret, self.strimzi, self.binding
        )


@dataclass(frozen=True)
class Member:
    """A policy in a batch planned together, with what pod runs need to name it as an
    owner of their objects."""

    key: str  # namespace/name
    spec: PolicySpec
    uid: str = ""
    generation: int = 0

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[-1]


@dataclass(frozen=True)
class Batch:
    """What a batch planner plans in one call: policies of one cluster, as of `now_ms`,
    reached at `bootstrap` with `client_config` (the batch's resolved client properties)."""

    members: Sequence[Member]
    bootstrap: str
    # Passwords and keys: kept out of the repr, so a log line or traceback cannot show them.
    client_config: Mapping[str, str] = field(repr=False)
    now_ms: int


# The fields of a RetentionPolicy spec, as the CRD defines them (test_crds compares): the
# policy's own, with each rule's (core.retention_rules) in the CRD's order.
POLICY_FIELDS: Shape = {
    "cluster": {
        "clusterRef": None,
        "bootstrapServers": None,
        "clientConfigSecret": None,
        "strimzi": STRIMZI_FIELDS,
        "brokers": {
            "access": None,
            "namespace": None,
            "podSelector": {"matchLabels": None},
            "container": None,
        },
    },
    "topics": {"names": None, "pattern": None, "exclude": None},
    "interval": None,
    **registry.merged_shape(r.shape for r in registry.RULES if not isinstance(r, Watch)),
    "dryRun": None,
    "tombstones": {
        "groups": None,
        "warnAtPercent": None,
        "raiseDeleteRetention": {"enabled": None, "max": None},
        "inventory": None,
    },
    "orphanPartitions": {
        "enabled": None,
        "removalDelay": None,
        "minAge": None,
        "strayDirs": None,
        "dryRun": None,
    },
    # The watches' fields last, with notify's look-ahead (a setting of the policy's).
    **registry.merged_shape(
        [
            *(r.shape for r in registry.RULES if isinstance(r, Watch)),
            {"notify": {"atRiskWithin": None}},
        ]
    ),
}

# Keys of the spec that make a policy more than orphan cleanup (it then needs topics).
_TOPIC_KEYS = (*dict.fromkeys(r.path.split(".")[0] for r in registry.standalone()), "tombstones")


def parse_policy_spec(spec: Mapping[str, Any]) -> PolicySpec:
    spec = obj(spec, "spec")
    known_fields(spec, POLICY_FIELDS, "spec")
    cluster = parse_cluster(spec)

    topics = obj(spec.get("topics"), "spec.topics")
    topic_names = names(topics.get("names"), "spec.topics.names")
    for i, name in enumerate(topic_names):
        if not is_topic_name(name):
            raise SpecError(f"spec.topics.names[{i}]", f"{name!r} is not a valid topic name")
    exclude = names(topics.get("exclude"), "spec.topics.exclude")
    pattern = topic_pattern(topics.get("pattern"), "spec.topics.pattern")
    orphans = _orphans(spec, cluster.strimzi)
    only_orphans = orphans is not None and not any(spec.get(k) is not None for k in _TOPIC_KEYS)
    if not topic_names and not pattern and not (only_orphans and not topics):
        raise SpecError("spec.topics", "needs names or a pattern")

    rules = registry.parse(spec)
    notify = spec.get("notify")
    at_risk_within = DEFAULT_AT_RISK_WITHIN_MS
    if notify is not None and notify.get("atRiskWithin") is not None:
        at_risk_within = duration(notify["atRiskWithin"], "spec.notify.atRiskWithin")
    tombstones = _tombstones(spec.get("tombstones"))
    if not rules.acts() and tombstones is None and orphans is None:
        standalone = ", ".join(r.path for r in registry.standalone())
        raise SpecError("spec", f"needs {standalone}, tombstones or orphanPartitions")
    registry.check(rules)
    dry_run = flag(spec.get("dryRun"), "spec.dryRun", False)
    if dry_run and orphans is not None:
        # spec.dryRun deletes nothing, orphan directories included, whatever
        # orphanPartitions.dryRun says.
        orphans = replace(orphans, dry_run=True)
    interval = duration(spec.get("interval", "5m"), "spec.interval")
    if interval < MIN_INTERVAL_MS:
        raise SpecError("spec.interval", "must be at least 10s")
    return PolicySpec(
        bootstrap_servers=cluster.bootstrap_servers,
        client_config_secret=cluster.client_config_secret,
        topics=TopicSelector(topic_names, pattern, exclude),
        rules=rules,
        interval_ms=interval,
        dry_run=dry_run,
        at_risk_within_ms=at_risk_within,
        tombstones=tombstones,
        orphans=orphans,
        strimzi=cluster.strimzi,
        binding=cluster.binding,
    )


def _orphans(spec: Mapping[str, Any], strimzi: StrimziRef | None) -> OrphanSpec | None:
    """spec.orphanPartitions when enabled (a disabled one is as if absent)."""
    raw = spec.get("orphanPartitions")
    if raw is None:
        return None
    raw = obj(raw, "spec.orphanPartitions")
    if not flag(raw.get("enabled"), "spec.orphanPartitions.enabled", False):
        return None
    min_age = raw.get("minAge")
    timing = (
        duration(raw.get("removalDelay", "24h"), "spec.orphanPartitions.removalDelay"),
        None if min_age is None else duration(min_age, "spec.orphanPartitions.minAge"),
        flag(raw.get("strayDirs"), "spec.orphanPartitions.strayDirs", True),
        flag(raw.get("dryRun"), "spec.orphanPartitions.dryRun", False),
    )
    cluster = obj(spec.get("cluster"), "spec.cluster")
    if cluster.get("clusterRef") is not None:
        # The binding says where the brokers are; services.tenancy fills it in when the
        # run is admitted, and a volume finder refuses this placeholder.
        return OrphanSpec(BrokerAccess(UNBOUND), *timing)
    brokers = cluster.get("brokers")
    if brokers is None:
        raise SpecError("spec.cluster.brokers", "is required by spec.orphanPartitions")
    access = parse_brokers(brokers, "spec.cluster.brokers")
    if access.access == "exec" and not access.match_labels:
        if strimzi is None:
            raise SpecError("spec.cluster.brokers.podSelector", "is required with access exec")
        # A Strimzi cluster's broker pods carry its labels, in the Kafka's namespace.
        access = replace(
            access,
            match_labels=strimzi.broker_labels(),
            namespace=access.namespace or strimzi.namespace,
        )
    return OrphanSpec(access, *timing)


def _tombstones(raw: Mapping[str, Any] | None) -> TombstoneSpec | None:
    if raw is None:
        return None
    raw = obj(raw, "spec.tombstones")
    groups = group_ids(raw.get("groups"), "spec.tombstones.groups")
    if not groups:
        raise SpecError("spec.tombstones.groups", "needs at least one group")
    warn = integer(raw.get("warnAtPercent", 80), "spec.tombstones.warnAtPercent", 1, 100)
    remedy = obj(raw.get("raiseDeleteRetention"), "spec.tombstones.raiseDeleteRetention")
    cap = None
    if flag(remedy.get("enabled"), "spec.tombstones.raiseDeleteRetention.enabled", False):
        if remedy.get("max") is None:
            raise SpecError("spec.tombstones.raiseDeleteRetention.max", "is required when enabled")
        cap = duration(remedy["max"], "spec.tombstones.raiseDeleteRetention.max")
    return TombstoneSpec(
        groups, warn, cap, flag(raw.get("inventory"), "spec.tombstones.inventory", False)
    )
