"""How the operator reaches a Kafka cluster from Kubernetes objects: a clientConfigSecret's
client properties, a Strimzi reference's listener and credentials, a
KafkaClusterBinding, and a namespace's labels (which bindings admit by)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from kafka_retention.adapters.kube import api_client
from kafka_retention.core.bindings import Binding, BindingUnavailable
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import SecretUnavailable
from kafka_retention.core.resources import GROUP, KAFKA_CLUSTER_BINDINGS, VERSION
from kafka_retention.core.specs import ClusterRef
from kafka_retention.core.strimzi import (
    StrimziError,
    StrimziObjects,
    StrimziRef,
    ca_secret_name,
    check_consent,
    user_secret_name,
)
from kafka_retention.core.strimzi import connection as strimzi_connection


def read_client_config(namespace: str, name: str) -> dict[str, str]:
    """librdkafka properties from a Secret: its keys, and a Java properties file in key
    client.properties, with the stores they name (core/client_config.py says how).
    Values are secrets: never log them."""
    from kafka_retention.adapters.keystores import Stores
    from kafka_retention.core import client_config, client_properties

    core = kubernetes.client.CoreV1Api(api_client())
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
        client_properties.refuse_local_resources(config)
        return config
    except client_properties.ClientPropertyError as exc:
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
    custom = kubernetes.client.CustomObjectsApi(api_client())
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
    core = kubernetes.client.CoreV1Api(api_client())
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
    custom = kubernetes.client.CustomObjectsApi(api_client())
    try:
        found: Any = custom.get_cluster_custom_object(GROUP, VERSION, KAFKA_CLUSTER_BINDINGS, name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise BindingUnavailable(f"cannot read KafkaClusterBinding {name}: {exc.reason}") from None
    return dict(found)


def namespace_labels(name: str) -> dict[str, str] | None:
    """A namespace's labels, or None if there is no such namespace."""
    core = kubernetes.client.CoreV1Api(api_client())
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
