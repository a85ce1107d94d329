"""The Kubernetes API adapter: status writes and Secret reads through the official client.

Kopf patches status only when a handler returns; a purge writes its plan *before* it
deletes anything, so that a restart finds it, and that write has to happen now.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

__all__ = ["ApiException"]

from kafka_retention.core.bindings import Binding, BindingUnavailable
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import ExecFailed, SecretUnavailable
from kafka_retention.core.resources import GROUP, KAFKA_CLUSTER_BINDINGS, VERSION
from kafka_retention.core.specs import ClusterRef, labels
from kafka_retention.core.strimzi import (
    StrimziError,
    StrimziObjects,
    StrimziRef,
    ca_secret_name,
    check_consent,
    user_secret_name,
)
from kafka_retention.core.strimzi import connection as strimzi_connection
from kafka_retention.kube_objects import chunks

log = logging.getLogger(__name__)
_lock = threading.Lock()
_api: kubernetes.client.ApiClient | None = None


def _client() -> kubernetes.client.ApiClient:
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


def _plain(obj: Any) -> Any:
    """A client model as the plain dicts the API speaks."""
    return _client().sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]


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
    """librdkafka properties from a Secret: its keys, and a Java properties file in key
    client.properties, with the stores they name (core/client_config.py says how).
    Values are secrets: never log them."""
    from kafka_retention.adapters.keystores import Stores
    from kafka_retention.core import client_config

    core = kubernetes.client.CoreV1Api(_client())
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        raise SecretUnavailable(
            f"Secret {namespace}/{name} (spec.cluster.clientConfigSecret): {exc.reason}"
        ) from None
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    try:
        props = client_config.secret_properties(data)
        stores = Stores(lambda prop, location: client_config.secret_file(data, prop, location))
        config = client_config.to_librdkafka(props, stores)
        client_config.refuse_local_resources(config)
        return config
    except client_config.ClientPropertyError as exc:
        # Not a missing Secret, but the same remedy: the user fixes it, the next run reads it.
        raise SecretUnavailable(
            f"Secret {namespace}/{name} (spec.cluster.clientConfigSecret): {exc}"
        ) from None
    except (ValueError, IndexError, TypeError) as exc:
        # A store the parsers could not make sense of (truncated DER, an unknown key
        # algorithm): the same remedy. The type only: a message could quote the bytes.
        raise SecretUnavailable(
            f"Secret {namespace}/{name} (spec.cluster.clientConfigSecret): a key or trust "
            f"store could not be read ({type(exc).__name__})"
        ) from None


# --- objects of Spark runs (kubernetes and spark-operator modes) ----------------------


def create_or_keep(obj: Mapping[str, Any]) -> bool:
    """Create a namespaced ConfigMap or custom object; False when it already exists (runs
    have deterministic names, so a second submit finds the first one's objects)."""
    meta = obj["metadata"]
    try:
        if obj["kind"] == "ConfigMap":
            # The client accepts plain dicts as well as its models.
            kubernetes.client.CoreV1Api(_client()).create_namespaced_config_map(
                meta["namespace"],
                dict(obj),  # type: ignore[arg-type]
            )
        else:
            group, version = obj["apiVersion"].split("/")
            plural = obj["kind"].lower() + "s"
            kubernetes.client.CustomObjectsApi(_client()).create_namespaced_custom_object(
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
    result: dict[str, Any] = obj if isinstance(obj, dict) else _plain(obj)
    return result


def read_pod(namespace: str, name: str) -> dict[str, Any] | None:
    core = kubernetes.client.CoreV1Api(_client())
    return _found(lambda: core.read_namespaced_pod(name, namespace))


def delete_pod(namespace: str, name: str) -> None:
    """Delete a pod; one already gone is fine. Its dependents (a Spark driver's executors
    and service) go with it through their owner references."""
    core = kubernetes.client.CoreV1Api(_client())
    try:
        core.delete_namespaced_pod(name, namespace, propagation_policy="Background")
    except ApiException as exc:
        if exc.status != 404:
            raise


def read_custom_object(
    api_version: str, plural: str, namespace: str, name: str
) -> dict[str, Any] | None:
    group, version = api_version.split("/")
    custom = kubernetes.client.CustomObjectsApi(_client())
    return _found(
        lambda: custom.get_namespaced_custom_object(group, version, namespace, plural, name)
    )


def read_configmap(namespace: str, name: str) -> dict[str, Any] | None:
    core = kubernetes.client.CoreV1Api(_client())
    return _found(lambda: core.read_namespaced_config_map(name, namespace))


def list_configmaps(namespace: str, label_selector: str) -> list[dict[str, Any]]:
    items = (
        kubernetes.client.CoreV1Api(_client())
        .list_namespaced_config_map(namespace, label_selector=label_selector)
        .items
    )
    return [_plain(cm) for cm in items]


def delete_configmaps(namespace: str, label_selector: str) -> None:
    kubernetes.client.CoreV1Api(_client()).delete_collection_namespaced_config_map(
        namespace, label_selector=label_selector
    )


def write_configmap(obj: Mapping[str, Any]) -> None:
    """Create a ConfigMap, or replace the one of that name (a run rewriting its output)."""
    meta = obj["metadata"]
    core = kubernetes.client.CoreV1Api(_client())
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
        """Write the set (replacing an older one of that suffix); returns its reference."""
        core = kubernetes.client.CoreV1Api(_client())
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
        manifest = read_configmap(self.namespace, f"{self.base}-{suffix}")
        if manifest is None:
            return None
        parts = list_configmaps(self.namespace, chunks.parts_selector(self.base, suffix))
        return chunks.assemble(manifest, parts)


def drop_finalizer(plural: str, namespace: str, name: str, finalizer: str) -> None:
    """Remove one finalizer from a custom object (a JSON patch on that list entry only)."""
    api = kubernetes.client.CustomObjectsApi(_client())
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


def label_selector(match_labels: Mapping[str, str]) -> str:
    """An equality selector from labels, each key and value checked against Kubernetes'
    label syntax first: joined unchecked, a key `foo!` would become `foo!=bar`."""
    pairs = labels(dict(match_labels), "podSelector.matchLabels")
    if not pairs:
        raise ValueError("an empty selector would choose every pod")
    return ",".join(f"{k}={v}" for k, v in pairs)


def running_pods(namespace: str, match_labels: Mapping[str, str]) -> list[str]:
    """Names of the Running pods with all these labels (the broker pods an orphan check
    execs into), sorted."""
    api = kubernetes.client.CoreV1Api(_client())
    found = api.list_namespaced_pod(namespace, label_selector=label_selector(match_labels))
    return sorted(
        str(p.metadata.name)
        for p in found.items
        if p.metadata and p.status and p.status.phase == "Running"
    )


# The most a command run in a broker pod may print: a listing of one log dir with 50,000
# partition directories is about 5 MiB. Past this the command is cut off and fails.
MAX_EXEC_OUTPUT = 32 * 1024 * 1024


def exec_in_pod(
    namespace: str, pod: str, container: str, argv: list[str], timeout: float = 120.0
) -> str:
    """Run argv (no shell unless argv names one) in a pod's container; its stdout.

    `stream` swaps the client's request function while it runs, so each call gets an
    ApiClient of its own rather than the one status writes share across threads."""
    from kubernetes.stream import stream

    _client()  # loads the configuration once
    core = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient())
    resp = stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        container=container,
        command=argv,
        stdin=False,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
    )
    out: list[str] = []
    err: list[str] = []
    size = 0
    deadline = time.monotonic() + timeout
    try:
        while resp.is_open():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ExecFailed(f"{argv[0]} in {namespace}/{pod} ran past {timeout:.0f}s")
            resp.update(timeout=min(left, 1.0))
            if resp.peek_stdout():
                chunk = resp.read_stdout()
                size += len(chunk)
                out.append(chunk)
            if resp.peek_stderr():
                chunk = resp.read_stderr()
                size += len(chunk)
                err.append(chunk)
            if size > MAX_EXEC_OUTPUT:
                raise ExecFailed(
                    f"{argv[0]} in {namespace}/{pod} printed over {MAX_EXEC_OUTPUT} bytes; cut off"
                )
        out.append(resp.read_stdout())
        err.append(resp.read_stderr())
        code = resp.returncode
    finally:
        resp.close()
    if code != 0:
        log.warning("%s in %s/%s exited %s: %s", argv[0], namespace, pod, code, "".join(err)[:2000])
        raise ExecFailed(
            f"{argv[0]} in {namespace}/{pod} exited {code} (its stderr is in the operator's log)"
        )
    return "".join(out)


