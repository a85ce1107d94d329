"""KafkaClusterBinding: what an administrator lets namespaces do with one Kafka cluster.

The operator runs cluster-wide, deletes data and execs into broker pods; a resource in a
namespace must not reach a cluster, Secret or pod another team owns. Under strict tenancy
(the default) a RecordPurge or RetentionPolicy names its cluster only by `clusterRef`, a
cluster-scoped binding only an administrator can write (the pattern of cert-manager's
ClusterIssuer and Gateway API's ReferenceGrant: the owner of the shared thing says who
may use it). Everything a tenant could misuse comes from the binding: the connection and
its credentials (a Secret in the operator's namespace), the cluster id every connection
must answer with, the broker pods and their access, the topics, floors and quotas.

This module is pure: it parses a binding and answers "may namespace N do X with topic T";
services.tenancy reads the objects and applies the answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kafka_retention.core import specs
from kafka_retention.core.conditions import Reason
from kafka_retention.core.patterns import PatternError, compile_pattern, first_match
from kafka_retention.core.specs import (
    INLINE_FIELDS,
    STRIMZI_FIELDS,
    ClusterRef,
    Shape,
    SpecError,
    duration,
    integer,
    known_fields,
    labels,
    names,
    namespace_name,
    obj,
    objects,
    text,
)
from kafka_retention.core.strimzi import StrimziRef


class BindingUnavailable(LookupError):
    """The binding a resource names is missing, unreadable or broken (an administrator's
    to fix); tried again later. Nothing was contacted."""

    reason = Reason.BINDING_UNAVAILABLE


# purge: RecordPurges; retention: RetentionPolicies that delete (and watch losses and
# tombstones); orphanCleanup: spec.orphanPartitions; protect: a reader's right to hold
# back other namespaces' cuts by its groups' positions, without deleting anything;
# erase: RecordErasures (tombstones written to the entry's compacted topics).
Operation = Literal["purge", "retention", "orphanCleanup", "protect", "erase"]
OPERATIONS: tuple[Operation, ...] = ("purge", "retention", "orphanCleanup", "protect", "erase")
# Operations whose policies hold back other namespaces' cuts on the entry's topics: an
# owner holds its own topics, a reader those it was granted protect on. Not erase: a
# RecordErasure has no groups that stand for readers.
HOLDING: frozenset[Operation] = frozenset({"retention", "protect"})

# Defaults and bounds as the CRD states them (hack/crd-src/kafkaclusterbinding.yaml).
DEFAULT_MIN_REMOVAL_DELAY_MS = 3_600_000
DEFAULT_MIN_ORPHAN_AGE_MS = 3_600_000
DEFAULT_PARTITIONS_PER_PURGE = 100_000
DEFAULT_POLICIES_PER_NAMESPACE = 1_000

# Internal topics of the usual companions of Kafka, protected unless the binding says
# protectWellKnownInternal: false. Schema Registry keeps every schema in `_schemas`
# (kafkastore.topic); Kafka Connect's distributed workers keep their configs, source
# offsets and task status in connect-configs/-offsets/-status by default (clusters named
# otherwise as `<name>-connect-configs` or `connect-<name>-configs`); Kafka Streams names its state
# store changelogs `<app>-<store>-changelog` and its repartition topics
# `<app>-<op>-repartition`. Deleting from any of them loses state the application cannot
# rebuild (a schema id, a connector's position, a store's contents).
# Strimzi's KafkaConnect defaults are connect-cluster-configs/-offsets/-status (any
# `connect-<x>-configs`); MirrorMaker 2 keeps its offset syncs, checkpoints and its own
# Connect topics in `mm2-offset-syncs.<cluster>.internal`, `<source>.checkpoints.internal`
# and `mm2-configs.<cluster>.internal` etc., and its heartbeats in `heartbeats` (and
# `<source>.heartbeats` once replicated); Confluent's self-balancing keeps
# `_confluent_balancer_*`; Strimzi's Cruise Control its samples in
# `strimzi.cruisecontrol.*`. README.md's list of well-known internal topics is this tuple, rendered
# (a test compares them).
WELL_KNOWN_INTERNAL = (
    r"_schemas",
    r"_confluent[-_].*",
    r"(.+-)?connect(-.+)?-(configs|offsets|status)",
    r"(.+-)?(configs|offsets|status)-connect",
    r".+\.internal",
    r"(.+\.)?heartbeats",
    r"strimzi\.cruisecontrol\..+",
    r".+-changelog",
    r".+-repartition",
)


BINDING_FIELDS: Shape = {
    "clusterId": None,
    "connection": {"bootstrapServers": None, "clientConfigSecret": None, "strimzi": STRIMZI_FIELDS},
    "tenants": {
        "namespaces": None,
        "namespaceSelector": {"matchLabels": None},
        "operations": None,
        "topics": {"allow": None, "protect": None},
        "uncommittedGroupsHold": None,
    },
    "topics": {"protect": None, "protectWellKnownInternal": None},
    "brokers": {
        "access": None,
        "namespace": None,
        "podSelector": {"matchLabels": None},
        "container": None,
    },
    "orphanCleanup": {"minRemovalDelay": None, "minAge": None},
    "limits": {"partitionsPerPurge": None, "policiesPerNamespace": None},
}


@dataclass(frozen=True)
class Tenant:
    """One entry of spec.tenants: who, what, and on which topics."""

    namespaces: frozenset[str]
    selector: tuple[tuple[str, str], ...]  # every label must match; () matches nothing
    operations: frozenset[Operation]
    # Patterns of the topics the entry's operations apply to: () grants no topic.
    allow: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    # Whether a group of this entry's namespaces that never committed on a partition
    # holds back another namespace's cut there (it would hold it at the log start).
    uncommitted_groups_hold: bool = False

    def admits(self, namespace: str, namespace_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces:
            return True
        if not self.selector or namespace_labels is None:
            return False
        return all(namespace_labels.get(k) == v for k, v in self.selector)


@dataclass(frozen=True)
class Grant:
    """What a binding lets one namespace do: the first tenant entry admitting it, with the
    binding's own protected topics. A namespace acts only on the topics its entry allows,
    for the operations its entry lists."""

    binding: str
    entry: int  # index in spec.tenants
    operations: frozenset[Operation]
    allow: tuple[str, ...]
    protect: tuple[str, ...]  # the entry's own
    binding_protect: tuple[str, ...]  # spec.topics.protect and the well-known internals
    uncommitted_groups_hold: bool = False
    # spec.limits.partitionsPerPurge: what one DeleteRecords of this namespace may cover
    # (a RecordPurge's, an erasure's cut).
    partitions_per_purge: int = DEFAULT_PARTITIONS_PER_PURGE

    @property
    def field(self) -> str:
        return f"spec.tenants[{self.entry}].topics"

    @property
    def holds(self) -> bool:
        """Whether this namespace's policies hold back other namespaces' cuts."""
        return bool(self.operations & HOLDING)

    @property
    def all_protect(self) -> tuple[str, ...]:
        return (*self.binding_protect, *self.protect)

    def topic_refusal(self, topic: str) -> str | None:
        """Why this namespace may not touch `topic`, or None when it may."""
        if topic.startswith("__"):
            return f"topic {topic} is internal; no binding lets a tenant touch it"
        pattern = first_match(self.binding_protect, topic)
        if pattern is not None:
            return f"topic {topic} is protected by KafkaClusterBinding {self.binding} ({pattern})"
        pattern = first_match(self.protect, topic)
        if pattern is not None:
            return (
                f"topic {topic} is protected by KafkaClusterBinding {self.binding} "
                f"{self.field}.protect ({pattern})"
            )
        if not self.allow:
            return (
                f"KafkaClusterBinding {self.binding} grants this namespace no topics "
                f"({self.field}.allow is empty)"
            )
        if first_match(self.allow, topic) is None:
            return (
                f"topic {topic} is not among the topics KafkaClusterBinding {self.binding} "
                f"grants this namespace ({self.field}.allow)"
            )
        return None


@dataclass(frozen=True)
class Binding:
    name: str
    cluster_id: str
    connection: ClusterRef  # secret and Strimzi objects live where the binding says
    tenants: tuple[Tenant, ...]
    protect: tuple[str, ...] = ()  # for every tenant, with the well-known internals
    brokers: specs.BrokerAccess | None = None  # spec.brokers
    min_removal_delay_ms: int = DEFAULT_MIN_REMOVAL_DELAY_MS
    min_orphan_age_ms: int = DEFAULT_MIN_ORPHAN_AGE_MS
    partitions_per_purge: int = DEFAULT_PARTITIONS_PER_PURGE
    policies_per_namespace: int = DEFAULT_POLICIES_PER_NAMESPACE

    def grant(self, namespace: str, namespace_labels: Mapping[str, str] | None) -> Grant | None:
        """What the first tenant entry admitting the namespace grants; None: not admitted."""
        for i, tenant in enumerate(self.tenants):
            if tenant.admits(namespace, namespace_labels):
                return Grant(
                    self.name,
                    i,
                    tenant.operations,
                    tenant.allow,
                    tenant.protect,
                    self.protect,
                    tenant.uncommitted_groups_hold,
                    self.partitions_per_purge,
                )
        return None

    def needs_labels(self) -> bool:
        """Whether any tenant admits by selector (then the namespace's labels are read)."""
        return any(t.selector for t in self.tenants)


def parse_binding(name: str, spec: Any) -> Binding:
    """A binding's spec; SpecError names the field (as spec.<field>) of a broken one."""
    spec = obj(spec, "spec")
    if isinstance(spec.get("topics"), Mapping) and "allow" in spec["topics"]:
        # Before tenant entries owned their topics, the binding had one allow for all.
        raise SpecError(
            "spec.topics.allow",
            "moved to spec.tenants[].topics.allow: each tenant entry grants its own topics",
        )
    known_fields(spec, BINDING_FIELDS, "spec")
    cluster_id = text(spec.get("clusterId"), "spec.clusterId")
    protect = _topics(obj(spec.get("topics"), "spec.topics"))
    floors = obj(spec.get("orphanCleanup"), "spec.orphanCleanup")
    limits = obj(spec.get("limits"), "spec.limits")
    return Binding(
        name=name,
        cluster_id=cluster_id,
        connection=_connection(obj(spec.get("connection"), "spec.connection")),
        tenants=_tenants(spec.get("tenants")),
        protect=protect,
        brokers=_brokers(spec.get("brokers")),
        min_removal_delay_ms=_duration(
            floors.get("minRemovalDelay"),
            "spec.orphanCleanup.minRemovalDelay",
            DEFAULT_MIN_REMOVAL_DELAY_MS,
        ),
        min_orphan_age_ms=_duration(
            floors.get("minAge"), "spec.orphanCleanup.minAge", DEFAULT_MIN_ORPHAN_AGE_MS
        ),
        partitions_per_purge=_limit(limits, "partitionsPerPurge", DEFAULT_PARTITIONS_PER_PURGE),
        policies_per_namespace=_limit(
            limits, "policiesPerNamespace", DEFAULT_POLICIES_PER_NAMESPACE
        ),
    )


def _connection(raw: Mapping[str, Any]) -> ClusterRef:
    bootstrap, strimzi = raw.get("bootstrapServers"), raw.get("strimzi")
    if (bootstrap is None) == (strimzi is None):
        raise SpecError("spec.connection", "set exactly one of bootstrapServers and strimzi")
    secret = raw.get("clientConfigSecret")
    if secret is not None:
        secret = text(secret, "spec.connection.clientConfigSecret")
    if strimzi is not None:
        ref = obj(strimzi, "spec.connection.strimzi")

        def field(key: str) -> str | None:
            value = ref.get(key)
            return None if value is None else text(value, f"spec.connection.strimzi.{key}")

        kafka = text(ref.get("kafka"), "spec.connection.strimzi.kafka")
        namespace = namespace_name(ref.get("namespace"), "spec.connection.strimzi.namespace")
        user = field("kafkaUser")
        if user is not None and secret is not None:
            raise SpecError(
                "spec.connection.clientConfigSecret",
                "cannot be combined with spec.connection.strimzi.kafkaUser",
            )
        return ClusterRef("", secret, StrimziRef(kafka, namespace, field("listener"), user))
    return ClusterRef(text(bootstrap, "spec.connection.bootstrapServers").strip(), secret)


def _tenants(value: Any) -> tuple[Tenant, ...]:
    tenants = []
    for i, raw in enumerate(objects(value, "spec.tenants")):
        at = f"spec.tenants[{i}]"
        spaces = names(raw.get("namespaces"), f"{at}.namespaces")
        for j, ns in enumerate(spaces):
            namespace_name(ns, f"{at}.namespaces[{j}]")
        selector = obj(raw.get("namespaceSelector"), f"{at}.namespaceSelector")
        pairs = labels(selector.get("matchLabels"), f"{at}.namespaceSelector.matchLabels")
        if selector and not pairs:
            raise SpecError(f"{at}.namespaceSelector.matchLabels", "needs at least one label")
        if not spaces and not pairs:
            raise SpecError(at, "needs namespaces or a namespaceSelector")
        ops = names(raw.get("operations"), f"{at}.operations")
        if not ops:
            raise SpecError(f"{at}.operations", "needs at least one operation")
        for j, op in enumerate(ops):
            if op not in OPERATIONS:
                raise SpecError(f"{at}.operations[{j}]", f"{op!r} is not one of {OPERATIONS}")
        chosen = frozenset(op for op in OPERATIONS if op in ops)
        topics = obj(raw.get("topics"), f"{at}.topics")
        allow = _patterns(topics.get("allow"), f"{at}.topics.allow")
        protect = _patterns(topics.get("protect"), f"{at}.topics.protect")
        hold = raw.get("uncommittedGroupsHold", False)
        if not isinstance(hold, bool):
            raise SpecError(f"{at}.uncommittedGroupsHold", "must be true or false")
        tenants.append(Tenant(frozenset(spaces), pairs, chosen, allow, protect, hold))
    if not tenants:
        raise SpecError("spec.tenants", "needs at least one tenant")
    return tuple(tenants)


def _patterns(value: Any, field_path: str) -> tuple[str, ...]:
    found = names(value, field_path)
    for i, pattern in enumerate(found):
        try:
            compile_pattern(pattern)
        except PatternError as err:
            raise SpecError(f"{field_path}[{i}]", str(err)) from None
    return found


def _topics(raw: Mapping[str, Any]) -> tuple[str, ...]:
    protect = _patterns(raw.get("protect"), "spec.topics.protect")
    well_known = raw.get("protectWellKnownInternal", True)
    if not isinstance(well_known, bool):
        raise SpecError("spec.topics.protectWellKnownInternal", "must be true or false")
    if well_known:
        protect = (*WELL_KNOWN_INTERNAL, *protect)
    return protect


def _brokers(value: Any) -> specs.BrokerAccess | None:
    return None if value is None else specs.parse_brokers(value, "spec.brokers")


def _duration(value: Any, field_path: str, default: int) -> int:
    return default if value is None else duration(value, field_path)


def _limit(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key)
    return default if value is None else integer(value, f"spec.limits.{key}", 1, 100_000)


def strict_refusal(spec: Mapping[str, Any]) -> SpecError | None:
    """Why strict tenancy refuses this spec's cluster, naming the field; None if it names
    its cluster only by clusterRef. Read from the raw spec, before any parsing, so nothing
    that could be contacted is even looked at."""
    cluster = spec.get("cluster")
    if not isinstance(cluster, Mapping):
        return SpecError("spec.cluster.clusterRef", "is required (strict tenancy)")
    for key in INLINE_FIELDS:
        if key in cluster:
            return SpecError(
                f"spec.cluster.{key}",
                "is not allowed under strict tenancy: name a KafkaClusterBinding an "
                "administrator made for this namespace in spec.cluster.clusterRef",
            )
    if not isinstance(cluster.get("clusterRef"), str) or not cluster["clusterRef"]:
        return SpecError("spec.cluster.clusterRef", "is required (strict tenancy)")
    return None
