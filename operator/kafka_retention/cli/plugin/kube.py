"""The plugin's way to the API server: the kubeconfig and context kubectl would use (or the
ones --kubeconfig and --context name), and the few calls the subcommands make, with the
API server's refusals turned into sentences."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import kubernetes
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from kafka_retention.core.resources import GROUP, VERSION
from kafka_retention.kube_objects import chunks


class PluginError(Exception):
    """Something the user can act on went wrong; the plugin says it and exits 1."""


@dataclass
class Cluster:
    """One API server, as the kubeconfig's context reaches it, and the namespace that
    context defaults to."""

    api: kubernetes.client.ApiClient
    namespace: str

    @property
    def custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self.api)

    def list(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        """Every object of one of the project's kinds, in a namespace or (None) all."""
        with answers(f"listing {plural}"):
            if namespace is None:
                found = self.custom.list_cluster_custom_object(GROUP, VERSION, plural)
            else:
                found = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
        items: list[dict[str, Any]] = cast(dict[str, Any], found).get("items") or []
        return items

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when there is none of that name."""
        try:
            with answers(f"reading {plural}/{name}", missing_ok=True):
                found = self.custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, name
                )
                return cast(dict[str, Any], found)
        except _Missing:
            return None

    def create(self, plural: str, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        with answers(f"creating a {plural[:-1]} in namespace {namespace}"):
            made = self.custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, dict(body)
            )
        return cast(dict[str, Any], made)

    def delete(self, plural: str, namespace: str, name: str) -> None:
        """Delete the object (its owned ConfigMaps go with it); one already gone is fine."""
        try:
            with answers(f"deleting {plural}/{name}", missing_ok=True):
                self.custom.delete_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, name, propagation_policy="Background"
                )
        except _Missing:
            return

    def configmap_set(self, namespace: str, base: str, suffix: str) -> str | None:
        """A chunked payload the operator stored (kube_objects.chunks), checked against its
        manifest; None when the manifest does not exist."""
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            with answers(f"reading configmap {base}-{suffix}", missing_ok=True):
                manifest = self.api.sanitize_for_serialization(  # type: ignore[no-untyped-call]
                    core.read_namespaced_config_map(f"{base}-{suffix}", namespace)
                )
        except _Missing:
            return None
        try:
            wanted = chunks.expected_parts(manifest)
            with answers(f"listing the parts of {base}-{suffix}"):
                parts = core.list_namespaced_config_map(
                    namespace, label_selector=chunks.parts_selector(base, suffix), limit=wanted + 1
                )
            return chunks.assemble(
                manifest,
                self.api.sanitize_for_serialization(  # type: ignore[no-untyped-call]
                    parts
                )["items"],
            )
        except chunks.SinkError as err:
            raise PluginError(f"configmaps {base}-{suffix}* cannot be read: {err}") from None


class _Missing(Exception):
    pass


@contextmanager
def answers(doing: str, *, missing_ok: bool = False) -> Iterator[None]:
    """Around one API call: its refusal (or no answer at all) becomes a PluginError saying
    what was being done and what the API server said; with `missing_ok`, a 404 becomes
    _Missing for the caller to take as "none"."""
    try:
        yield
    except ApiException as exc:
        if exc.status == 404 and missing_ok:
            raise _Missing from None
        raise PluginError(f"{doing}: {api_message(exc)}") from None
    except HTTPError as exc:
        raise PluginError(f"{doing}: the API server did not answer ({exc})") from None


def api_message(exc: ApiException) -> str:
    """What the API server said, from its Status body when there is one."""
    try:
        body = json.loads(exc.body or "")
        message = body.get("message") if isinstance(body, dict) else None
    except ValueError:
        message = None
    if exc.status == 404 and "could not find the requested resource" in str(message or ""):
        message = (
            "the API server does not serve the kafka-retention.io resources "
            "(are the CRDs installed?)"
        )
    return f"{message or exc.reason} (HTTP {exc.status})"


def connect(kubeconfig: str | None, context: str | None) -> Cluster:
    """The API server of the context kubectl would use (or `context`), from the kubeconfig
    kubectl would read (or `kubeconfig`), and that context's default namespace."""
    conf = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig,
            context=context,
            client_configuration=conf,
            persist_config=False,
        )
        contexts, current = kubernetes.config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            kubeconfig
        )
    except (kubernetes.config.ConfigException, OSError, ValueError) as err:
        where = kubeconfig or "the kubeconfig ($KUBECONFIG or ~/.kube/config)"
        raise PluginError(f"cannot use {where}: {err}") from None
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
    namespace = ((chosen or {}).get("context") or {}).get("namespace") or "default"
    # One try, not urllib3's three: a wrong server should fail in seconds.
    conf.retries = 1
    return Cluster(kubernetes.client.ApiClient(conf), namespace)
