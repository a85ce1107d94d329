"""Small helpers every handler shares."""

from __future__ import annotations

import kopf

from kafka_retention.adapters.kube_clusters import (
    binding_connection,
    namespace_labels,
    read_binding,
    resolve_cluster,
)
from kafka_retention.config import OperatorConfig
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.services.tenancy import Tenancy


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