PEERING_GROUP, PEERING_VERSION = "kopf.dev", "v1"


def read_peering(name: str, namespace: str | None) -> dict[str, Any] | None:
    """Kopf's peering object: ClusterKopfPeering without a namespace, else KopfPeering."""
    custom = kubernetes.client.CustomObjectsApi(_client())
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
    custom = kubernetes.client.CustomObjectsApi(_client())
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
    custom = kubernetes.client.CustomObjectsApi(_client())
    if namespace is None:
        answer = custom.list_cluster_custom_object(GROUP, VERSION, plural)
    else:
        answer = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)
    items: list[dict[str, Any]] = (answer if isinstance(answer, dict) else {}).get("items") or []
    return items


# --- how to reach a cluster: typed-in bootstrap servers, or a Strimzi reference ------

# Strimzi serves its resources as kafka.strimzi.io/v1 since 0.49 and as v1beta2 before:
# the first one the API server knows is read.
STRIMZI_VERSIONS = ("v1", "v1beta2")


class ClusterUnresolved(SecretUnavailable):
    """spec.cluster.strimzi names objects that are missing or not ready (yet)."""

    reason = Reason.CLUSTER_UNRESOLVED

    def __init__(self, err: StrimziError) -> None:
        super().__init__(str(err))
        self.field = err.field


