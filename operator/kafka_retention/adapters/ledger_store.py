"""The ledger of erased digests in ConfigMaps of the operator's namespace (where tenants
cannot write): one ConfigMap per cluster, namespace of the erasures and digest-prefix
shard (core/ledger.py), made when a first digest falls in it,

    name         kafka-retention-ledger-<cluster label>-<namespace label>-<shard>
    labels       kafka-retention.io/ledger=<cluster label>,
                 kafka-retention.io/ledger-namespace=<namespace label>,
                 kafka-retention.io/ledger-shard=<shard>
    annotations  kafka-retention.io/ledger-cluster=<the cluster's name>,
                 kafka-retention.io/ledger-namespace=<the namespace>
    data         entries.json

`<cluster label>` is 16 hex characters of the SHA-256 of the cluster's name (a name may
not fit a label), `<namespace label>` 12 of the namespace's (the name stays 55
characters); the annotations and the JSON say the names themselves, and a shard whose
JSON names another cluster, namespace or shard is refused on reading. Writes are
optimistic: a replace names the resourceVersion read, a create fails when the shard
exists; both 409s become LedgerConflict for the service to read, merge and write again.
"""

from __future__ import annotations

from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from kafka_retention.adapters.kube import api_client, refused
from kafka_retention.core.ledger import (
    DATA_KEY,
    SHARD_HEX,
    LedgerConflict,
    LedgerError,
    StoredShard,
    cluster_label,
    decode_shard,
    namespace_label,
)
from kafka_retention.core.resources import GROUP

LEDGER_LABEL = f"{GROUP}/ledger"
NAMESPACE_LABEL = f"{GROUP}/ledger-namespace"
SHARD_LABEL = f"{GROUP}/ledger-shard"
CLUSTER_ANNOTATION = f"{GROUP}/ledger-cluster"
NAMESPACE_ANNOTATION = f"{GROUP}/ledger-namespace"
NAME_PREFIX = "kafka-retention-ledger"
# Shards listed per request.
PAGE = 16
# Shards of one cluster read_all reads at most before refusing: every shard of 256
# namespaces (65,536), or one or a few shards of tens of thousands of namespaces with
# few erasures each. Beyond it the ledger is refused, not read in part: a check that
# left out some namespaces would pass what it never looked at.
MAX_SHARDS = 256 * 16**SHARD_HEX


def shard_name(cluster: str, namespace: str, shard: str) -> str:
    return f"{NAME_PREFIX}-{cluster_label(cluster)}-{namespace_label(namespace)}-{shard}"


class KubeLedger:
    """services.erasure.ledger.LedgerStore over the API server. `api`: a client of the
    CLI's kubeconfig; the operator's own (adapters.kube.api_client) by default."""

    def __init__(self, namespace: str, api: kubernetes.client.ApiClient | None = None) -> None:
        self.namespace = namespace
        self._api = api

    def _client(self) -> kubernetes.client.ApiClient:
        return self._api or api_client()

    def _core(self) -> kubernetes.client.CoreV1Api:
        return kubernetes.client.CoreV1Api(self._client())

    def _plain(self, obj: Any) -> Any:
        """A client model as plain dicts, by this store's client (the CLI's kubeconfig
        may be all there is: adapters.kube.plain would load the operator's)."""
        return self._client().sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]

    def read(self, cluster: str, namespace: str, shard: str) -> StoredShard | None:
        try:
            found = self._core().read_namespaced_config_map(
                shard_name(cluster, namespace, shard), self.namespace
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise refused(exc) from exc
        return _stored(cluster, namespace, shard, self._plain(found))

    def write(
        self, cluster: str, namespace: str, shard: str, payload: str, version: str | None
    ) -> None:
        name = shard_name(cluster, namespace, shard)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    LEDGER_LABEL: cluster_label(cluster),
                    NAMESPACE_LABEL: namespace_label(namespace),
                    SHARD_LABEL: shard,
                    "app.kubernetes.io/managed-by": "kafka-retention",
                },
                "annotations": {CLUSTER_ANNOTATION: cluster, NAMESPACE_ANNOTATION: namespace},
            },
            "data": {DATA_KEY: payload},
        }
        core = self._core()
        try:
            if version is None:
                core.create_namespaced_config_map(self.namespace, body)  # type: ignore[arg-type]
            else:
                body["metadata"]["resourceVersion"] = version
                core.replace_namespaced_config_map(name, self.namespace, body)  # type: ignore[arg-type]
        except ApiException as exc:
            # 409: AlreadyExists on create, Conflict on a stale resourceVersion; 404 on a
            # replace: the shard was deleted since it was read. Read it again, either way.
            if exc.status == 409 or (exc.status == 404 and version is not None):
                raise LedgerConflict(name) from None
            raise refused(exc) from exc

    def read_all(self, cluster: str, namespace: str | None = None) -> list[StoredShard]:
        """Every shard of the cluster's ledger (every namespace's, or only `namespace`'s),
        by namespace and shard, in pages of PAGE objects (a shard may hold near 1 MiB: one
        answer of all 256 would be a few hundred MB). More than MAX_SHARDS is refused."""
        core = self._core()
        selector = f"{LEDGER_LABEL}={cluster_label(cluster)}"
        if namespace is not None:
            selector += f",{NAMESPACE_LABEL}={namespace_label(namespace)}"
        out: list[StoredShard] = []
        token: str | None = None
        while True:
            try:
                found = self._plain(
                    core.list_namespaced_config_map(
                        self.namespace,
                        label_selector=selector,
                        limit=PAGE,
                        _continue=token,
                    )
                )
            except ApiException as exc:
                raise refused(exc) from exc
            for cm in found["items"]:
                meta = cm["metadata"]
                labels = meta.get("labels") or {}
                shard = str(labels.get(SHARD_LABEL, ""))
                ns = str((meta.get("annotations") or {}).get(NAMESPACE_ANNOTATION, ""))
                if (
                    not ns
                    or (namespace is not None and ns != namespace)
                    or labels.get(NAMESPACE_LABEL) != namespace_label(ns)
                    or meta["name"] != shard_name(cluster, ns, shard)
                ):
                    # Only this module names shards: another object with the label (or a
                    # shard of the layout before namespaces) is refused rather than read
                    # as (or instead of) a shard.
                    raise LedgerError(f"ConfigMap {meta['name']} is labelled as a ledger shard")
                out.append(_stored(cluster, ns, shard, cm))
            if len(out) > MAX_SHARDS:
                raise LedgerError(
                    f"more than {MAX_SHARDS} ConfigMaps are labelled as shards of the ledger "
                    f"of cluster {cluster}"
                )
            token = (found.get("metadata") or {}).get("continue")
            if not token:
                return sorted(out, key=lambda s: (s.namespace, s.shard))


def _stored(cluster: str, namespace: str, shard: str, cm: dict[str, Any]) -> StoredShard:
    meta = cm["metadata"]
    text = (cm.get("data") or {}).get(DATA_KEY)
    if not isinstance(text, str):
        raise LedgerError(f"ConfigMap {meta['name']} has no {DATA_KEY}")
    entries = decode_shard(cluster, namespace, shard, text)
    return StoredShard(namespace, shard, tuple(entries), str(meta["resourceVersion"]))
