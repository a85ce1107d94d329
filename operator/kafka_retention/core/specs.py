"""What every spec parser shares: the error that names a field, times, topic names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

from kafka_retention.core.durations import parse_duration_ms
from kafka_retention.core.patterns import PatternError, compile_pattern
from kafka_retention.core.strimzi import BROKER_CONTAINER, StrimziRef

TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# Kafka's own bounds: partitions are int32, offsets int64.
MAX_PARTITION = 2**31 - 1  # Kafka partitions are Java ints
MAX_OFFSET = 2**63 - 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SpecError(ValueError):
    """The spec can never work as written; `field` names the offending field."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.message = message


# Which fields a spec may have: a key maps to the shape of its value (None: a scalar, a
# list of scalars, or a map of any keys). An object's items share one shape.
Shape = Mapping[str, "Shape | None"]


def known_fields(value: Any, shape: Shape, field_path: str) -> None:
    """Refuse a field the resource does not define. The API server prunes unknown fields
    from what it stores (so a client that only warns, not kubectl, would drop a misspelt
    `minRetention` silently); a spec the CLI reads gets no pruning at all. Either way a
    typo must not turn into a policy without its safety margin."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key not in shape:
                known = ", ".join(shape)
                raise SpecError(f"{field_path}.{key}", f"unknown field (known: {known})")
            inner = shape[key]
            if inner is not None:
                known_fields(item, inner, f"{field_path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            known_fields(item, shape, f"{field_path}[{i}]")


# Typed reads of a spec's JSON. The CRD schema checks types at apply time, but an object
# stored before a schema change, or a spec the CLI builds, reaches the parsers unchecked:
# a string where a list belongs must not become a list of letters, nor "false" a true.


def obj(value: Any, field_path: str) -> Mapping[str, Any]:
    """An object; absent is empty."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(field_path, f"must be an object, not {type(value).__name__}")
    return value


def objects(value: Any, field_path: str) -> list[Mapping[str, Any]]:
    """A list of objects; absent is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(field_path, f"must be a list, not {type(value).__name__}")
    return [obj(v, f"{field_path}[{i}]") for i, v in enumerate(value)]


def flag(value: Any, field_path: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise SpecError(field_path, f"must be true or false, not {value!r}")
    return value


def integer(value: Any, field_path: str, low: int, high: int) -> int:
    # bool is an int in Python: `true` must not read as 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(field_path, f"{value!r} is not an integer")
    if not low <= value <= high:
        raise SpecError(field_path, f"{value} is not between {low} and {high}")
    return value


def text(value: Any, field_path: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(field_path, f"{value!r} is not a non-empty string")
    return value


def names(value: Any, field_path: str) -> tuple[str, ...]:
    """A list of non-empty strings (group ids), as given; absent is empty."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SpecError(field_path, f"must be a list of names, not {type(value).__name__}")
    return tuple(text(v, f"{field_path}[{i}]") for i, v in enumerate(value))


def group_ids(value: Any, field_path: str) -> tuple[str, ...]:
    """A list of consumer group ids, each once, in order: a set of groups."""
    return tuple(sorted(set(names(value, field_path))))


def is_topic_name(value: Any) -> TypeGuard[str]:
    """Kafka's rule: 1 to 249 of [a-zA-Z0-9._-], and not "." or ".."."""
    return (
        isinstance(value, str)
        and TOPIC_NAME.fullmatch(value) is not None
        and value not in (".", "..")
    )


