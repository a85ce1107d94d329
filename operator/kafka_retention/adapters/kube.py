"""The Kubernetes API adapter, through the official client: status writes, the objects of
Spark runs and the ConfigMaps plans are stored in, finalizers and Kopf's peering objects.
Commands in pods are in kube_exec, how a cluster is reached (Secrets, Strimzi, bindings)
in kube_clusters.

Kopf patches status only when a handler returns; a purge writes its plan *before* it
deletes anything, so that a restart finds it, and that write has to happen now.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

__all__ = ["ApiException"]

from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.resources import GROUP, VERSION
from kafka_retention.kube_objects import chunks

log = logging.getLogger(__name__)
_lock = threading.Lock()
_api: kubernetes.client.ApiClient | None = None


def api_client() -> kubernetes.client.ApiClient:
    global _api
    with _lock:
        if _api is None:
            try:
                kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
            except kubernetes.config.ConfigException:
                kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=os.environ.get("KUBECONFIG")
                )
            _api = kubernetes.client.ApiClient()
        return _api


def plain(obj: Any) -> Any:
    """A client model as the plain dicts the API speaks."""
    return api_client().sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]


class StatusWriter:
    """Merge-patches the status subresource of one namespaced custom object."""

    def __init__(self, plural: str, namespace: str, name: str) -> None:
        self.plural, self.namespace, self.name = plural, namespace, name

    def patch(self, status: Mapping[str, Any]) -> None:
        """A refusal raises WriteRefused (a deleted object too: status 404)."""
        api = kubernetes.client.CustomObjectsApi(api_client())
        try:
            api.patch_namespaced_custom_object_status(
                GROUP, VERSION, self.namespace, self.plural, self.name, {"status": dict(status)}
            )
        except ApiException as exc:
            raise refused(exc) from exc


def refused(exc: ApiException) -> WriteRefused:
    """The client's exception as the core's: the services name the cause from it."""
    return WriteRefused(int(exc.status or 0), str(exc.reason or ""), str(exc.body or ""))


# --- objects of Spark runs (kubernetes and spark-operator modes) ----------------------


def create_or_keep(obj: Mapping[str, Any]) -> bool:
    """Create a namespaced ConfigMap or custom object; False when it already exists (runs
    have deterministic names, so a second submit finds the first one's objects)."""
    meta = obj["metadata"]
    try:
        if obj["kind"] == "ConfigMap":
            # The client accepts plain dicts as well as its models.
            kubernetes.client.CoreV1Api(api_client()).create_namespaced_config_map(
                meta["namespace"],
                dict(obj),  # type: ignore[arg-type]
            )
        else:
            group, version = obj["apiVersion"].split("/")
            plural = obj["kind"].lower() + "s"
            kubernetes.client.CustomObjectsApi(api_client()).create_namespaced_custom_object(
                group, version, meta["namespace"], plural, dict(obj)
            )
    except ApiException as exc:
        if exc.status == 409:
            return False
        raise
    return True


def _found(read: Callable[[], Any]) -> dict[str, Any] | None:
    """An object as plain dicts, or None when the API server has no such object."""
    try:
        obj = read()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    result: dict[str, Any] = obj if isinstance(obj, dict) else plain(obj)
    return result


def read_pod(namespace: str, name: str) -> dict[str, Any] | None:
    core = kubernetes.client.CoreV1Api(api_client())
    return _found(lambda: core.read_namespaced_pod(name, namespace))


def delete_pod(namespace: str, name: str) -> None:
    """Delete a pod; one already gone is fine. Its dependents (a Spark driver's executors
    and service) go with it through their owner references."""
    core = kubernetes.client.CoreV1Api(api_client())
    try:
        core.delete_namespaced_pod(name, namespace, propagation_policy="Background")
    except ApiException as exc:
        if exc.status != 404:
            raise


def read_custom_object(
    api_version: str, plural: str, namespace: str, name: str
) -> dict[str, Any] | None:
    group, version = api_version.split("/")
    custom = kubernetes.client.CustomObjectsApi(api_client())
    return _found(
        lambda: custom.get_namespaced_custom_object(group, version, namespace, plural, name)
    )


def delete_custom_object(api_version: str, plural: str, namespace: str, name: str) -> None:
    """Delete a namespaced custom object; one already gone is fine."""
    group, version = api_version.split("/")
    custom = kubernetes.client.CustomObjectsApi(api_client())
    try:
        custom.delete_namespaced_custom_object(group, version, namespace, plural, name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def read_configmap(namespace: str, name: str) -> dict[str, Any] | None:
    core = kubernetes.client.CoreV1Api(api_client())
    return _found(lambda: core.read_namespaced_config_map(name, namespace))


def list_configmaps(
    namespace: str, label_selector: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """ConfigMaps by label; with `limit`, at most that many (the API server pages)."""
    found = kubernetes.client.CoreV1Api(api_client()).list_namespaced_config_map(
        namespace, label_selector=label_selector, limit=limit
    )
    return [plain(cm) for cm in found.items]


def read_configmap_set(namespace: str, base: str, suffix: str) -> str | None:
    """A chunked set's payload (kube_objects.chunks), checked; None until its manifest
    exists. The manifest's part count is checked against the limits first, and no more
    than one part beyond it is listed: a namespace full of forged parts is not read."""
    manifest = read_configmap(namespace, f"{base}-{suffix}")
    if manifest is None:
        return None
    wanted = chunks.expected_parts(manifest)
    parts = list_configmaps(namespace, chunks.parts_selector(base, suffix), limit=wanted + 1)
    return chunks.assemble(manifest, parts)


def delete_configmaps(namespace: str, label_selector: str) -> None:
    kubernetes.client.CoreV1Api(api_client()).delete_collection_namespaced_config_map(
        namespace, label_selector=label_selector
    )


def write_configmap(obj: Mapping[str, Any]) -> None:
    """Create a ConfigMap, or replace the one of that name (a run rewriting its output)."""
    meta = obj["metadata"]
    core = kubernetes.client.CoreV1Api(api_client())
    try:
        core.create_namespaced_config_map(meta["namespace"], dict(obj))  # type: ignore[arg-type]
    except ApiException as exc:
        if exc.status != 409:
            raise
        core.replace_namespaced_config_map(
            meta["name"],
            meta["namespace"],
            dict(obj),  # type: ignore[arg-type]
        )


class ConfigMapStore:
    """Payloads too large for status, kept in checksummed, gzipped ConfigMaps owned by the
    object they belong to (so they go when it goes): `<base>-<suffix>-NNNN`, then the
    manifest `<base>-<suffix>`, written last."""

    def __init__(self, namespace: str, base: str, owner: Mapping[str, Any] | None) -> None:
        self.namespace, self.base, self.owner = namespace, base, owner

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        """Write the set (replacing an older one of that suffix); returns its reference. A
        refusal raises WriteRefused."""
        try:
            return self._save(suffix, payload)
        except ApiException as exc:
            raise refused(exc) from exc

    def _save(self, suffix: str, payload: str) -> dict[str, Any]:
        core = kubernetes.client.CoreV1Api(api_client())
        core.delete_collection_namespaced_config_map(
            self.namespace,
            label_selector=f"{chunks.RUN_LABEL}={self.base},{chunks.SET_LABEL}={suffix}",
        )
        objects = chunks.sink_configmaps(
            self.base, self.namespace, payload, self.owner, suffix=suffix, compress=True
        )
        for obj in objects:  # parts first, the manifest last
            write_configmap(obj)
        info = json.loads(objects[-1]["data"]["manifest.json"])
        return {
            "configMap": objects[-1]["metadata"]["name"],
            "chunks": info["chunks"],
            "bytes": info["bytes"],
            "sha256": info["sha256"],
        }

    def load(self, suffix: str) -> str | None:
        """The set's payload, checked against its manifest; None when there is none."""
        return read_configmap_set(self.namespace, self.base, suffix)


def drop_finalizer(plural: str, namespace: str, name: str, finalizer: str) -> None:
    """Remove one finalizer from a custom object (a JSON patch on that list entry only)."""
    api = kubernetes.client.CustomObjectsApi(api_client())
    obj: dict[str, Any] = api.get_namespaced_custom_object(  # type: ignore[assignment]
        GROUP, VERSION, namespace, plural, name
    )
    finalizers = list((obj.get("metadata") or {}).get("finalizers") or [])
    if finalizer not in finalizers:
        return
    index = finalizers.index(finalizer)
    api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        plural,
        name,
        [
            {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
            {"op": "remove", "path": f"/metadata/finalizers/{index}"},
        ],
    )


PEERING_GROUP, PEERING_VERSION = "kopf.dev", "v1"


def read_peering(name: str, namespace: str | None) -> dict[str, Any] | None:
    """Kopf's peering object: ClusterKopfPeering without a namespace, else KopfPeering."""
    custom = kubernetes.client.CustomObjectsApi(api_client())
    if namespace is None:
        return _found(
            lambda: custom.get_cluster_custom_object(
                PEERING_GROUP, PEERING_VERSION, "clusterkopfpeerings", name
            )
        )
    return _found(
        lambda: custom.get_namespaced_custom_object(
            PEERING_GROUP, PEERING_VERSION, namespace, "kopfpeerings", name
        )
    )


def ensure_peering(name: str, namespace: str | None) -> None:
    """Create the peering object unless it exists: Kopf only writes into one."""
    custom = kubernetes.client.CustomObjectsApi(api_client())
    kind = "ClusterKopfPeering" if namespace is None else "KopfPeering"
    body = {
        "apiVersion": f"{PEERING_GROUP}/{PEERING_VERSION}",
        "kind": kind,
        "metadata": {"name": name},
    }
    try:
        if namespace is None:
            custom.create_cluster_custom_object(
                PEERING_GROUP, PEERING_VERSION, "clusterkopfpeerings", body
            )
        else:
            custom.create_namespaced_custom_object(
                PEERING_GROUP, PEERING_VERSION, namespace, "kopfpeerings", body
            )
    except ApiException as exc:
        if exc.status != 409:
            raise


def list_custom_objects(plural: str, namespace: str | None) -> list[dict[str, Any]]:
    """Every object of one of this project's kinds, in one namespace or all of them."""
    custom = kubernetes.client.CustomObjectsApi(api_client())
    if namespace is None:
        answer = custom.list_cluster_custom_object(GROUP, VERSION, plural)
    else:
        answer = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
    items: list[dict[str, Any]] = (answer if isinstance(answer, dict) else {}).get("items") or []
    return items
