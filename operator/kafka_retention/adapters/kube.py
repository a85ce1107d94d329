"""The Kubernetes API adapter: status writes and Secret reads through the official client.

Kopf patches status only when a handler returns; a purge writes its plan *before* it
deletes anything, so that a restart finds it, and that write has to happen now.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from kafka_retention.core.resources import GROUP, VERSION

_lock = threading.Lock()
_api: kubernetes.client.ApiClient | None = None


class SecretUnavailable(LookupError):
    """The clientConfigSecret is missing or unreadable."""


def _client() -> kubernetes.client.ApiClient:
    global _api
    with _lock:
        if _api is None:
            try:
                kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
            except kubernetes.config.ConfigException:
                kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
            _api = kubernetes.client.ApiClient()
        return _api


class StatusWriter:
    """Merge-patches the status subresource of one namespaced custom object."""

    def __init__(self, plural: str, namespace: str, name: str) -> None:
        self.plural, self.namespace, self.name = plural, namespace, name

    def patch(self, status: Mapping[str, Any]) -> None:
        api = kubernetes.client.CustomObjectsApi(_client())
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, self.namespace, self.plural, self.name, {"status": dict(status)}
        )


def read_client_config(namespace: str, name: str) -> dict[str, str]:
    """librdkafka properties from a Secret's keys. Values are secrets: never log them."""
    core = kubernetes.client.CoreV1Api(_client())
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        raise SecretUnavailable(
            f"Secret {namespace}/{name} (spec.cluster.clientConfigSecret): {exc.reason}"
        ) from None
    data = secret.data or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}
