"""Which Kafka cluster a `spec.cluster` reaches, by the id the cluster gives itself.

Resources name one cluster in many ways: bootstrap servers in another order or a subset
of them, another listener, a Strimzi reference. The overlap rule (no policy cuts past
another's protected groups) and loss blame must see every such name as the same cluster,
or a peer named differently would not be consulted. Kafka's cluster id is the same
through every name, so names are resolved to it: once per name and a few minutes, not
once per policy and tick.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from kafka_retention.core.specs import ClusterRef

log = logging.getLogger(__name__)


class HasClusterId(Protocol):
    def cluster_id(self) -> str: ...


class ClusterIds:
    """`of(namespace, ref)`: the cluster id, or None when the name cannot be resolved
    now (a missing Secret, an unreachable cluster). None means "could be any cluster":
    callers that guard data treat it as possibly the same one."""

    def __init__(
        self,
        resolve: Callable[[str, ClusterRef], tuple[str, dict[str, str]]],
        connect: Callable[[str, dict[str, str]], HasClusterId],
        ttl_s: float = 300.0,
        failed_ttl_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._resolve, self._connect = resolve, connect
        self._ttl, self._failed_ttl, self._clock = ttl_s, failed_ttl_s, clock
        self._known: dict[str, tuple[str | None, float]] = {}
        self._lock = threading.Lock()

    def remember(self, namespace: str, ref: ClusterRef, cluster_id: str) -> None:
        """An id read on a connection made anyway (a batch's own), so no second one."""
        with self._lock:
            self._known[ref.identity(namespace)] = (cluster_id, self._clock() + self._ttl)

    def of(self, namespace: str, ref: ClusterRef) -> str | None:
        name = ref.identity(namespace)
        with self._lock:
            hit = self._known.get(name)
        if hit is not None and hit[1] > self._clock():
            return hit[0]
        found: str | None = None
        try:
            found = self._connect(*self._resolve(namespace, ref)).cluster_id()
        except Exception as err:  # any failure: unknown, which callers treat as "maybe"
            log.warning("cluster %s: its id could not be read: %s", name, err)
        with self._lock:
            ttl = self._ttl if found is not None else self._failed_ttl
            self._known[name] = (found, self._clock() + ttl)
        return found
