"""Namespaces share the operator's workers fairly: one namespace's backlog delays another
namespace's policy by a turn, never by the backlog. Simulated time, as in
test_scheduler, and one run of the real Fleet loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import kopf
import pytest

from kafka_retention.handlers import purge as purge_handler
from kafka_retention.handlers.common import Created
from kafka_retention.services.fair_slots import FairSlots
from kafka_retention.services.policy import fleet as fleet_module
from kafka_retention.services.policy.batches import Due, Environment
from kafka_retention.services.policy.fleet import Fleet, cluster_of
from kafka_retention.services.policy.run import RunOutcome
from kafka_retention.services.scheduler import Scheduled, Scheduler, interleave_namespaces
from tests.helpers.fakes import MemoryStore, Unreported


def add(s: Scheduler, key: str, cluster: str, interval: float = 60, due: float = 0) -> None:
    s.upsert(key, cluster, interval, 1, {}, now=due)


def keys(batch: list[Scheduled]) -> list[str]:
    return [e.key for e in batch]


@pytest.mark.parametrize("late_name", ["b", "0-first-alphabetically"])
@pytest.mark.parametrize("added_last", [True, False])
def test_one_due_policy_starts_in_the_first_round_beside_a_thousand_of_another(
    late_name: str, added_last: bool
) -> None:
    """Namespace a: 1,000 due policies, each on a cluster of its own (a Secret each, say).
    Namespace b: one. Four workers: b's policy is in the first four batches, whatever
    the names sort as and whichever came first."""
    s = Scheduler(window=5, workers=4, max_per_namespace=200)
    if not added_last:
        add(s, f"{late_name}/only", "c-b")
    for i in range(1000):
        add(s, f"a/p{i:04d}", f"c-a-{i:04d}")
    if added_last:
        add(s, f"{late_name}/only", "c-b")
    first = s.take(now=0)
    assert len(first) == 4
    assert [f"{late_name}/only"] in [keys(b) for b in first]
    assert s.take(now=0) == []  # every worker busy


def test_namespaces_take_one_batch_each_per_turn() -> None:
    """Three small namespaces beside a big one, four workers: one batch each in the first
    round; the big namespace gets the fourth, not three."""
    s = Scheduler(window=5, workers=4)
    for i in range(1000):
        add(s, f"big/p{i:04d}", f"c-big-{i:04d}")
    for ns in ("x", "y", "z"):
        add(s, f"{ns}/only", f"c-{ns}")
    first = [keys(b) for b in s.take(now=0)]
    assert sorted(first) == [["big/p0000"], ["x/only"], ["y/only"], ["z/only"]]


def test_on_a_cluster_namespaces_share_a_batch_holds_a_bounded_share_of_each() -> None:
    """A cluster-scoped binding puts both namespaces on one cluster key: b's policy is in
    the first batch, second in line, beside 200 of a's; a's backlog runs in the next
    batches, earliest due first, none of them starved."""
    s = Scheduler(window=5, workers=4, max_per_namespace=200)
    for i in range(1000):
        add(s, f"a/p{i:04d}", "shared", due=i / 1000)
    add(s, "b/only", "shared", due=0.5)
    (batch,) = s.take(now=1)
    assert len(batch) == 201
    assert keys(batch)[:2] == ["a/p0000", "b/only"]
    ran = set(keys(batch))
    now = 1.0
    while len(ran) < 1001:
        s.finish("shared", dict.fromkeys(keys(batch), 60), now=now)
        (batch,) = s.take(now=now)
        assert len(batch) <= 200
        assert not ran & set(keys(batch))  # each once
        ran |= set(keys(batch))
        now += 10
    assert now == 41.0  # four more batches of 200


def test_a_cluster_only_one_namespace_uses_keeps_its_whole_batch() -> None:
    s = Scheduler(window=5, workers=4, max_per_namespace=200)
    for i in range(1000):
        add(s, f"a/p{i:04d}", "alone")
    (batch,) = s.take(now=0)
    assert len(batch) == 1000  # as before namespaces took turns
    # Another namespace's policy on it, even one not due yet, makes it shared.
    s = Scheduler(window=5, workers=4, max_per_namespace=200)
    for i in range(1000):
        add(s, f"a/p{i:04d}", "alone")
    add(s, "b/later", "alone", due=3600)
    (batch,) = s.take(now=0)
    assert len(batch) == 200


def test_namespaces_take_turns_least_recently_served_first() -> None:
    s = Scheduler(window=0, workers=1)
    for i in range(3):
        add(s, f"a/p{i}", f"a{i}")
    for i in range(2):
        add(s, f"b/p{i}", f"b{i}")
    add(s, "c/p0", "c0")
    order = []
    now = 0.0
    while True:
        batches = s.take(now)
        if not batches:
            break
        (batch,) = batches
        order.append(batch[0].key.split("/")[0])
        s.finish(batch[0].cluster, {e.key: 3600 for e in batch}, now=now)
        now += 1
    assert order == ["a", "b", "c", "a", "b", "a"]


def test_the_last_free_worker_waits_for_a_namespace_with_nothing_in_flight() -> None:
    """a's batches may take an hour each (a Spark job): it never holds every worker while
    another namespace has policies, so b's policy starts when due, not an hour later."""
    s = Scheduler(window=0, workers=2)
    for i in range(10):
        add(s, f"a/p{i}", f"a{i}")
    add(s, "b/p", "b", due=100)
    assert len(s.take(now=0)) == 1  # one worker kept
    assert s.take(now=50) == []
    assert [keys(b) for b in s.take(now=100)] == [["b/p"]]
    # Alone, a namespace uses every worker.
    alone = Scheduler(window=0, workers=2)
    for i in range(10):
        add(alone, f"a/p{i}", f"a{i}")
    assert len(alone.take(now=0)) == 2
    # A namespace whose only policy waits for a new spec (an invalid one) keeps nothing.
    s = Scheduler(window=0, workers=2)
    for i in range(10):
        add(s, f"a/p{i}", f"a{i}")
    add(s, "b/broken", "b")
    (_batch,) = [b for b in s.take(now=0) if keys(b) == ["b/broken"]]
    s.finish("b", {"b/broken": float("inf")}, now=1)
    assert len(s.take(now=1)) == 1  # a's second batch: b will not run


