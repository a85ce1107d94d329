"""In-memory stand-ins the unit tests share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
