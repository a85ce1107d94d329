"""When each RetentionPolicy runs: one due-queue for every policy of the operator.

No thread or task is held per policy: the queue knows when each policy is due, hands out
batches of due policies per cluster, and takes them back when their run ends. It is pure
(the caller passes the time), so its promises are tested without waiting:

- a policy runs once per interval, counted from the end of its last run (a run never
  overlaps itself), or at once when its spec changes (a new generation; after the run in
  progress, if one is);
- policies of one cluster due within `window` seconds of each other run as one batch, and
  a cluster has one batch in flight at a time; the next forms when it ends;
- a policy waiting longer than its slack past its due time is late, and is reported once
  per lateness episode.

Namespaces are tenants and share the workers fairly, so one namespace's backlog delays
another's policy by a turn, not by the backlog:

- at most `workers` batches are in flight; when more clusters have due policies than
  workers are free, namespaces take turns, the one served least recently first, one
  batch each per turn (a namespace with 1,000 clusters due gets one batch, then the
  next namespace gets one);
- the last free worker is kept for a namespace that has no batch in flight, while one
  has policies: a namespace's long batches (a Spark job of an hour) never hold every
  worker while another namespace waits;
- where namespaces share a cluster, a batch takes at most `max_per_namespace` of each
  namespace's due policies (earliest due first): the rest run in the next batch, so
  another namespace's policy on that cluster waits for a batch of bounded size. A
  cluster only one namespace uses has no such cap.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, deque
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


def slack_for(interval_s: float) -> float:
    """How late a run may start before the policy says it is late: a quarter of its
    interval, at least 30 s (a batch's own planning time) and at most 10 minutes."""
    return min(600.0, max(30.0, interval_s / 4))


def namespace_of(key: str) -> str:
    """The namespace of a policy's key `namespace/name` ("" for a key without one)."""
    namespace, slash, _ = key.partition("/")
    return namespace if slash else ""


def interleave_namespaces(keys: Iterable[str]) -> list[str]:
    """Keys ordered one namespace after another (each namespace's in key order, the
    namespaces by name): the order to work through a batch shared by namespaces, so no
    namespace's policies all wait behind another's."""
    by_namespace: dict[str, list[str]] = {}
    for key in sorted(keys):
        by_namespace.setdefault(namespace_of(key), []).append(key)
    queues = [deque(by_namespace[ns]) for ns in sorted(by_namespace)]
    out: list[str] = []
    while queues:
        for queue in queues:
            out.append(queue.popleft())
        queues = [q for q in queues if q]
    return out


@dataclass
class Scheduled:
    key: str
    cluster: Hashable
    interval_s: float
    generation: int | None
    body: Mapping[str, Any]
    due: float
    running: bool = False
    changed: bool = False  # the spec changed while it ran
    late_reported: bool = False
    version: int = 0  # bumped on every reschedule: stale heap items are skipped
    namespace: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.namespace = namespace_of(self.key)

    @property
    def slack(self) -> float:
        return slack_for(self.interval_s)


@dataclass
class Scheduler:
    window: float = 5.0
    # Batches in flight at most (None: no limit, every cluster's batch at once).
    workers: int | None = None
    # Due policies of one namespace a batch takes on a cluster other namespaces use too
    # (None: all of them).
    max_per_namespace: int | None = None
    entries: dict[str, Scheduled] = field(default_factory=dict)
    _heap: list[tuple[float, int, str]] = field(default_factory=list)
    _busy: set[Hashable] = field(default_factory=set)
    # The namespaces in each cluster's batch in flight.
    _in_flight: dict[Hashable, frozenset[str]] = field(default_factory=dict)
    # When each namespace last had a batch started (a turn number): least recent first.
    _served: dict[str, int] = field(default_factory=dict)
    _turn: int = 0

    def upsert(
        self,
        key: str,
        cluster: Hashable,
        interval_s: float,
        generation: int | None,
        body: Mapping[str, Any],
        now: float,
        resume_at: float | None = None,
    ) -> None:
        """A policy as the API server stores it. New: due at `resume_at` (its stored
        nextRunAt, so a restart keeps the schedule) or now. A new generation: due now."""
        entry = self.entries.get(key)
        if entry is None:
            due = now if resume_at is None else max(now, resume_at)
            entry = Scheduled(key, cluster, interval_s, generation, body, due)
            self.entries[key] = entry
            self._push(entry)
            return
        entry.body = body
        if entry.generation != generation:
            entry.generation, entry.interval_s, entry.cluster = generation, interval_s, cluster
            if entry.running:
                entry.changed = True  # run again as soon as this run ends
            else:
                entry.due = now
                entry.late_reported = False
                self._push(entry)

    def remove(self, key: str) -> None:
        self.entries.pop(key, None)

    def forget_all(self) -> None:
        """Drop every policy (this replica stands by). Clusters with a batch in flight stay
        busy until it finishes, so a later batch never overlaps it."""
        self.entries.clear()
        self._heap.clear()

    def take(self, now: float) -> list[list[Scheduled]]:
        """Batches to start now: per cluster without a batch in flight, policies due now or
        within the window, as many batches as workers are free, namespaces in turn (see
        the module's notes). They are marked running until `finish`."""
        free = math.inf if self.workers is None else self.workers - len(self._busy)
        if free <= 0 or self.next_due() > now:
            return []
        waiting: dict[Hashable, list[Scheduled]] = {}  # per free cluster, within the window
        due: dict[str, list[Scheduled]] = {}  # per namespace, due now on a free cluster
        tenants: dict[Hashable, set[str]] = {}  # namespaces with policies on each cluster
        active: set[str] = set()  # namespaces with a policy that will run
        for entry in self.entries.values():
            if math.isfinite(entry.due) or entry.running:
                active.add(entry.namespace)
            tenants.setdefault(entry.cluster, set()).add(entry.namespace)
            if entry.running or entry.cluster in self._busy:
                continue
            if entry.due <= now + self.window:
                waiting.setdefault(entry.cluster, []).append(entry)
            if entry.due <= now:
                due.setdefault(entry.namespace, []).append(entry)
        known = {ns for names in tenants.values() for ns in names}
        self._served = {ns: turn for ns, turn in self._served.items() if ns in known}
        batches = []
        for cluster in self._pick(due, active, free):
            batch = self._members(waiting[cluster], len(tenants[cluster]) > 1)
            for e in batch:
                e.running = True
            self._busy.add(cluster)
            namespaces = frozenset(e.namespace for e in batch)
            self._in_flight[cluster] = namespaces
            self._turn += 1
            for ns in namespaces:
                self._served[ns] = self._turn
            batches.append(batch)
        return batches

    def _pick(
        self, due: Mapping[str, list[Scheduled]], active: set[str], free: float
    ) -> list[Hashable]:
        """Clusters to start batches on: namespaces in turn, least recently served first,
        each its earliest due cluster not picked yet; the last free worker only for a
        namespace with no batch in flight while such a namespace has policies."""
        queues: dict[str, deque[Hashable]] = {}
        for ns, entries in due.items():
            soonest = sorted(entries, key=lambda e: (e.due, e.key))
            queues[ns] = deque(dict.fromkeys(e.cluster for e in soonest))
        turns = deque(sorted(queues, key=lambda ns: (self._served.get(ns, -1), ns)))
        holding = Counter(ns for names in self._in_flight.values() for ns in names)
        picked: list[Hashable] = []
        while turns and len(picked) < free:
            ns = turns.popleft()
            queue = queues[ns]
            while queue and queue[0] in picked:
                queue.popleft()
            if not queue:
                continue
            last = self.workers is not None and free - len(picked) == 1
            if last and holding[ns] > 0 and any(holding[n] == 0 for n in active):
                continue  # kept for a namespace with nothing in flight
            cluster = queue.popleft()
            picked.append(cluster)
            holding[ns] += 1
            turns.append(ns)
        return picked

    def _members(self, waiting: list[Scheduled], shared: bool) -> list[Scheduled]:
        """A cluster's batch: its waiting policies, at most `max_per_namespace` of each
        namespace (earliest due first) where namespaces share the cluster; namespaces
        interleaved, each in key order."""
        by_namespace: dict[str, list[Scheduled]] = {}
        for e in sorted(waiting, key=lambda e: (e.due, e.key)):
            by_namespace.setdefault(e.namespace, []).append(e)
        cap = max(1, self.max_per_namespace) if shared and self.max_per_namespace else None
        chosen = {e.key: e for entries in by_namespace.values() for e in entries[:cap]}
        return [chosen[key] for key in interleave_namespaces(chosen)]

    def finish(self, cluster: Hashable, outcomes: Mapping[str, float], now: float) -> None:
        """A batch ended: each policy is due again `next_run_in` seconds from now
        (inf: not until its spec changes)."""
        self._busy.discard(cluster)
        self._in_flight.pop(cluster, None)
        for key, next_run_in in outcomes.items():
            entry = self.entries.get(key)
            if entry is None:
                continue
            entry.running = False
            entry.late_reported = False
            entry.due = now if entry.changed else now + next_run_in
            entry.changed = False
            self._push(entry)

    def late(self, now: float) -> list[Scheduled]:
        """Policies waiting past their slack that were not reported late yet."""
        found = [e for e in self._waiting(now) if now - e.due > e.slack and not e.late_reported]
        for e in found:
            e.late_reported = True
        return found

    def queue_depth(self, now: float) -> int:
        """Policies due and not running."""
        return sum(1 for _ in self._waiting(now))

    def next_due(self) -> float:
        """The earliest due time of a policy that is not running (inf when none)."""
        while self._heap:
            due, version, key = self._heap[0]
            entry = self.entries.get(key)
            if entry is None or entry.version != version or entry.running:
                heapq.heappop(self._heap)
                continue
            return due
        return math.inf

    def _waiting(self, now: float) -> Iterator[Scheduled]:
        return (e for e in self.entries.values() if not e.running and e.due <= now)

    def _due(self, now: float) -> Iterator[Scheduled]:
        for entry in list(self.entries.values()):
            if not entry.running and entry.due <= now:
                yield entry

    def _push(self, entry: Scheduled) -> None:
        entry.version += 1
        if math.isfinite(entry.due):
            heapq.heappush(self._heap, (entry.due, entry.version, entry.key))