def test_policies_waiting_for_a_worker_are_late_past_their_slack() -> None:
    """Not running until a worker starts them: they count in the queue and say late."""
    s = Scheduler(window=0, workers=1)
    add(s, "a/p0", "c0")
    add(s, "a/p1", "c1")
    s.take(now=0)
    assert s.queue_depth(now=1) == 1
    assert [e.key for e in s.late(now=31)] == ["a/p1"]


def test_over_half_an_hour_a_small_namespace_is_never_late_beside_a_busy_one() -> None:
    """Namespace a: 1,000 policies on 100 clusters, every minute, batches of 1 s plus
    0.2 s a policy (3 s for ten): four workers are not enough, so a's runs are late.
    Namespace b: three policies on a cluster of their own, also every minute. Without
    turns b's batch queued behind a's 100 (75 s); with them it waits for no batch."""
    s = Scheduler(window=5, workers=4, max_per_namespace=200)
    intervals: dict[str, float] = {}
    for i in range(1000):
        intervals[f"a/p{i:04d}"] = 60
        add(s, f"a/p{i:04d}", f"a{i % 100}", due=(i % 60) / 2)
    for i in range(3):
        intervals[f"b/p{i}"] = 60
        add(s, f"b/p{i}", "b", due=i * 7)
    in_flight: list[tuple[float, Any, list[str]]] = []
    waited: dict[str, float] = {"a": 0.0, "b": 0.0}
    runs = {"a": 0, "b": 0}
    now = 0.0
    while now < 1800:
        for end, cluster, members in [b for b in in_flight if b[0] <= now]:
            in_flight.remove((end, cluster, members))
            s.finish(cluster, {k: intervals[k] for k in members}, now=end)
        for batch in s.take(now):
            assert len(in_flight) < 4
            for e in batch:
                ns = e.key.split("/")[0]
                waited[ns] = max(waited[ns], now - e.due)
                runs[ns] += 1
            in_flight.append((now + 1 + 0.2 * len(batch), batch[0].cluster, keys(batch)))
        now += 0.25
    assert waited["a"] > 60  # the busy namespace is behind, and says so
    assert waited["b"] <= 0.25  # one tick of this simulation
    assert runs["b"] >= 3 * 29


def test_a_batch_shared_by_namespaces_interleaves_them() -> None:
    assert interleave_namespaces(["b/1", "a/2", "a/1", "b/2", "c/1", "a/3"]) == [
        "a/1",
        "b/1",
        "c/1",
        "a/2",
        "b/2",
        "a/3",
    ]


def test_namespaces_naming_one_binding_share_a_cluster_key() -> None:
    def spec(**cluster: Any) -> dict[str, Any]:
        return {"cluster": cluster}

    assert cluster_of(spec(clusterRef="prod"), "a", False) == cluster_of(
        spec(clusterRef="prod"), "b", False
    )
    assert cluster_of(spec(clusterRef="prod"), "a", False) != cluster_of(
        spec(clusterRef="staging"), "a", False
    )
    # In pod modes a run's objects live in one namespace: one key per namespace.
    assert cluster_of(spec(clusterRef="prod"), "a", True) != cluster_of(
        spec(clusterRef="prod"), "b", True
    )


