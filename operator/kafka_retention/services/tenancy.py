"""Which cluster, topics and broker pods a namespaced resource may act on.

Every RecordPurge, RetentionPolicy and RecordErasure passes here before anything is
contacted: under strict tenancy (the default) its spec.cluster may only name a
KafkaClusterBinding, the binding must admit the resource's namespace for the operation,
and every topic the spec names must be one the binding allows. Only then is the
binding's connection resolved (its Secret in the operator's own namespace), and every
connection must answer with the binding's cluster id. What the binding says replaces what
a tenant could otherwise type: the connection, the broker pods and their access, the
topic filter.

Refusals name the spec field and leave the objects untouched: no Kafka connection, no
Secret read, no exec happens for a refused resource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from kafka_retention.core.bindings import (
    Binding,
    BindingUnavailable,
    Grant,
    Operation,
    parse_binding,
    strict_refusal,
)
from kafka_retention.core.conditions import Reason
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.core.policy_spec import OrphanSpec, PolicySpec, TopicSelector
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.specs import BrokerAccess, ClusterRef, SpecError

__all__ = ["BindingUnavailable", "ClusterIdMismatch", "Refused", "Tenancy", "check_cluster_id"]

Mode = Literal["strict", "open"]
MODES: tuple[Mode, ...] = ("strict", "open")


class NamesTopics(Protocol):
    """A request that names its cluster and topics (a purge's, an erasure's)."""

    @property
    def cluster(self) -> ClusterRef: ...

    def named_topics(self) -> list[tuple[str, str]]:
        """(spec field, topic) of every topic it names."""
        ...


class Refused(Exception):
    """The resource may not do what its spec asks; `field` names the spec field. Nothing
    was contacted."""

    def __init__(self, field: str, reason: Reason, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = reason
        self.message = message

    def as_spec_error(self) -> SpecError:
        return SpecError(self.field, self.message)


class ClusterIdMismatch(RuntimeError):
    """The cluster the binding's connection reached gave another id than the binding's:
    nothing is done on it."""

    reason = Reason.CLUSTER_ID_MISMATCH


def check_cluster_id(binding: str | None, expected: str | None, actual: str | None) -> None:
    if expected is not None and actual != expected:
        raise ClusterIdMismatch(
            f"the cluster reached through KafkaClusterBinding {binding} says its id is "
            f"{actual!r}, not the binding's clusterId {expected!r}; nothing is done on it"
        )


def _no_inline(namespace: str, ref: ClusterRef) -> tuple[str, dict[str, str]]:
    raise LookupError("no resolver for a cluster named inline was given")


@dataclass(frozen=True)
class Tenancy:
    """The operator's tenancy rule and how it reads what an administrator bound.

    `read_binding(name)`: the KafkaClusterBinding object, or None if there is none.
    `namespace_labels(name)`: a namespace's labels (read only for bindings that admit
    namespaces by selector), None if it does not exist.
    `resolve(binding)`: its bootstrap servers and client properties (the Secret in the
    operator's namespace, or the Strimzi objects the binding names).
    `resolve_inline(namespace, ref)`: the same for a cluster named inline (open tenancy:
    the Secret in the resource's namespace)."""

    mode: Mode
    read_binding: Callable[[str], Mapping[str, Any] | None]
    namespace_labels: Callable[[str], Mapping[str, str] | None]
    resolve: Callable[[Binding], tuple[str, dict[str, str]]]
    resolve_inline: Callable[[str, ClusterRef], tuple[str, dict[str, str]]] = _no_inline
    # Parsed bindings by name, when this rule reads each binding once (once()).
    parsed: dict[str, Binding] | None = None

    def once(self) -> Tenancy:
        """The same rule reading each binding and namespace at most once: for one batch,
        whose policies (hundreds may share a binding) are admitted at one moment."""
        bindings: dict[str, Mapping[str, Any] | None] = {}
        labels: dict[str, Mapping[str, str] | None] = {}

        def read_binding(name: str) -> Mapping[str, Any] | None:
            if name not in bindings:
                bindings[name] = self.read_binding(name)
            return bindings[name]

        def namespace_labels(name: str) -> Mapping[str, str] | None:
            if name not in labels:
                labels[name] = self.namespace_labels(name)
            return labels[name]

        return Tenancy(
            self.mode, read_binding, namespace_labels, self.resolve, self.resolve_inline, {}
        )

    def check_spec(self, spec: Mapping[str, Any]) -> None:
        """Refuse a cluster named inline under strict tenancy, from the raw spec."""
        if self.mode == "strict":
            refusal = strict_refusal(spec)
            if refusal is not None:
                raise Refused(refusal.field, Reason.NOT_PERMITTED, refusal.message)

    def binding(self, name: str) -> Binding:
        if self.parsed is not None and name in self.parsed:
            return self.parsed[name]
        found = self._parse(name)
        if self.parsed is not None:
            self.parsed[name] = found
        return found

    def _parse(self, name: str) -> Binding:
        raw = self.read_binding(name)
        if raw is None:
            raise BindingUnavailable(
                f"spec.cluster.clusterRef: no KafkaClusterBinding {name} (an administrator "
                "makes it; tried again later)"
            )
        try:
            return parse_binding(name, raw.get("spec"))
        except SpecError as err:
            raise BindingUnavailable(
                f"spec.cluster.clusterRef: KafkaClusterBinding {name} is invalid at {err}"
            ) from None

    def admit(
        self, namespace: str, ref: ClusterRef, needs: Mapping[Operation, str]
    ) -> Grant | None:
        """What the resource's binding grants its namespace, after checking it admits the
        namespace for every operation in `needs` (operation -> the spec field that asks
        for it); None for a cluster named inline under open tenancy."""
        grant = self.grant(namespace, ref)
        if grant is None:
            return None
        for operation, field in needs.items():
            if operation not in grant.operations:
                raise Refused(
                    field,
                    Reason.NOT_PERMITTED,
                    f"KafkaClusterBinding {grant.binding} does not allow {operation} in "
                    f"namespace {namespace}",
                )
        return grant

    def grant(self, namespace: str, ref: ClusterRef) -> Grant | None:
        """The tenant entry the namespace acts under; None for a cluster named inline
        under open tenancy. Refused when the binding does not admit the namespace."""
        if ref.binding is None:
            if self.mode == "strict":
                raise Refused(
                    "spec.cluster.clusterRef", Reason.NOT_PERMITTED, "is required (strict tenancy)"
                )
            return None
        binding = self.binding(ref.binding)
        labels = self.namespace_labels(namespace) if binding.needs_labels() else None
        grant = binding.grant(namespace, labels)
        if grant is None:
            raise Refused(
                "spec.cluster.clusterRef",
                Reason.NOT_PERMITTED,
                f"KafkaClusterBinding {binding.name} does not admit namespace {namespace}",
            )
        return grant

    def admit_topics(
        self,
        namespace: str,
        operation: Operation,
        request: NamesTopics,
        also: Mapping[Operation, str] | None = None,
    ) -> Grant | None:
        """The grant of `operation` (and of the operations in `also`, each with the spec
        field that asks for it) to the namespace, once every topic the spec names is
        within it; None for a cluster named inline under open tenancy."""
        needs: dict[Operation, str] = {operation: "spec.cluster.clusterRef", **(also or {})}
        grant = self.admit(namespace, request.cluster, needs)
        if grant is None:
            return None
        for field, topic in request.named_topics():
            why = grant.topic_refusal(topic)
            if why is not None:
                raise Refused(field, Reason.NOT_PERMITTED, why)
        return grant

    def admit_purge(self, namespace: str, request: PurgeRequest) -> Binding | None:
        grant = self.admit_topics(namespace, "purge", request)
        return None if grant is None else self.binding(grant.binding)

    def admit_erasure(self, namespace: str, request: ErasureRequest) -> Grant | None:
        """The grant a RecordErasure runs under, once its binding allows erase in its
        namespace and every topic it names; None for a cluster named inline under open
        tenancy. The caller selects pattern topics within the grant:
        TopicSelector(names, pattern, allow=grant.allow, protect=grant.all_protect).

        A cut (onDeleteTopics: cut, not a dry run) is DeleteRecords up to a matched
        offset, anywhere in the log: purge's power, so the binding must grant purge too."""
        cuts = request.on_delete_topics == "cut" and not request.dry_run
        also: dict[Operation, str] = {"purge": "spec.onDeleteTopics"} if cuts else {}
        grant = self.admit_topics(namespace, "erase", request, also)
        if grant is None:
            return None
        if request.pattern is not None and not grant.allow:
            # Without an allow list the selector would take every topic the pattern
            # matches: an empty allow grants nothing, so the pattern may match nothing.
            raise Refused(
                "spec.topics",
                Reason.NOT_PERMITTED,
                f"KafkaClusterBinding {grant.binding} grants namespace {namespace} no "
                f"topics ({grant.field}.allow is empty)",
            )
        return grant

    def admit_policy(self, namespace: str, spec: PolicySpec, peers_before: int = 0) -> PolicySpec:
        """The policy as it runs under its binding: its tenant entry's topic filter, the
        binding's brokers and cluster id filled in. `peers_before`: policies of the same
        namespace on the same binding that come before this one (by name), for the quota.

        An entry granting retention lets the policy cut its topics; one granting only
        protect admits a reader's policy that deletes nothing and holds other namespaces'
        cuts back by its deleteConsumed groups (so its time rules and tombstone raises,
        which only delete or change configs, are refused)."""
        needs: dict[Operation, str] = {}
        if spec.orphans is not None:
            needs["orphanCleanup"] = "spec.orphanPartitions"
        grant = self.admit(namespace, spec.cluster, needs)
        if grant is None:
            return spec
        binding = self.binding(grant.binding)
        cuts = True
        if _acts_on_topics(spec):
            cuts = "retention" in grant.operations
            if not cuts and "protect" not in grant.operations:
                raise Refused(
                    "spec.cluster.clusterRef",
                    Reason.NOT_PERMITTED,
                    f"KafkaClusterBinding {binding.name} does not allow retention in "
                    f"namespace {namespace}",
                )
            if not cuts:
                _reader_only(spec, binding.name, namespace)
            if not grant.allow:
                raise Refused(
                    "spec.topics",
                    Reason.NOT_PERMITTED,
                    f"KafkaClusterBinding {binding.name} grants namespace {namespace} no "
                    f"topics ({grant.field}.allow is empty)",
                )
        if peers_before >= binding.policies_per_namespace:
            raise Refused(
                "spec.cluster.clusterRef",
                Reason.QUOTA_EXCEEDED,
                f"KafkaClusterBinding {binding.name} allows {binding.policies_per_namespace} "
                f"RetentionPolicies in namespace {namespace}; this one is past them (by name)",
            )
        for i, topic in enumerate(spec.topics.names):
            why = grant.topic_refusal(topic)
            if why is not None:
                raise Refused(f"spec.topics.names[{i}]", Reason.NOT_PERMITTED, why)
        topics = replace(spec.topics, allow=grant.allow, protect=grant.all_protect)
        orphans = _bound_orphans(binding, grant, spec.orphans)
        return replace(
            spec,
            topics=topics,
            orphans=orphans,
            cluster_id=binding.cluster_id,
            cuts=cuts,
            hold_uncommitted=grant.uncommitted_groups_hold,
        )

    def connection(self, namespace: str, ref: ClusterRef) -> tuple[str, dict[str, str]]:
        """Bootstrap servers and client properties: the binding's for a resource that
        names one, else (open tenancy only) the cluster as the spec names it."""
        if ref.binding is not None:
            return self.resolve(self.binding(ref.binding))
        if self.mode == "strict":
            raise Refused(
                "spec.cluster.clusterRef", Reason.NOT_PERMITTED, "is required (strict tenancy)"
            )
        return self.resolve_inline(namespace, ref)

    def bound_cluster_id(self, namespace: str, ref: ClusterRef) -> str | None:
        """The cluster id of a resource's binding, from the binding alone (no Secret, no
        connection), if the binding admits its namespace at all; else None."""
        if ref.binding is None:
            return None
        try:
            binding = self.binding(ref.binding)
        except BindingUnavailable:
            return None
        labels = self.namespace_labels(namespace) if binding.needs_labels() else None
        return binding.cluster_id if binding.grant(namespace, labels) else None


def _acts_on_topics(spec: PolicySpec) -> bool:
    return spec.rules.acts() or spec.tombstones is not None


def _reader_only(spec: PolicySpec, binding: str, namespace: str) -> None:
    """Refuse what a reader's policy (protect without retention) asks beyond holding: a
    rule whose cut may pass a group's position (the registry's time rules), or the
    tombstone remedy."""
    fields = [rule.field for rule in spec.rules.asked() if rule.passes_groups]
    if spec.tombstones is not None:
        fields.append("spec.tombstones")
    if fields:
        raise Refused(
            fields[0],
            Reason.NOT_PERMITTED,
            f"KafkaClusterBinding {binding} grants namespace {namespace} protect, not "
            "retention: its policies hold other namespaces' cuts back by "
            "spec.deleteConsumed.groups and delete or change nothing",
        )


def _bound_orphans(binding: Binding, grant: Grant, orphans: OrphanSpec | None) -> OrphanSpec | None:
    """The policy's orphan rules with the binding's brokers, refused below its floors, for
    the topics the namespace's entry allows."""
    if orphans is None:
        return None
    if not grant.allow:
        raise Refused(
            "spec.orphanPartitions",
            Reason.NOT_PERMITTED,
            f"KafkaClusterBinding {binding.name} grants this namespace no topics "
            f"({grant.field}.allow is empty)",
        )
    brokers = binding.brokers
    if brokers is None:
        raise Refused(
            "spec.orphanPartitions",
            Reason.NOT_PERMITTED,
            f"KafkaClusterBinding {binding.name} names no brokers (spec.brokers)",
        )
    if orphans.removal_delay_ms < binding.min_removal_delay_ms:
        raise Refused(
            "spec.orphanPartitions.removalDelay",
            Reason.NOT_PERMITTED,
            f"is below the {binding.min_removal_delay_ms} ms floor of KafkaClusterBinding "
            f"{binding.name}",
        )
    if orphans.min_age_ms is not None and orphans.min_age_ms < binding.min_orphan_age_ms:
        raise Refused(
            "spec.orphanPartitions.minAge",
            Reason.NOT_PERMITTED,
            f"is below the {binding.min_orphan_age_ms} ms floor of KafkaClusterBinding "
            f"{binding.name}",
        )
    namespace, labels = brokers.namespace, brokers.match_labels
    strimzi = binding.connection.strimzi
    if brokers.access == "exec" and not labels and strimzi is not None:
        # A Strimzi cluster's broker pods carry its labels, in the Kafka's namespace.
        labels, namespace = strimzi.broker_labels(), namespace or strimzi.namespace
    if brokers.access == "exec" and (not labels or namespace is None):
        raise Refused(
            "spec.orphanPartitions",
            Reason.NOT_PERMITTED,
            f"KafkaClusterBinding {binding.name} spec.brokers needs a namespace and a podSelector",
        )
    access = BrokerAccess(brokers.access, namespace, labels, brokers.container)
    return replace(
        orphans,
        brokers=access,
        min_age_floor_ms=binding.min_orphan_age_ms,
        topics=TopicSelector(allow=grant.allow, protect=grant.all_protect),
    )
