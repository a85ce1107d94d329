"""What RecordPurges deleted, so a RetentionPolicy can name a purge as the cause of an
unread-record loss instead of calling it "external".

The ledger is fed from the operator's watch of RecordPurges, i.e. from what the API server
stores: a restarted operator rebuilds it from the same objects, and a purge deleted since
is no longer named (its loss is then reported as external). Each purge contributes the
log start it left on every partition its status lists one by one; where status folded the
results per topic (large purges), only the topic and the time it completed.

A policy's status names a purge of its own namespace; one of another namespace (a tenant
sharing the cluster) only as "a RecordPurge in another namespace", never by its name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge_states import State
from kafka_retention.core.specs import ClusterRef, SpecError, parse_cluster

RECORD_PURGE = "recordPurge"
# How a loss's cause names a RecordPurge of another namespace than the policy's.
OTHER_NAMESPACE_PURGE = "a RecordPurge in another namespace"


@dataclass(frozen=True)
class PurgeDone:
    """One RecordPurge that deleted records: where, when, and the log starts it left."""

    key: str  # namespace/name
    cluster: ClusterRef  # as the purge names it; resolved (ClusterIds) when compared
    completed_ms: int | None
    low_watermarks: Mapping[TopicPartition, int]
    folded_topics: frozenset[str]


def purge_done(body: Mapping[str, Any]) -> PurgeDone | None:
    """A stored RecordPurge as the ledger keeps it; None when it has deleted nothing."""
    meta, spec, status = (body.get(k) or {} for k in ("metadata", "spec", "status"))
    try:
        cluster: ClusterRef | None = parse_cluster(spec)
    except SpecError:
        cluster = None
    marks: dict[TopicPartition, int] = {}
    folded: set[str] = set()
    for entry in status.get("results") or []:
        if entry.get("state") != State.PURGED or not entry.get("topic"):
            continue
        if int(entry.get("partition", -1)) < 0:
            folded.add(str(entry["topic"]))
        elif entry.get("lowWatermark") is not None:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            marks[tp] = int(entry["lowWatermark"])
    if cluster is None or not (marks or folded):
        return None
    completed = status.get("completedAt")
    return PurgeDone(
        f"{meta.get('namespace')}/{meta.get('name')}",
        cluster,
        None if not completed else int(datetime.fromisoformat(completed).timestamp() * 1000),
        marks,
        frozenset(folded),
    )


def seen_from(namespace: str | None, key: str) -> str:
    """A purge's key (namespace/name) as a policy of `namespace` may show it: as it is in
    the same namespace, else without its namespace or name. None: the caller did not say
    whose status it writes (a caller from before tenancy), the key as it is."""
    if namespace is None or key.partition("/")[0] == namespace:
        return key
    return OTHER_NAMESPACE_PURGE


def purge_cluster(namespace: str, ref: ClusterRef) -> str | None:
    """A cluster as the spec names it (no lookup), the default key."""
    return ref.identity(namespace)


class PurgeLedger:
    """Finished purges by key. Written by the watch (event loop), read by policy runs
    (worker threads): a lock keeps each read consistent.

    `cluster_of(namespace, ref)` keys clusters; the operator sets Kafka's own cluster id
    (`resolve_with`), so a purge naming the cluster one way is still named as the cause
    of a loss on a policy naming it another way."""

    def __init__(self) -> None:
        self._done: dict[str, PurgeDone] = {}
        self._lock = threading.Lock()
        self._cluster_of: Callable[[str, ClusterRef], str | None] = purge_cluster

    def resolve_with(self, cluster_of: Callable[[str, ClusterRef], str | None]) -> None:
        self._cluster_of = cluster_of

    def put(self, key: str, done: PurgeDone | None) -> None:
        with self._lock:
            if done is None:
                self._done.pop(key, None)
            else:
                self._done[key] = done

    def remove(self, key: str) -> None:
        self.put(key, None)

    def on_cluster(self, cluster: str | None) -> PurgesOnCluster:
        """The finished purges on `cluster` (keyed as `cluster_of` keys them), to ask about
        every loss of a run. Each distinct (namespace, cluster reference) is resolved once
        here, however many purges name it and however many losses are asked about:
        `cluster_of` may read a KafkaClusterBinding from the API server. None (unknown)
        holds no purge, since one on another cluster would be a false cause."""
        if cluster is None:
            return PurgesOnCluster(())
        with self._lock:
            candidates = list(self._done.values())
        resolved: dict[tuple[str, ClusterRef], str | None] = {}
        done = []
        for d in candidates:
            where = (d.key.split("/", 1)[0], d.cluster)
            if where not in resolved:
                resolved[where] = self._cluster_of(*where)
            if resolved[where] == cluster:
                done.append(d)
        return PurgesOnCluster(tuple(sorted(done, key=lambda d: (-(d.completed_ms or 0), d.key))))


@dataclass(frozen=True)
class PurgesOnCluster:
    """The finished purges on one cluster, the most recently completed first."""

    done: tuple[PurgeDone, ...]

    def cause(
        self,
        tp: TopicPartition,
        start: int,
        end: int,
        since_ms: int | None,
        namespace: str | None = None,
    ) -> str | None:
        """The purge that moved tp's log start into the lost range (start, end], if any,
        as a policy of `namespace` may name it (`seen_from`).

        A purge listing the partition is named when the log start it left lies in that
        range. A purge that folded the topic is named only when it completed after the
        policy's previous check (since_ms): without offsets, timing is the only evidence.
        """
        for d in self.done:
            mark = d.low_watermarks.get(tp)
            if mark is not None and start < mark <= end:
                return seen_from(namespace, d.key)
        if since_ms is None:
            return None
        for d in self.done:
            if tp.topic in d.folded_topics and (d.completed_ms or 0) >= since_ms:
                return seen_from(namespace, d.key)
        return None
