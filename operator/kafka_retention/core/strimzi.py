"""`spec.cluster.strimzi`: reach a Strimzi-managed Kafka cluster by reference.

Strimzi publishes what a client needs in Kubernetes objects, so users need not copy it:

- the Kafka resource's `status.listeners[]` holds each listener's `bootstrapServers`, and
  its `spec.kafka.listeners[]` says whether the listener uses TLS and which
  authentication (`tls`, `scram-sha-512`, ...) it asks for;
- the Secret `<cluster>-cluster-ca-cert` (key `ca.crt`) holds the CA that signed the
  brokers' certificates;
- a KafkaUser's Secret (named in its `status.secret`, by default the user's name) holds
  `user.crt`/`user.key` for TLS users and `password` for SCRAM-SHA-512 users, whose name
  is the KafkaUser's `status.username`.

This module turns those objects into the bootstrap servers and librdkafka properties of
a connection. It reads nothing itself (the Kubernetes adapter fetches the objects) and
every refusal names the spec field to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FIELD = "spec.cluster.strimzi"

# The labels Strimzi sets on broker pods (KRaft node pools with the broker role), and the
# container that runs Kafka: orphan cleanup execs there unless the spec names others.
CLUSTER_LABEL = "strimzi.io/cluster"
BROKER_ROLE_LABEL = "strimzi.io/broker-role"
BROKER_CONTAINER = "kafka"

# A KafkaUser used by resources of another namespace must name them in this annotation
# (comma-separated, or "*"). The operator reads the user's Secret with its own rights:
# without the consent, anyone allowed to create a RecordPurge anywhere could delete
# records as any KafkaUser of the cluster.
ALLOWED_NAMESPACES = "kafka-retention.io/allowed-namespaces"

# Listener authentication types this operator can speak with a KafkaUser's Secret.
SCRAM = "scram-sha-512"
TLS = "tls"


@dataclass(frozen=True)
class StrimziRef:
    """Which Strimzi Kafka cluster, listener and KafkaUser to connect as."""

    kafka: str
    namespace: str | None = None  # None: the namespace of the referring resource
    listener: str | None = None  # None: the cluster's only listener
    kafka_user: str | None = None  # None: connect without credentials

    def namespace_or(self, own: str) -> str:
        return self.namespace or own

    def broker_labels(self) -> tuple[tuple[str, str], ...]:
        return ((BROKER_ROLE_LABEL, "true"), (CLUSTER_LABEL, self.kafka))


@dataclass(frozen=True)
class StrimziObjects:
    """What the adapter read for one reference; secrets' data already decoded."""

    kafka: Mapping[str, Any]
    cluster_ca: Mapping[str, str] | None  # data of <cluster>-cluster-ca-cert, if read
    user: Mapping[str, Any] | None  # the KafkaUser, if the reference names one
    user_secret: Mapping[str, str] | None  # data of its Secret


@dataclass(frozen=True)
class Listener:
    name: str
    bootstrap_servers: str
    tls: bool
    authentication: str | None  # spec.kafka.listeners[].authentication.type


class StrimziError(LookupError):
    """The reference cannot be turned into a connection (yet): names the field to check.
    The objects may still be on their way (a Kafka not Ready, a KafkaUser whose Secret the
    User Operator has not written), so callers try again later."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def user_secret_name(ref: StrimziRef, user: Mapping[str, Any]) -> str:
    """Strimzi names the user's Secret in status.secret (default: the user's name)."""
    status = user.get("status") or {}
    return str(status.get("secret") or ref.kafka_user)


def listener(ref: StrimziRef, kafka: Mapping[str, Any], namespace: str) -> Listener:
    """The listener the reference means, from the Kafka resource's spec and status."""
    where = f"Kafka {namespace}/{ref.kafka}"
    published = {
        str(item.get("name") or item.get("type")): item
        for item in (kafka.get("status") or {}).get("listeners") or []
        if isinstance(item, Mapping)
    }
    declared = {
        str(item.get("name")): item
        for item in ((kafka.get("spec") or {}).get("kafka") or {}).get("listeners") or []
        if isinstance(item, Mapping)
    }
    if not published:
        raise StrimziError(
            FIELD, f"{where} publishes no listeners in its status yet (is it Ready?)"
        )
    if ref.listener is None:
        if len(published) > 1:
            raise StrimziError(
                f"{FIELD}.listener",
                f"{where} has listeners {', '.join(sorted(published))}: name one",
            )
        chosen = next(iter(published))
    elif ref.listener not in published:
        raise StrimziError(
            f"{FIELD}.listener",
            f"{where} has no listener {ref.listener} in its status "
            f"(it has: {', '.join(sorted(published)) or 'none'})",
        )
    else:
        chosen = ref.listener
    bootstrap = str(published[chosen].get("bootstrapServers") or "").strip()
    if not bootstrap:
        raise StrimziError(FIELD, f"{where} listener {chosen} has no bootstrapServers yet")
    spec = declared.get(chosen, {})
    auth = spec.get("authentication") or {}
    return Listener(
        chosen,
        bootstrap,
        bool(spec.get("tls", False)),
        str(auth["type"]) if isinstance(auth, Mapping) and auth.get("type") else None,
    )