def test_the_fleet_starts_no_more_batches_than_workers_and_namespaces_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[list[str]] = []
    running = {"now": 0, "most": 0}
    lock = threading.Lock()

    def run_batch(due: Sequence[Due], *_: Any) -> dict[str, RunOutcome]:
        with lock:
            started.append([d.run.key for d in due])
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        time.sleep(0.02)
        with lock:
            running["now"] -= 1
        return {d.run.key: RunOutcome(True, "ok", next_run_in=3600) for d in due}

    monkeypatch.setattr(fleet_module, "run_batch", run_batch)
    env = Environment(connection=lambda s, n: ("", {}), connect=lambda b, c: None, spark=None)  # type: ignore[arg-type,return-value]
    fleet = Fleet(env, Unreported(), workers=2, window=0, status_store=MemoryStore)

    def body(namespace: str, name: str, bootstrap: str) -> dict[str, Any]:
        return {
            "metadata": {"namespace": namespace, "name": name, "generation": 1},
            "spec": {"cluster": {"bootstrapServers": bootstrap}, "interval": "1h"},
        }

    async def scenario() -> None:
        for i in range(30):
            fleet.upsert(body("aa", f"p{i}", f"a{i}:9092"))
        fleet.upsert(body("zz", "only", "z:9092"))
        fleet.start()
        deadline = time.monotonic() + 20
        while len(started) < 31 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await fleet.stop()

    asyncio.run(scenario())
    assert len(started) == 31
    assert running["most"] <= 2
    assert ["zz/only"] in started[:2]


def _take_in_turn(slots: FairSlots, arrivals: Sequence[str], hold: int = 3) -> list[str]:
    """Each arrival (a namespace) waits for a slot, holds it `hold` loop turns; the order
    in which they got one."""
    order: list[str] = []

    async def one(namespace: str) -> None:
        async with slots.slot(namespace):
            order.append(namespace)
            for _ in range(hold):
                await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(one(ns) for ns in arrivals))

    asyncio.run(main())
    return order


def test_one_record_purge_goes_within_a_turn_of_a_hundred_of_another_namespace() -> None:
    """Namespace a creates 100 purges, then b one: two slots, b's is among the first
    four to run (a's two running, then a's next turn and b's), not the 101st."""
    order = _take_in_turn(FairSlots(2), ["a"] * 100 + ["b"])
    assert order.index("b") == 3
    assert order.count("a") == 100


def test_namespaces_waiting_for_purge_slots_take_them_in_turn() -> None:
    order = _take_in_turn(FairSlots(1), ["a"] * 5 + ["b"] * 3 + ["c"])
    assert order == ["a", "a", "b", "c", "a", "b", "a", "b", "a"]


def test_a_purge_that_stops_waiting_leaves_no_slot_taken() -> None:
    async def main() -> list[str]:
        slots = FairSlots(1)
        got: list[str] = []
        async with slots.slot("a"):
            waiting = asyncio.create_task(slots.slot("b").__aenter__())
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert slots.waiting == 0
        async with slots.slot("c"):
            got.append("c")
        return got

    assert asyncio.run(main()) == ["c"]


def test_a_purge_that_fails_frees_its_slot_for_the_next() -> None:
    async def main() -> list[str]:
        slots = FairSlots(1)
        ran: list[str] = []

        async def failing() -> None:
            async with slots.slot("a"):
                raise RuntimeError("Kafka down: retried later")

        async def next_one() -> None:
            async with slots.slot("b"):
                ran.append("b")

        results = await asyncio.gather(failing(), next_one(), return_exceptions=True)
        assert isinstance(results[0], RuntimeError)
        return ran

    assert asyncio.run(main()) == ["b"]


def test_the_purge_handler_runs_another_namespaces_purge_before_a_backlog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the handler itself: 40 purges of namespace a arrive, then one of b; b's
    starts a few places after the first PURGE_SLOTS (the threads that start them may
    race), not the 41st, whatever the worker threads."""
    started: list[str] = []
    lock = threading.Lock()

    def fake_purge(created: Created) -> None:
        with lock:
            started.append(created.namespace)
        time.sleep(0.005)

    monkeypatch.setattr(purge_handler, "_purge", fake_purge)
    memo = kopf.Memo()

    # The handler as Kopf calls it (the decorator types it as its callback protocol).
    handler = cast(Callable[..., Awaitable[None]], purge_handler.purge)

    async def arrive(namespace: str, i: int) -> None:
        body = kopf.Body({"metadata": {}, "spec": {}, "status": {}})
        await handler(
            body=body,
            spec=body.spec,
            status=body.status,
            meta=body.meta,
            namespace=namespace,
            name=f"p{i}",
            retry=0,
            memo=memo,
        )

    async def main() -> None:
        await asyncio.gather(*(arrive("a", i) for i in range(40)), arrive("b", 40))

    asyncio.run(main())
    assert len(started) == 41
    assert started.index("b") <= purge_handler.PURGE_SLOTS + 3
