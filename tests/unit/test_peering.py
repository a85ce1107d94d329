"""Which replica acts: Kopf's peering rule (core.peering), the hold before a replica acts
(services.leadership), and the policy scheduler standing by and resuming with it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kafka_retention.core.peering import Peering, auto_priority, blockers
from kafka_retention.handlers.retention import Reporting
from kafka_retention.services.leadership import Leadership
from kafka_retention.services.policy import fleet as fleet_module
from kafka_retention.services.policy.batches import Due, Environment
from kafka_retention.services.policy.fleet import Fleet
from kafka_retention.services.policy.run import RunOutcome
from tests.helpers.fakes import MemoryStore, Unreported

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
ME = Peering("kr", "me", priority=100, lifetime_s=10, clusterwide=True)


def record(priority: int, seen_ago_s: float, lifetime: int = 10) -> dict[str, Any]:
    return {
        "priority": priority,
        "lifetime": lifetime,
        "lastseen": (NOW - timedelta(seconds=seen_ago_s)).isoformat(),
    }


def test_a_live_peer_with_a_higher_or_the_same_priority_pauses_this_replica() -> None:
    status = {
        "me": record(100, 0),
        "older": record(101, 2),
        "twin": record(100, 2),
        "younger": record(99, 2),
    }
    assert blockers(status, ME, NOW) == ["older", "twin"]


def test_a_peer_silent_past_its_lifetime_no_longer_counts() -> None:
    status = {"me": record(100, 0), "gone": record(500, 10.5), "alive": record(500, 9.5)}
    assert blockers(status, ME, NOW) == ["alive"]


def test_a_record_this_replica_cannot_read_pauses_it() -> None:
    """Resuming on a record it cannot read could put two replicas to work at once."""
    status: dict[str, Any] = {
        "no-time": {"priority": 1, "lifetime": 10},
        "naive-time": {"priority": 1, "lastseen": "2026-11-23T11:59:59"},
        "word-priority": {"priority": "high", "lastseen": NOW.isoformat()},
        "not-a-record": "x",
        "left": None,  # Kopf's own mark of a replica that stopped cleanly
    }
    assert blockers(status, ME, NOW) == ["naive-time", "no-time", "not-a-record", "word-priority"]


def test_an_older_replica_gets_the_higher_priority_and_twins_differ() -> None:
    rng = random.Random(7)  # noqa: S311 - a seeded sequence, not a secret
    started = 1_795_000_000_000
    assert auto_priority(started, rng) > auto_priority(started + 1, rng)
    twins = {auto_priority(started, rng) for _ in range(50)}
    assert len(twins) > 1
    assert all(p < 2**53 for p in twins)  # exact as a JSON double


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def test_a_replica_acts_only_once_its_own_record_has_been_visible_for_the_hold() -> None:
    clock = Clock()
    objects: dict[str, Any] = {"status": {}}
    lead = Leadership(ME, lambda name, ns: objects, clock, hold_s=5)
    assert not lead.active()
    assert "own record" in lead.why
    objects["status"] = {"me": record(100, 0)}
    assert not lead.active()  # just seen: peers started with it may not show yet
    clock.now += timedelta(seconds=4)
    assert not lead.active()
    clock.now += timedelta(seconds=1)
    assert lead.active()
    objects["status"]["older"] = {**record(200, 0), "lastseen": clock.now.isoformat()}
    assert not lead.active()
    assert "older" in lead.why


def test_an_unreadable_peering_object_means_standing_by() -> None:
    def broken(name: str, namespace: str | None) -> Mapping[str, Any] | None:
        raise OSError("connection refused")

    lead = Leadership(ME, broken, Clock(), hold_s=0)
    assert not lead.active()
    assert "unreadable" in lead.why


def test_a_namespaced_replica_needs_every_namespace_clear() -> None:
    me = Peering("kr", "me", 100, 10, clusterwide=False, namespaces=("a", "b"))
    objects = {
        "a": {"status": {"me": record(100, 0)}},
        "b": {"status": {"me": record(100, 0), "other": record(300, 1)}},
    }
    lead = Leadership(me, lambda name, ns: objects[str(ns)], Clock(), hold_s=0)
    assert not lead.active()
    assert "namespace b" in lead.why


# --- the scheduler follows the replica's role ------------------------------------------


class Role:
    def __init__(self) -> None:
        self.acting = False
        self.why = "a peer acts"

    def active(self) -> bool:
        return self.acting


def body(name: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "generation": 1, "uid": name},
        "spec": {"cluster": {"bootstrapServers": "k:9092"}, "interval": "1h"},
    }


def test_a_standing_by_replica_runs_nothing_and_resumes_from_a_fresh_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kopf delivers no deletion while paused: a policy deleted meanwhile must not run
    when this replica takes over. The scheduler forgets everything on standing by and
    starts from the API server's list when it acts again."""
    ran: list[str] = []

    def run_batch(due: Sequence[Due], *_: Any) -> dict[str, RunOutcome]:
        ran.extend(d.run.key for d in due)
        return {d.run.key: RunOutcome(True, "ok", next_run_in=3600) for d in due}

    monkeypatch.setattr(fleet_module, "run_batch", run_batch)
    role = Role()
    listed = [body("kept")]
    env = Environment(connection=lambda s, n: ("", {}), connect=lambda b, c: None, spark=None)  # type: ignore[arg-type,return-value]
    fleet = Fleet(
        env,
        Unreported(),
        window=0,
        leadership=role,  # type: ignore[arg-type]
        resync=lambda: listed,
        check_every=0.02,
        status_store=MemoryStore,
    )

    async def until(done: Callable[[], bool]) -> None:
        # Waits on the fleet rather than on the clock: the unit tests run niced beside
        # the whole stack, where 0.3 s was once not enough for a loop of 0.02 s.
        deadline = asyncio.get_running_loop().time() + 20
        while not done():
            assert asyncio.get_running_loop().time() < deadline, ran
            await asyncio.sleep(0.02)

    async def scenario() -> None:
        fleet.upsert(body("kept"))
        fleet.upsert(body("deleted-while-paused"))
        fleet.start()
        await asyncio.sleep(0.3)
        assert ran == []  # standing by from the start
        role.acting = True
        await until(lambda: bool(ran))
        assert ran == ["ns/kept"]
        role.acting = False
        await until(lambda: fleet.scheduler.entries == {})
        listed.append(body("new"))
        role.acting = True
        await until(lambda: len(ran) >= 3)
        await fleet.stop()

    asyncio.run(scenario())
    assert ran == ["ns/kept", "ns/kept", "ns/new"]


def test_the_acting_gauge_says_which_replica_runs_the_policies() -> None:
    env = Environment(connection=lambda s, n: ("", {}), connect=lambda b, c: None, spark=None)  # type: ignore[arg-type,return-value]
    Fleet(env, Reporting(), leadership=Role(), resync=list, status_store=MemoryStore)  # type: ignore[arg-type]
    assert REGISTRY.get_sample_value("kafka_retention_acting") == 0  # peered: not yet
    Fleet(env, Reporting(), status_store=MemoryStore)
    assert REGISTRY.get_sample_value("kafka_retention_acting") == 1  # standalone
