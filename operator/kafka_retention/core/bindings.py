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


Operation = Literal["purge", "retention", "orphanCleanup"]
OPERATIONS: tuple[Operation, ...] = ("purge", "retention", "orphanCleanup")

# Defaults and bounds as the CRD states them (hack/crd-src/kafkaclusterbinding.yaml).
DEFAULT_MIN_REMOVAL_DELAY_MS = 3_600_000
DEFAULT_MIN_ORPHAN_AGE_MS = 3_600_000
DEFAULT_PARTITIONS_PER_PURGE = 100_000
DEFAULT_POLICIES_PER_NAMESPACE = 1_000

# Internal topics of the usual companions of Kafka, protected unless the binding says
# protectWellKnownInternal: false. Schema Registry keeps every schema in `_schemas`
# (kafkastore.topic); Kafka Connect's distributed workers keep their configs, source
# offsets and task status in connect-configs/-offsets/-status by default, and clusters
# named otherwise commonly follow `<name>-configs` etc.; Kafka Streams names its state
# store changelogs `<app>-<store>-changelog` and its repartition topics
# `<app>-<op>-repartition`. Deleting from any of them loses state the application cannot
# rebuild (a schema id, a connector's position, a store's contents).
WELL_KNOWN_INTERNAL = (
    r"_schemas",
    r"_confluent-.*",
    r"(.+-)?connect-(configs|offsets|status)",
    r"(.+-)?(configs|offsets|status)-connect",
    r".+-changelog",
    r".+-repartition",
)

BINDING_FIELDS: Shape = {
    "clusterId": None,
    "connection": {"bootstrapServers": None, "clientConfigSecret": None, "strimzi": STRIMZI_FIELDS},
    "tenants": {"namespaces": None, "namespaceSelector": {"matchLabels": None}, "operations": None},
    "topics": {"allow": None, "protect": None, "protectWellKnownInternal": None},
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
    namespaces: frozenset[str]
    selector: tuple[tuple[str, str], ...]  # every label must match; () matches nothing
    operations: frozenset[Operation]

    def admits(self, namespace: str, namespace_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces:
            return True
        if not self.selector or namespace_labels is None:
            return False
        return all(namespace_labels.get(k) == v for k, v in self.selector)


@dataclass(frozen=True)
class Binding:
    name: str
    cluster_id: str
    connection: ClusterRef  # secret and Strimzi objects live where the binding says
    tenants: tuple[Tenant, ...]
    allow: tuple[str, ...] = ()  # patterns; () allows every unprotected topic
    protect: tuple[str, ...] = ()
    brokers: specs.BrokerAccess | None = None  # spec.brokers
    min_removal_delay_ms: int = DEFAULT_MIN_REMOVAL_DELAY_MS
    min_orphan_age_ms: int = DEFAULT_MIN_ORPHAN_AGE_MS
    partitions_per_purge: int = DEFAULT_PARTITIONS_PER_PURGE
    policies_per_namespace: int = DEFAULT_POLICIES_PER_NAMESPACE

    def operations(
        self, namespace: str, namespace_labels: Mapping[str, str] | None
    ) -> frozenset[Operation] | None:
        """What the first tenant entry admitting the namespace allows; None: not admitted."""
        for tenant in self.tenants:
            if tenant.admits(namespace, namespace_labels):
                return tenant.operations
        return None

    def needs_labels(self) -> bool:
        """Whether any tenant admits by selector (then the namespace's labels are read)."""
        return any(t.selector for t in self.tenants)

    def topic_refusal(self, topic: str) -> str | None:
        """Why a tenant may not touch `topic`, or None when it may."""
        if topic.startswith("__"):
            return f"topic {topic} is internal; no binding lets a tenant touch it"
        pattern = first_match(self.protect, topic)
        if pattern is not None:
            return f"topic {topic} is protected by binding {self.name} ({pattern})"
        if self.allow and first_match(self.allow, topic) is None:
            return f"topic {topic} is not among the topics binding {self.name} allows"
        return None


def parse_binding(name: str, spec: Any) -> Binding:
    """A binding's spec; SpecError names the field (as spec.<field>) of a broken one."""
    spec = obj(spec, "spec")
    known_fields(spec, BINDING_FIELDS, "spec")
    cluster_id = text(spec.get("clusterId"), "spec.clusterId")
    allow, protect = _topics(obj(spec.get("topics"), "spec.topics"))
    floors = obj(spec.get("orphanCleanup"), "spec.orphanCleanup")
    limits = obj(spec.get("limits"), "spec.limits")
    return Binding(
        name=name,
        cluster_id=cluster_id,
        connection=_connection(obj(spec.get("connection"), "spec.connection")),
        tenants=_tenants(spec.get("tenants")),
        allow=allow,
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
        tenants.append(Tenant(frozenset(spaces), pairs, chosen))
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


def _topics(raw: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    protect = _patterns(raw.get("protect"), "spec.topics.protect")
    well_known = raw.get("protectWellKnownInternal", True)
    if not isinstance(well_known, bool):
        raise SpecError("spec.topics.protectWellKnownInternal", "must be true or false")
    if well_known:
        protect = (*WELL_KNOWN_INTERNAL, *protect)
    return _patterns(raw.get("allow"), "spec.topics.allow"), protect


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
