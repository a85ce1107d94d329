"""Every RetentionPolicy of the operator, run by one scheduler in the operator's event
loop: no thread or task per policy, a bounded pool of workers for batches.

The loop wakes at least once a second, starts the batches the scheduler hands out (one
per cluster, no more than workers are free, namespaces in turn: services.scheduler),
marks policies that wait past their slack as late (a condition), and reports queue
depth, running and lateness as they change (`FleetReport`: the handler layer turns each
report into metrics and events; no service emits them). A batch waiting for a worker is
not running: its policies count in the queue depth and are reported late past their slack.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Protocol

from kafka_retention.core.durations import parse_duration_ms
from kafka_retention.core.failures import Abandoned, WriteRefused
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.leadership import Leadership
from kafka_retention.services.policy.batches import Due, Environment, parse, run_batch
from kafka_retention.services.policy.run import PolicyRun, RunOutcome, set_schedule
from kafka_retention.services.ports import PolicyStore, PolicyStores
from kafka_retention.services.scheduler import Scheduled, Scheduler

log = logging.getLogger(__name__)


class FleetReport(Protocol):
    """What the fleet says happened, for the handler layer to turn into events and
    metrics (handlers.retention.Reporting). The fleet calls it from the event loop, and
    `acting` from its constructor too."""

    def run(self, body: Mapping[str, Any], outcome: RunOutcome) -> None:
        """A policy's run ended (`body`: the policy as the fleet last heard of it)."""

    def acting(self, acting: bool) -> None:
        """Whether this replica runs the policies now (standalone: from the start)."""

    def policies(self, count: int) -> None:
        """How many policies the fleet schedules, after each change."""

    def tick(self, queue_depth: int, running: int, late: int) -> None:
        """An acting replica's loop went round: policies due and not started, policies
        running, and policies waiting past their slack."""

    def standing_by(self) -> None:
        """A standing-by replica's loop went round: it queues nothing."""

    def batch_started(self, late_by: Sequence[float]) -> None:
        """A batch started: how late (s) each of its policies starts."""

    def batch_ended(self, seconds: float) -> None:
        """A batch ended, however it ended, after `seconds`."""


def cluster_of(spec: Mapping[str, Any], namespace: str, per_namespace: bool) -> Hashable:
    """Policies batch together when they reach the same cluster the same way: the same
    bootstrap servers and client Secret (Secrets are namespaced), and in pod modes the
    same namespace (a run's ConfigMaps and pods live in one)."""
    cluster = spec.get("cluster") or {}
    binding = cluster.get("clusterRef")
    if binding is not None:
        # One KafkaClusterBinding is one connection whatever namespace names it; each
        # policy is still admitted on its own before the batch connects.
        return ("binding", str(binding), namespace if per_namespace else "")
    secret = cluster.get("clientConfigSecret")
    strimzi = cluster.get("strimzi")
    # A Strimzi reference is resolved per namespace (its Secrets are namespaced), and
    # through its listener and user: each distinct reference is its own connection.
    return (
        str(cluster.get("bootstrapServers", "")).strip(),
        secret or "",
        repr(sorted(strimzi.items())) if isinstance(strimzi, dict) else "",
        namespace if secret or strimzi or per_namespace else "",
    )


def interval_of(spec: Mapping[str, Any]) -> float:
    try:
        return parse_duration_ms(str(spec.get("interval", "5m"))) / 1000
    except ValueError:
        return 300.0