def connection(
    ref: StrimziRef, found: StrimziObjects, namespace: str
) -> tuple[str, dict[str, str]]:
    """Bootstrap servers and librdkafka properties for the reference. Values are secrets:
    they are never logged, and errors name keys and objects, never values."""
    ns = ref.namespace_or(namespace)
    chosen = listener(ref, found.kafka, ns)
    config: dict[str, str] = {}
    if chosen.tls:
        ca = (found.cluster_ca or {}).get("ca.crt")
        if not ca:
            raise StrimziError(
                FIELD,
                f"Secret {ns}/{ca_secret_name(ref)} has no ca.crt for TLS listener {chosen.name}",
            )
        config["ssl.ca.pem"] = ca
    sasl = False
    user_kind = _user_kind(found.user) if found.user is not None else None
    if chosen.authentication is None:
        if ref.kafka_user is not None:
            raise StrimziError(
                f"{FIELD}.kafkaUser",
                f"listener {chosen.name} of Kafka {ns}/{ref.kafka} asks for no "
                "authentication; remove kafkaUser or pick a listener that uses it",
            )
    elif chosen.authentication not in (SCRAM, TLS):
        raise StrimziError(
            f"{FIELD}.listener",
            f"listener {chosen.name} uses {chosen.authentication} authentication; only "
            f"{SCRAM} and {TLS} listeners can be used by reference "
            "(use bootstrapServers and clientConfigSecret instead)",
        )
    else:
        if ref.kafka_user is None or found.user is None:
            raise StrimziError(
                f"{FIELD}.kafkaUser",
                f"listener {chosen.name} asks for {chosen.authentication} authentication: "
                "name the KafkaUser to connect as",
            )
        check_consent(ref, found.user, ns, namespace)
        if user_kind != chosen.authentication:
            raise StrimziError(
                f"{FIELD}.kafkaUser",
                f"KafkaUser {ns}/{ref.kafka_user} authenticates with {user_kind}, but "
                f"listener {chosen.name} asks for {chosen.authentication}",
            )
        data = found.user_secret or {}
        secret = user_secret_name(ref, found.user)
        if chosen.authentication == SCRAM:
            if not data.get("password"):
                raise StrimziError(
                    f"{FIELD}.kafkaUser", f"Secret {ns}/{secret} has no password (not ready?)"
                )
            status = found.user.get("status") or {}
            config["sasl.mechanism"] = "SCRAM-SHA-512"
            config["sasl.username"] = str(status.get("username") or ref.kafka_user)
            config["sasl.password"] = data["password"]
            sasl = True
        else:
            if not chosen.tls:
                raise StrimziError(
                    f"{FIELD}.listener", f"listener {chosen.name} asks for tls but is not TLS"
                )
            missing = [k for k in ("user.crt", "user.key") if not data.get(k)]
            if missing:
                raise StrimziError(
                    f"{FIELD}.kafkaUser",
                    f"Secret {ns}/{secret} has no {' or '.join(missing)} (not ready?)",
                )
            config["ssl.certificate.pem"] = data["user.crt"]
            config["ssl.key.pem"] = data["user.key"]
    config["security.protocol"] = {
        (False, False): "PLAINTEXT",
        (True, False): "SSL",
        (False, True): "SASL_PLAINTEXT",
        (True, True): "SASL_SSL",
    }[(chosen.tls, sasl)]
    return chosen.bootstrap_servers, config


def check_consent(ref: StrimziRef, user: Mapping[str, Any], ns: str, referrer: str) -> None:
    """A KafkaUser in another namespace than the referring resource's must name that
    namespace in its annotation; checked before its Secret is read (adapters.kube)."""
    if ns == referrer:
        return
    annotations = (user.get("metadata") or {}).get("annotations") or {}
    allowed = {n.strip() for n in str(annotations.get(ALLOWED_NAMESPACES, "")).split(",")}
    if referrer not in allowed and "*" not in allowed:
        raise StrimziError(
            f"{FIELD}.kafkaUser",
            f"KafkaUser {ns}/{ref.kafka_user} does not allow namespace {referrer} to use it: "
            f"add {referrer} to its annotation {ALLOWED_NAMESPACES}",
        )


def ca_secret_name(ref: StrimziRef) -> str:
    return f"{ref.kafka}-cluster-ca-cert"


def _user_kind(user: Mapping[str, Any]) -> str | None:
    auth = (user.get("spec") or {}).get("authentication") or {}
    kind = auth.get("type") if isinstance(auth, Mapping) else None
    # tls-external users bring their own certificate: Strimzi puts none in a Secret.
    return str(kind) if kind else None
