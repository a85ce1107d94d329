"""Small helpers every handler shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

import kopf

from kafka_retention.adapters.kube import ConfigMapStore, StatusWriter
from kafka_retention.adapters.kube_clusters import (
    binding_connection,
    namespace_labels,
    read_binding,
    resolve_cluster,
)
from kafka_retention.config import OperatorConfig
from kafka_retention.core.failures import SecretUnavailable, Unresolved
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.core.resources import API_VERSION
from kafka_retention.core.specs import ClusterRef
from kafka_retention.kube_objects.chunks import set_base
from kafka_retention.kube_objects.owners import Owner
from kafka_retention.services.tenancy import ClusterIdMismatch, Tenancy, check_cluster_id


class _Admin(Protocol):
    def cluster_id(self) -> str: ...


Admin = TypeVar("Admin", bound=_Admin)


@dataclass(frozen=True)
class Created:
    """What Kopf hands the create handler of a one-shot resource (a purge, an erasure),
    for the worker thread that runs it."""

    body: kopf.Body
    spec: kopf.Spec
    status: kopf.Status
    meta: kopf.Meta
    namespace: str
    name: str
    retry: int  # how many times Kopf has retried the handler
    memo: kopf.Memo

    def parts(
        self,
    ) -> tuple[kopf.Body, kopf.Spec, kopf.Status, kopf.Meta, str, str, kopf.Memo]:
        """The fields the worker names, in order (no copies: Kopf's own objects)."""
        return (
            self.body,
            self.spec,
            self.status,
            self.meta,
            self.namespace,
            self.name,
            self.memo,
        )

    @property
    def retry_delay(self) -> float:
        """Seconds before a failed run is tried again: doubling from 5, at most 2 minutes."""
        return min(5.0 * 2.0 ** min(int(self.retry), 5), 120.0)

    def stores(self, plural: str, kind: str) -> tuple[StatusWriter, ConfigMapStore]:
        """The resource's status, and the ConfigMaps it owns for what status cannot hold
        (a purge's plan and results, an erasure's evidence and receipt)."""
        owner = Owner(API_VERSION, kind, self.name, str(self.meta.get("uid")))
        return (
            StatusWriter(plural, self.namespace, self.name),
            ConfigMapStore(self.namespace, set_base(kind, self.name), owner.reference()),
        )

    @property
    def created_at(self) -> datetime | None:
        """metadata.creationTimestamp (whole seconds)."""
        text = self.meta.get("creationTimestamp")
        if not isinstance(text, str):
            return None
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None

    @classmethod
    def of(cls, kwargs: Mapping[str, Any]) -> Created:
        return cls(
            kwargs["body"],
            kwargs["spec"],
            kwargs["status"],
            kwargs["meta"],
            namespaced(kwargs["namespace"]),
            kwargs["name"],
            kwargs["retry"],
            kwargs["memo"],
        )


def namespaced(namespace: str | None) -> str:
    """The object's namespace. The CRDs are namespaced; Kopf types the argument for
    cluster-scoped kinds too."""
    if namespace is None:
        raise kopf.PermanentError("expected a namespaced object")
    return namespace


def purge_ledger(memo: kopf.Memo) -> PurgeLedger:
    """The operator's one ledger of finished RecordPurges: filled by their watch, read by
    policy runs to name a purge as a loss's cause."""
    ledger: PurgeLedger = memo.setdefault("purges", PurgeLedger())
    return ledger


def config(memo: kopf.Memo) -> OperatorConfig:
    cfg: OperatorConfig = memo.get("config") or OperatorConfig()
    return cfg


def tenancy(cfg: OperatorConfig) -> Tenancy:
    """The operator's tenancy rule over the API server's KafkaClusterBindings."""
    return Tenancy(
        cfg.tenancy,
        read_binding,
        namespace_labels,
        binding_connection(cfg.operator_namespace),
        resolve_cluster,
    )


def connect(
    rules: Tenancy,
    namespace: str,
    cluster: ClusterRef,
    make: Callable[[str, dict[str, str]], Admin],
) -> Admin:
    """A Kafka admin client (`make(bootstrap servers, client properties)`) for the
    resource's cluster, once the cluster it reaches has the binding's id. What cannot be
    resolved yet (a Secret, a Strimzi resource, another cluster id) raises
    core.failures.Unresolved, tried again later."""
    try:
        bootstrap, client_config = rules.connection(namespace, cluster)
    except SecretUnavailable as err:  # ClusterUnresolved too: err.reason says which
        raise Unresolved(err.reason, str(err)) from err
    admin = make(bootstrap, client_config)
    if cluster.binding is not None:
        expected = rules.binding(cluster.binding).cluster_id
        try:
            check_cluster_id(cluster.binding, expected, admin.cluster_id())
        except ClusterIdMismatch as err:
            raise Unresolved(err.reason, str(err)) from None
    return admin
