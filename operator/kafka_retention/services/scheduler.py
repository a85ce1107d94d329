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
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


def slack_for(interval_s: float) -> float:
    """How late a run may start before the policy says it is late: a quarter of its
    interval, at least 30 s (a batch's own planning time) and at most 10 minutes."""
    return min(600.0, max(30.0, interval_s / 4))


@dataclass
class Entry:
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

    @property
    def slack(self) -> float:
        return slack_for(self.interval_s)


@dataclass
class Scheduler:
    window: float = 5.0
    entries: dict[str, Entry] = field(default_factory=dict)
    _heap: list[tuple[float, int, str]] = field(default_factory=list)
    _busy: set[Hashable] = field(default_factory=set)

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
            entry = Entry(key, cluster, interval_s, generation, body, due)
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

    def take(self, now: float) -> list[list[Entry]]:
        """Batches to start now: per cluster without a batch in flight, every policy due
        now or within the window. They are marked running until `finish`."""
        due_now: set[Hashable] = set()
        for entry in self._due(now):
            if entry.cluster not in self._busy:
                due_now.add(entry.cluster)
        batches = []
        for cluster in sorted(due_now, key=str):
            batch = [
                e
                for e in self.entries.values()
                if e.cluster == cluster and not e.running and e.due <= now + self.window
            ]
            for e in batch:
                e.running = True
            self._busy.add(cluster)
            batches.append(sorted(batch, key=lambda e: e.key))
        return batches

    def finish(self, cluster: Hashable, outcomes: Mapping[str, float], now: float) -> None:
        """A batch ended: each policy is due again `next_run_in` seconds from now
        (inf: not until its spec changes)."""
        self._busy.discard(cluster)
        for key, next_run_in in outcomes.items():
            entry = self.entries.get(key)
            if entry is None:
                continue
            entry.running = False
            entry.late_reported = False
            entry.due = now if entry.changed else now + next_run_in
            entry.changed = False
            self._push(entry)

    def late(self, now: float) -> list[Entry]:
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

    def _waiting(self, now: float) -> Iterator[Entry]:
        return (e for e in self.entries.values() if not e.running and e.due <= now)

    def _due(self, now: float) -> Iterator[Entry]:
        for entry in list(self.entries.values()):
            if not entry.running and entry.due <= now:
                yield entry

    def _push(self, entry: Entry) -> None:
        entry.version += 1
        if math.isfinite(entry.due):
            heapq.heappush(self._heap, (entry.due, entry.version, entry.key))
