"""In-memory stand-ins the unit tests share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import TopicPartition
from kafka_retention.services.policy.run import RunOutcome
from kafka_retention.services.tenancy import Tenancy


class MemoryStore:
    """A policy's status store (ports.PolicyStore) in memory: what the scheduler writes is
    kept, as the API server would keep it, and nothing else happens."""

    def __init__(
        self, namespace: str = "ns", name: str = "p", status: Mapping[str, Any] | None = None
    ) -> None:
        self.namespace, self.name = namespace, name
        self.status: dict[str, Any] = dict(status or {})

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)


class MemoryBlobs:
    """An erasure's ConfigMap sets (ports.BlobStore) in memory, by suffix."""

    def __init__(self) -> None:
        self.sets: dict[str, str] = {}

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        self.sets[suffix] = payload
        return {"configMap": f"recorderasure-e-{suffix}", "chunks": 1, "bytes": len(payload)}

    def load(self, suffix: str) -> str | None:
        return self.sets.get(suffix)


class Unreported:
    """A fleet's reports (services.policy.fleet.FleetReport) dropped, as a test of the
    scheduling itself wants them; handlers.retention.Reporting is the real one."""

    def run(self, body: Mapping[str, Any], outcome: RunOutcome) -> None:
        pass

    def acting(self, acting: bool) -> None:
        pass

    def policies(self, count: int) -> None:
        pass

    def tick(self, queue_depth: int, running: int, late: int) -> None:
        pass

    def standing_by(self) -> None:
        pass

    def batch_started(self, late_by: Sequence[float]) -> None:
        pass

    def batch_ended(self, seconds: float) -> None:
        pass


def broker_refuses_delete(policy: str, features: ClusterFeatures | None) -> bool:
    """Whether a broker answers DeleteRecords with POLICY_VIOLATION on a topic of this
    cleanup.policy, as kafka.cluster.Partition checks it: 4.2 and later (metadata.version
    28 on) refuse compact-only topics, earlier releases every topic without delete (an
    empty policy too). Written from the brokers' code, not from the operator's rule."""
    level = (features.finalized if features else {}).get("metadata.version", 0)
    if "delete" in policy:
        return False
    return "compact" in policy if level >= 28 else True


class FakeLogs:
    """The log bounds part of a fake Kafka port: each partition's [log start, high
    watermark] in `logs`, read as the port reads them. The fake notes each read with
    _call (which may also refuse it)."""

    logs: dict[TopicPartition, list[int]]

    def _call(self, what: str) -> None:
        raise NotImplementedError

    def offsets(self, tps: Iterable[TopicPartition], kind: Any) -> dict[TopicPartition, int]:
        self._call(f"offsets:{kind}")
        return {tp: self.logs[tp][0 if kind == "earliest" else 1] for tp in tps}

    def log_bounds(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        wanted = list(tps)
        return self.offsets(wanted, "earliest"), self.offsets(wanted, "latest")


class TenancyWorld:
    """The API server as the tenancy rule sees it, recording every read."""

    def __init__(self, bindings: Mapping[str, Any], labels: Mapping[str, Any] | None = None):
        self.bindings = dict(bindings)
        self.labels = dict(labels or {})
        self.reads: list[str] = []

    def read_binding(self, name: str) -> Mapping[str, Any] | None:
        self.reads.append(f"binding/{name}")
        found = self.bindings.get(name)
        return None if found is None else {"spec": found}

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        self.reads.append(f"namespace/{name}")
        found = self.labels.get(name)
        return None if found is None else dict(found)

    def resolve(self, binding: Any) -> tuple[str, dict[str, str]]:
        self.reads.append(f"connection/{binding.name}")
        return binding.connection.bootstrap_servers, {"sasl.username": "admin"}

    def tenancy(self, mode: str = "strict") -> Tenancy:
        return Tenancy(
            mode,  # type: ignore[arg-type]
            self.read_binding,
            self.namespace_labels,
            self.resolve,
        )
