"""What the outside systems answer instead of a value, as the services meet it: a
partition's failure, a cluster that does not answer, a broker volume or pod command
that failed, a Secret that cannot be read, a plan wait ended by the operator stopping.

The adapters raise and return these; the services catch and report them. Defined here,
below both, so the services never import an adapter to name what went wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kafka_retention.core.conditions import Reason

# Which end of a partition's log an offsets read asks for.
OffsetKind = Literal["earliest", "latest"]


class KafkaUnavailable(RuntimeError):
    """The cluster could not be reached or did not answer in time; try again later."""


@dataclass(frozen=True)
class KafkaFailure:
    """One partition's (or topic's) failure as Kafka named it; `retriable` when it goes
    away by itself (a leader moving, a broker restarting)."""

    code: str
    message: str
    retriable: bool

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class VolumeError(RuntimeError):
    """A refusal or failure the broker-volume adapter words itself: its message names log
    dirs and directory names only, never what a broker pod printed, so it may go into
    status."""


class ExecFailed(RuntimeError):
    """A command run in a pod exited non-zero, ran too long or said too much. The pod's
    own stderr goes to the operator's log, not the message: the message reaches the
    status of a tenant's resource."""


class SecretUnavailable(LookupError):
    """The clientConfigSecret is missing or unreadable."""

    # The condition reason a run that met it reports (RecordPurge and RetentionPolicy).
    reason = Reason.SECRET_UNAVAILABLE


class Unresolved(Exception):
    """A resource's cluster cannot be named yet (a Secret with its client settings, a
    Strimzi resource, a binding whose cluster answers with another id); `reason` says
    which. Tried again later."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Abandoned(RuntimeError):
    """The operator is stopping: its wait for a plan ended early. Nothing was applied. A pod
    run goes on in the cluster, and the next operator waits for it by its name (the same
    batch in the same slot gets the same name); a local job is cancelled."""


class WriteRefused(RuntimeError):
    """The API server refused to store a write (status, or a ConfigMap of a purge's plan
    or results): its HTTP status, reason and the start of its answer. The Kubernetes
    adapter raises it in place of the client's own exception, so the services can say the
    cause without importing that client."""

    def __init__(self, status: int, reason: str, body: str = "") -> None:
        self.status, self.reason, self.body = status, reason, body[:400]
        super().__init__(f"HTTP {status} {reason}")