def _epoch(text: Any) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Fleet:
    def __init__(
        self,
        env: Environment,
        report: FleetReport,
        workers: int = 4,
        window: float = 5.0,
        per_namespace: bool = False,
        clock: Callable[[], float] = time.time,
        leadership: Leadership | None = None,
        resync: Callable[[], list[dict[str, Any]]] | None = None,
        check_every: float = 2.0,
        max_per_namespace: int | None = 200,
        *,
        status_store: PolicyStores,
    ) -> None:
        self.env, self.report, self.clock = env, report, clock
        self.status_store = status_store
        # With peering: whether this replica acts (asked every `check_every` seconds), and
        # every policy as the API server has it now, read when the replica starts acting.
        self.leadership, self.resync, self.check_every = leadership, resync, check_every
        self._acting = leadership is None
        self._checked = -math.inf
        report.acting(self._acting)  # standalone: the only replica acts
        self.per_namespace = per_namespace
        # At most `workers` batches in flight (the pool never queues one), namespaces in
        # turn; a batch on a cluster namespaces share takes at most `max_per_namespace`
        # of one namespace's due policies.
        workers = max(1, workers)
        self.scheduler = Scheduler(
            window=window, workers=workers, max_per_namespace=max_per_namespace
        )
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="policy")
        # Status chores (late marks) never queue behind busy batch workers.
        self.chores = ThreadPoolExecutor(max_workers=1, thread_name_prefix="policy-chores")
        # Each policy's spec, parsed once when the fleet hears of it (a SpecError: its
        # runs say so); batches take it from here.
        self.specs: dict[str, PolicySpec | SpecError] = {}
        self.stores: dict[str, PolicyStore] = {}
        self._wake = asyncio.Event()
        # Set by stop(): asyncio.wait_for (before Python 3.12) swallows a cancellation
        # that arrives as the event it waits for is set, so the loop checks this too.
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._batches: set[asyncio.Task[None]] = set()

    # --- what the API server says ------------------------------------------------------

    def upsert(self, body: Mapping[str, Any]) -> None:
        meta, spec = body.get("metadata") or {}, body.get("spec") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        key = f"{namespace}/{name}"
        self.specs[key] = parse(spec)
        status = body.get("status") or {}
        if key not in self.stores:
            self.stores[key] = self.status_store(namespace, name, status)
        generation = meta.get("generation")
        resume_at = (
            _epoch(status.get("nextRunAt"))
            if status.get("observedGeneration") == generation
            else None
        )
        self.scheduler.upsert(
            key,
            cluster_of(spec, namespace, self.per_namespace),
            interval_of(spec),
            generation,
            body,
            self.clock(),
            resume_at=resume_at,
        )
        self.report.policies(len(self.scheduler.entries))
        self._wake.set()

    def _forget(self) -> None:
        self.scheduler.forget_all()
        self.specs.clear()
        self.stores.clear()
        self.report.policies(0)

    def remove(self, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        self.scheduler.remove(key)
        self.specs.pop(key, None)
        self.stores.pop(key, None)
        self.report.policies(len(self.scheduler.entries))

    # --- the loop ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the loop in the current task's context (Kopf's event posting lives in
        context variables, so events the loop posts need the context of a handler)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self.env.spark is not None:
            self.env.spark.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for task in list(self._batches):
            task.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.chores.shutdown(wait=False, cancel_futures=True)

    async def _still_acting(self) -> bool:
        """Standalone: always. With peering: as the peering objects say, checked every
        few seconds. Standing by forgets every policy: Kopf's handlers are paused too and
        see no deletion meanwhile, so acting again starts from a fresh list instead."""
        if self.leadership is None or self.clock() - self._checked < self.check_every:
            return self._acting
        loop = asyncio.get_running_loop()
        self._checked = self.clock()
        acting = await loop.run_in_executor(self.chores, self.leadership.active)
        if acting and not self._acting:
            try:
                bodies = await loop.run_in_executor(self.chores, self.resync or list)
            except Exception:
                log.exception("could not list RetentionPolicies; standing by")
                return False
            self._forget()
            for body in bodies:
                self.upsert(body)
            log.info("acting: running %d RetentionPolicies", len(self.scheduler.entries))
        elif self._acting and not acting:
            log.info("standing by: %s", self.leadership.why)
            self._forget()
        self._acting = acting
        self.report.acting(acting)
        return acting

    async def _run(self) -> None:
        while not self._stopping:
            if not await self._still_acting():
                self.report.standing_by()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=self.check_every)
                self._wake.clear()
                continue
            now = self.clock()
            for batch in self.scheduler.take(now):
                task = asyncio.get_running_loop().create_task(self._batch(batch))
                self._batches.add(task)
                task.add_done_callback(self._batches.discard)
            late = self.scheduler.late(now)
            if late:
                await asyncio.get_running_loop().run_in_executor(
                    self.chores, self._say_late, late, now
                )
            entries = self.scheduler.entries.values()
            self.report.tick(
                self.scheduler.queue_depth(now),
                sum(1 for e in entries if e.running),
                sum(1 for e in entries if e.late_reported and not e.running),
            )
            wait = min(1.0, self.check_every, max(0.05, self.scheduler.next_due() - self.clock()))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=wait)

    def _say_late(self, late: list[Scheduled], now: float) -> None:
        """A policy that cannot start on time says so while it waits."""
        for entry in late:
            store = self.stores.get(entry.key)
            if store is None:
                continue
            run = PolicyRun(
                entry.key,
                store.status,
                entry.generation,
                store,
                lambda: datetime.now(UTC),
                late_by=now - entry.due,
                slack=entry.slack,
            )
            try:
                store.patch({"conditions": set_schedule(store.status.get("conditions"), run)})
            except WriteRefused:
                log.exception("could not mark %s late", entry.key)

    async def _batch(self, batch: list[Scheduled]) -> None:
        cluster = batch[0].cluster
        started = self.clock()
        due = []
        lateness = []
        for entry in batch:
            late_by = max(0.0, started - entry.due)
            lateness.append(late_by)
            store = self.stores[entry.key]
            meta = entry.body.get("metadata") or {}
            run = PolicyRun(
                entry.key,
                dict(store.status),
                entry.generation,
                store,
                lambda: datetime.now(UTC),
                late_by=late_by,
                slack=entry.slack,
            )
            raw = dict(entry.body.get("spec") or {})
            due.append(Due(run, raw, self.specs[entry.key], str(meta.get("uid", ""))))
        self.report.batch_started(lateness)
        others = {k: s for k, s in self.specs.items() if isinstance(s, PolicySpec)}
        outcomes: dict[str, RunOutcome] = {}
        try:
            outcomes = await asyncio.get_running_loop().run_in_executor(
                self.pool, run_batch, due, others, self.env, lambda: datetime.now(UTC)
            )
        except Abandoned as err:
            # Stopping: nothing was applied, and no status or event should say it failed.
            log.info("batch of %d policies left unfinished: %s", len(due), err)
            return
        except Exception as err:
            log.exception("batch of %d policies failed", len(due))
            outcomes = {
                d.run.key: RunOutcome(False, f"RunFailed: {err}", next_run_in=30.0) for d in due
            }
        finally:
            self.report.batch_ended(self.clock() - started)
            self.scheduler.finish(
                cluster,
                {
                    d.run.key: outcomes[d.run.key].next_run_in if d.run.key in outcomes else 30.0
                    for d in due
                },
                self.clock(),
            )
            self._wake.set()
        for entry in batch:
            outcome = outcomes.get(entry.key)
            if outcome is not None and entry.key in self.scheduler.entries:
                self.report.run(entry.body, outcome)