def _strimzi_object(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    custom = kubernetes.client.CustomObjectsApi(_client())
    for version in STRIMZI_VERSIONS:
        try:
            found: Any = custom.get_namespaced_custom_object(
                "kafka.strimzi.io", version, namespace, plural, name
            )
            return dict(found)
        except ApiException as exc:
            if exc.status != 404:
                raise ClusterUnresolved(
                    StrimziError(
                        "spec.cluster.strimzi",
                        f"cannot read {plural}.kafka.strimzi.io {namespace}/{name}: {exc.reason}",
                    )
                ) from None
    return None


def _secret_data(namespace: str, name: str) -> dict[str, str] | None:
    core = kubernetes.client.CoreV1Api(_client())
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise ClusterUnresolved(
            StrimziError("spec.cluster.strimzi", f"Secret {namespace}/{name}: {exc.reason}")
        ) from None
    return _texts(secret.data or {})


def _texts(data: Mapping[str, str | bytes]) -> dict[str, str]:
    """A Secret's text keys. Strimzi's Secrets also hold binary PKCS12 files (ca.p12,
    user.p12), which nothing here reads: they are left out rather than decoded."""
    texts = {}
    for key, value in data.items():
        try:
            texts[key] = base64.b64decode(value).decode()
        except UnicodeDecodeError:
            continue
    return texts


def read_strimzi(ref: StrimziRef, namespace: str) -> StrimziObjects:
    """The Kafka, its cluster CA and the KafkaUser with its Secret, as Strimzi lays them
    out, from the reference's namespace (the referring resource's by default)."""
    ns = ref.namespace_or(namespace)
    kafka = _strimzi_object("kafkas", ns, ref.kafka)
    if kafka is None:
        raise ClusterUnresolved(
            StrimziError("spec.cluster.strimzi.kafka", f"no Kafka {ns}/{ref.kafka}")
        )
    user = user_secret = None
    if ref.kafka_user is not None:
        user = _strimzi_object("kafkausers", ns, ref.kafka_user)
        if user is None:
            raise ClusterUnresolved(
                StrimziError(
                    "spec.cluster.strimzi.kafkaUser", f"no KafkaUser {ns}/{ref.kafka_user}"
                )
            )
        # The user's namespace must have consented before its credentials are even read.
        try:
            check_consent(ref, user, ns, namespace)
        except StrimziError as err:
            raise ClusterUnresolved(err) from None
        user_secret = _secret_data(ns, user_secret_name(ref, user))
    return StrimziObjects(kafka, _secret_data(ns, ca_secret_name(ref)), user, user_secret)


def read_binding(name: str) -> dict[str, Any] | None:
    """A KafkaClusterBinding (cluster-scoped), or None if there is none."""
    custom = kubernetes.client.CustomObjectsApi(_client())
    try:
        found: Any = custom.get_cluster_custom_object(GROUP, VERSION, KAFKA_CLUSTER_BINDINGS, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise BindingUnavailable(f"cannot read KafkaClusterBinding {name}: {exc.reason}") from None
    return dict(found)


def namespace_labels(name: str) -> dict[str, str] | None:
    """A namespace's labels, or None if there is no such namespace."""
    core = kubernetes.client.CoreV1Api(_client())
    try:
        found = core.read_namespace(name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise BindingUnavailable(f"cannot read namespace {name}: {exc.reason}") from None
    return dict((found.metadata.labels if found.metadata else None) or {})


def binding_connection(operator_namespace: str) -> Callable[[Binding], tuple[str, dict[str, str]]]:
    """Resolves a binding's connection: its clientConfigSecret in the operator's own
    namespace, its Strimzi objects in the namespace the binding names (the administrator
    who wrote the binding is the consent a tenant's cross-namespace reference needs)."""

    def resolve(binding: Binding) -> tuple[str, dict[str, str]]:
        ref = binding.connection
        home = operator_namespace if ref.strimzi is None else ref.strimzi.namespace_or("")
        return _resolve(ref, operator_namespace, home)

    return resolve


def resolve_cluster(namespace: str, cluster: ClusterRef) -> tuple[str, dict[str, str]]:
    """Bootstrap servers and librdkafka properties for a spec.cluster in `namespace`
    (open tenancy): its Secret there, a Strimzi reference as seen from there."""
    return _resolve(cluster, namespace, namespace)


def _resolve(
    cluster: ClusterRef, secrets_namespace: str, referrer: str
) -> tuple[str, dict[str, str]]:
    """A clientConfigSecret (read in `secrets_namespace`) last, so its properties may add
    to a Strimzi connection (a Strimzi reference with a kafkaUser refuses one at parse
    time); a Strimzi reference resolved as `referrer`'s, whose namespace a KafkaUser
    elsewhere must have consented to."""
    extra = (
        read_client_config(secrets_namespace, cluster.client_config_secret)
        if cluster.client_config_secret
        else {}
    )
    if cluster.strimzi is None:
        return cluster.bootstrap_servers, extra
    try:
        bootstrap, config = strimzi_connection(
            cluster.strimzi, read_strimzi(cluster.strimzi, referrer), referrer
        )
    except StrimziError as err:
        raise ClusterUnresolved(err) from None
    return bootstrap, {**config, **extra}