# Kubernetes' own syntax for label keys (an optional DNS-subdomain prefix and a name) and
# values: a selector is built from them, so `foo!` must never become `foo!=bar`.
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}")
_LABEL_VALUE = re.compile(rf"({_LABEL_NAME})?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def labels(value: Any, field_path: str) -> tuple[tuple[str, str], ...]:
    """matchLabels as sorted pairs, each key and value valid as a Kubernetes label."""
    raw = obj(value, field_path)
    pairs = []
    for key, val in raw.items():
        if not isinstance(key, str) or len(key) > 316 or not _LABEL_KEY.fullmatch(key):
            raise SpecError(f"{field_path}.{key}", "is not a valid label key")
        if not isinstance(val, str) or len(val) > 63 or not _LABEL_VALUE.fullmatch(val):
            raise SpecError(f"{field_path}.{key}", f"{val!r} is not a valid label value")
        pairs.append((key, val))
    return tuple(sorted(pairs))


def namespace_name(value: Any, field_path: str) -> str:
    name = text(value, field_path)
    if not _DNS_LABEL.fullmatch(name):
        raise SpecError(field_path, f"{name!r} is not a namespace name")
    return name


# Every way spec.cluster can name a cluster, credentials or broker pods other than a
# KafkaClusterBinding (clusterRef): strict tenancy refuses each, and none combines with it.
@dataclass(frozen=True)
class BrokerAccess:
    """How the operator reaches the brokers' log dirs: a policy's spec.cluster.brokers, or
    a KafkaClusterBinding's spec.brokers (the administrator's word, which wins)."""

    access: str  # "exec" or "local" (policy_spec.UNBOUND until a binding fills it in)
    namespace: str | None = None  # of the broker pods; None: the resource's own
    match_labels: tuple[tuple[str, str], ...] = ()
    container: str = BROKER_CONTAINER


def parse_brokers(value: Any, field_path: str) -> BrokerAccess:
    """A brokers block, each field checked and named by its path."""
    raw = obj(value, field_path)
    access = raw.get("access", "exec")
    if access not in ("exec", "local"):
        raise SpecError(f"{field_path}.access", f"{access!r} is not exec or local")
    selector = obj(raw.get("podSelector"), f"{field_path}.podSelector")
    pairs = labels(selector.get("matchLabels"), f"{field_path}.podSelector.matchLabels")
    namespace = raw.get("namespace")
    if namespace is not None:
        namespace = namespace_name(namespace, f"{field_path}.namespace")
    container = text(raw.get("container", BROKER_CONTAINER), f"{field_path}.container")
    return BrokerAccess(access, namespace, pairs, container)


INLINE_FIELDS = ("bootstrapServers", "strimzi", "clientConfigSecret", "brokers")


def duration(value: Any, field_path: str) -> int:
    """A duration such as 90s, 15m or 7d, in milliseconds."""
    try:
        return parse_duration_ms(str(value))
    except ValueError as err:
        raise SpecError(field_path, str(err)) from None


STRIMZI_FIELDS: Shape = {"kafka": None, "namespace": None, "listener": None, "kafkaUser": None}


@dataclass(frozen=True)
class ClusterRef:
    """`spec.cluster`: a KafkaClusterBinding by name, bootstrap servers typed in, or a
    Strimzi cluster by reference."""

    bootstrap_servers: str  # "" with strimzi or binding: resolved at run time
    client_config_secret: str | None = None
    strimzi: StrimziRef | None = None
    binding: str | None = None  # spec.cluster.clusterRef

    def identity(self, namespace: str) -> str:
        """What tells two clusters apart before anything is resolved (overlapping
        policies, the purges a loss is blamed on): the bootstrap servers as typed, or the
        Strimzi Kafka resource whatever listener reaches it, or the KafkaClusterBinding.
        `namespace`: the referring resource's, where a reference without one looks."""
        if self.binding is not None:
            # A space: no bootstrapServers value (no whitespace allowed) can spell it.
            return f"binding {self.binding}"
        if self.strimzi is None:
            return self.bootstrap_servers
        return f"strimzi:{self.strimzi.namespace_or(namespace)}/{self.strimzi.kafka}"


def parse_cluster(spec: Mapping[str, Any]) -> ClusterRef:
    """`spec.cluster`: a binding, the bootstrap servers or a Strimzi reference (exactly
    one), and the optional client Secret."""
    cluster = obj(spec.get("cluster"), "spec.cluster")
    bootstrap = cluster.get("bootstrapServers")
    strimzi = cluster.get("strimzi")
    binding = cluster.get("clusterRef")
    if binding is not None:
        for key in INLINE_FIELDS:
            if key in cluster:
                raise SpecError(
                    f"spec.cluster.{key}",
                    "cannot be combined with spec.cluster.clusterRef (the binding says it)",
                )
        return ClusterRef("", binding=text(binding, "spec.cluster.clusterRef"))
    if bootstrap is not None and strimzi is not None:
        raise SpecError("spec.cluster", "set bootstrapServers or strimzi, not both")
    secret = cluster.get("clientConfigSecret")
    if secret is not None:
        secret = text(secret, "spec.cluster.clientConfigSecret")
    if strimzi is not None:
        ref = _strimzi(obj(strimzi, "spec.cluster.strimzi"))
        if secret is not None and ref.kafka_user is not None:
            raise SpecError(
                "spec.cluster.clientConfigSecret",
                "cannot be combined with spec.cluster.strimzi.kafkaUser (both give credentials)",
            )
        return ClusterRef("", secret, ref)
    if not isinstance(bootstrap, str) or not bootstrap.strip():
        raise SpecError("spec.cluster.bootstrapServers", "is required (or spec.cluster.strimzi)")
    return ClusterRef(bootstrap.strip(), secret)


def _strimzi(raw: Mapping[str, Any]) -> StrimziRef:
    def name(key: str) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        return text(value, f"spec.cluster.strimzi.{key}")

    kafka = name("kafka")
    if kafka is None:
        raise SpecError("spec.cluster.strimzi.kafka", "is required")
    return StrimziRef(kafka, name("namespace"), name("listener"), name("kafkaUser"))


def parse_time(value: Any, field_path: str) -> datetime:
    """An RFC 3339 time with a zone, not before 1970: a time before the epoch is a
    negative timestamp, and ListOffsets reads -1 as "latest" and -2 as "earliest", so a
    cut at 1969-12-31T23:59:59.999Z would delete every record."""
    if not isinstance(value, str):
        raise SpecError(field_path, f"{value!r} is not an RFC 3339 time")
    given = value.strip()
    if given.endswith(("Z", "z")):
        given = given[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(given)
    except ValueError:
        raise SpecError(field_path, f"{value!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise SpecError(field_path, f"{value!r} has no time zone (add Z or +hh:mm)")
    try:
        before_epoch = parsed < EPOCH
    except OverflowError:  # year 1 in a zone east of UTC
        before_epoch = True
    if before_epoch:
        raise SpecError(field_path, f"{value!r} is before 1970-01-01T00:00:00Z")
    return parsed


def topic_pattern(value: Any, field_path: str) -> str | None:
    """An RE2 pattern over whole topic names (None when absent), refused with RE2's own
    words when it does not compile."""
    if value is None:
        return None
    pattern = text(value, field_path)
    try:
        compile_pattern(pattern)
    except PatternError as err:
        raise SpecError(field_path, str(err)) from None
    return pattern
