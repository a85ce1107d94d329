"""Which Kafka cluster a `spec.cluster` reaches, by the id the cluster gives itself.

Resources name one cluster in many ways: bootstrap servers in another order or a subset
of them, another listener, a Strimzi reference. The overlap rule (no policy cuts past
another's protected groups) and loss blame must see every such name as the same cluster,
or a peer named differently would not be consulted. Kafka's cluster id is the same
through every name, so names are resolved to it: once per name and a few minutes, not
once per policy and tick.

Tenants share this cache, so one namespace's trouble must not change another's answer:
an id read for a name is the cluster's whoever asked (the bootstrap servers are the
connection's, whatever client properties a namespace adds), but a failure is the asking
namespace's own (its Secret missing, its credentials refused) and is kept apart. A name
once resolved keeps its id while a refresh fails: an id is evidence, a failure is none.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Protocol

from kafka_retention.core.specs import ClusterRef

log = logging.getLogger(__name__)


class HasClusterId(Protocol):
    def cluster_id(self) -> str: ...


class ClusterIds:
    """`of(namespace, ref)`: the cluster id, or None when it is not known: the name was
    never resolved and cannot be now (a missing Secret, an unreachable cluster). None is
    not "any cluster": callers decide what an unknown means (the overlap rule counts an
    unknown policy as a peer only within its own namespace, core.overlap)."""

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
        # identity -> (id, fresh until): shared by every namespace.
        self._known: dict[str, tuple[str, float]] = {}
        # (namespace, ref) -> retry after: a failure belongs to who asked.
        self._failed: dict[tuple[str, ClusterRef], float] = {}
        # One lookup per name at a time: others asking meanwhile wait for its answer
        # instead of opening connections of their own.
        self._lookups: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def remember(self, namespace: str, ref: ClusterRef, cluster_id: str) -> None:
        """An id read on a connection made anyway (a batch's own), so no second one."""
        with self._lock:
            self._known[ref.identity(namespace)] = (cluster_id, self._clock() + self._ttl)
            self._failed.pop((namespace, ref), None)

    def of(self, namespace: str, ref: ClusterRef) -> str | None:
        name = ref.identity(namespace)
        cached, fresh = self._cached(namespace, ref, name)
        if fresh:
            return cached
        with self._lookup_lock((namespace, ref)):
            cached, fresh = self._cached(namespace, ref, name)  # answered while we waited
            if fresh:
                return cached
            found: str | None = None
            try:
                found = self._connect(*self._resolve(namespace, ref)).cluster_id()
            except Exception as err:  # any failure: not known, for this namespace only
                log.warning(
                    "cluster %s (for namespace %s): its id could not be read: %s",
                    name,
                    namespace,
                    err,
                )
            with self._lock:
                if found is not None:
                    self._known[name] = (found, self._clock() + self._ttl)
                    self._failed.pop((namespace, ref), None)
                else:
                    self._failed[(namespace, ref)] = self._clock() + self._failed_ttl
            return found if found is not None else cached

    def _cached(self, namespace: str, ref: ClusterRef, name: str) -> tuple[str | None, bool]:
        """(what is known, whether it needs no lookup now)."""
        now = self._clock()
        with self._lock:
            known = self._known.get(name)
            retry_after = self._failed.get((namespace, ref))
        if known is not None and known[1] > now:
            return known[0], True
        stale = known[0] if known is not None else None
        # A recent failure of this namespace's: not tried again yet (the last id, if any).
        return stale, retry_after is not None and retry_after > now

    def _lookup_lock(self, key: Hashable) -> threading.Lock:
        with self._lock:
            return self._lookups.setdefault(key, threading.Lock())
