"""The ledger of erased digests in ConfigMaps of the operator's namespace (where tenants
cannot write): one ConfigMap per cluster and digest-prefix shard (core/ledger.py),

    name         kafka-retention-ledger-<cluster label>-<shard>
    labels       kafka-retention.io/ledger=<cluster label>, kafka-retention.io/ledger-shard
    annotation   kafka-retention.io/ledger-cluster=<the cluster's name>
    data         entries.json

`<cluster label>` is 16 hex characters of the SHA-256 of the cluster's name (a name may
not fit a label); the annotation and the JSON say the name itself, and a shard whose
JSON names another cluster is refused on reading. Writes are optimistic: a replace names
the resourceVersion read, a create fails when the shard exists; both 409s become
LedgerConflict for the service to read, merge and write again.
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
)
from kafka_retention.core.resources import GROUP

LEDGER_LABEL = f"{GROUP}/ledger"
SHARD_LABEL = f"{GROUP}/ledger-shard"
CLUSTER_ANNOTATION = f"{GROUP}/ledger-cluster"
NAME_PREFIX = "kafka-retention-ledger"
# Shards listed per request, and at most (256 exist: a name check refuses any other).
PAGE = 16
MAX_SHARDS = 16**SHARD_HEX


def shard_name(cluster: str, shard: str) -> str:
    return f"{NAME_PREFIX}-{cluster_label(cluster)}-{shard}"


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

    def read(self, cluster: str, shard: str) -> StoredShard | None:
        try:
            found = self._core().read_namespaced_config_map(
                shard_name(cluster, shard), self.namespace
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise refused(exc) from exc
        return _stored(cluster, shard, self._plain(found))

    def write(self, cluster: str, shard: str, payload: str, version: str | None) -> None:
        name = shard_name(cluster, shard)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    LEDGER_LABEL: cluster_label(cluster),
                    SHARD_LABEL: shard,
                    "app.kubernetes.io/managed-by": "kafka-retention",
                },
                "annotations": {CLUSTER_ANNOTATION: cluster},
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

    def read_all(self, cluster: str) -> list[StoredShard]:
        """Every shard of the cluster's ledger, by shard, in pages of PAGE objects (a shard
        may hold near 1 MiB: one answer of all 256 would be a few hundred MB)."""
        core = self._core()
        out: list[StoredShard] = []
        token: str | None = None
        while True:
            try:
                found = self._plain(
                    core.list_namespaced_config_map(
                        self.namespace,
                        label_selector=f"{LEDGER_LABEL}={cluster_label(cluster)}",
                        limit=PAGE,
                        _continue=token,
                    )
                )
            except ApiException as exc:
                raise refused(exc) from exc
            for cm in found["items"]:
                meta = cm["metadata"]
                shard = str((meta.get("labels") or {}).get(SHARD_LABEL, ""))
                if meta["name"] != shard_name(cluster, shard):
                    # Only this module names shards: another object with the label is
                    # refused rather than read as (or instead of) a shard.
                    raise LedgerError(f"ConfigMap {meta['name']} is labelled as a ledger shard")
                out.append(_stored(cluster, shard, cm))
            if len(out) > MAX_SHARDS:
                raise LedgerError(f"more than {MAX_SHARDS} ConfigMaps are labelled as shards")
            token = (found.get("metadata") or {}).get("continue")
            if not token:
                return sorted(out, key=lambda s: s.shard)


def _stored(cluster: str, shard: str, cm: dict[str, Any]) -> StoredShard:
    meta = cm["metadata"]
    text = (cm.get("data") or {}).get(DATA_KEY)
    if not isinstance(text, str):
        raise LedgerError(f"ConfigMap {meta['name']} has no {DATA_KEY}")
    entries = decode_shard(cluster, shard, text)
    return StoredShard(shard, tuple(entries), str(meta["resourceVersion"]))
