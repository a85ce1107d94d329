"""Strict tenancy's objects: the KafkaClusterBinding that lets tenant namespaces act on a
cluster named by its id."""

from __future__ import annotations

from typing import Any

from tests.helpers.kube import resource


def binding(name: str, cluster_id: str, bootstrap: str, tenant: str, **spec: Any) -> dict[str, Any]:
    """A KafkaClusterBinding of the cluster with this id, reached at `bootstrap`, that
    admits the `tenant` namespace to purge and retention on every topic (spec may say
    otherwise)."""
    tenants = [
        {"namespaces": [tenant], "operations": ["purge", "retention"], "topics": {"allow": [".*"]}}
    ]
    connection = {"bootstrapServers": bootstrap}
    spec = {"clusterId": cluster_id, "connection": connection, "tenants": tenants, **spec}
    return resource("KafkaClusterBinding", name, spec=spec)
