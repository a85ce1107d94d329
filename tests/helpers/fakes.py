"""In-memory stand-ins the unit tests share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_retention.core.facts import TopicPartition


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
