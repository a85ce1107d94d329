"""What the policy fleet reports, and who turns it into metrics: the fleet (a service)
says what happened through its FleetReport; handlers.retention.Reporting sets the same
Prometheus series the fleet used to set itself. And a policy's spec is parsed once, when
the fleet hears of it, not again by each batch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kafka_retention.core import policy_spec
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.specs import SpecError
from kafka_retention.handlers.retention import Reporting
from kafka_retention.services.policy import batches
from kafka_retention.services.policy import fleet as fleet_module
from kafka_retention.services.policy.batches import Due, Environment, run_batch
from kafka_retention.services.policy.fleet import Fleet
from kafka_retention.services.policy.run import PolicyRun, RunOutcome
from tests.helpers.fakes import MemoryStore

NS = "fleet-reports"


def sample(metric: str, /, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


def body(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": NS, "name": name, "generation": 1, "uid": name},
        "spec": dict(spec),
    }


VALID = {
    "cluster": {"bootstrapServers": "k:9092"},
    "topics": {"names": ["t"]},
    "maxRetention": "1d",
    "interval": "1h",
}


def no_cluster() -> Environment:
    def unreachable(*_: Any) -> Any:
        raise KafkaUnavailable("no broker in a unit test")

    return Environment(connection=lambda s, n: ("k:9092", {}), connect=unreachable, spark=None)


async def until(done: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + 20
    while not done():
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)


def test_a_batchs_run_is_counted_in_the_scheduler_metrics_the_handler_layer_sets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[list[str]] = []

    def fake_batch(due: Sequence[Due], *_: Any) -> dict[str, RunOutcome]:
        ran.append([d.run.key for d in due])
        return {
            d.run.key: RunOutcome(
                True, "ok", next_run_in=3600, partitions_cut=2, bytes_reclaimed=300
            )
            for d in due
        }

    monkeypatch.setattr(fleet_module, "run_batch", fake_batch)
    batches_before = sample("kafka_retention_batch_policies_count")
    sizes_before = sample("kafka_retention_batch_policies_sum")
    late_before = sample("kafka_retention_policy_start_lateness_seconds_count")
    runs_before = sample("kafka_retention_run_duration_seconds_count", kind="RetentionPolicy")
    fleet = Fleet(no_cluster(), Reporting(), window=0, status_store=MemoryStore)

    async def scenario() -> None:
        fleet.upsert(body("a", VALID))
        fleet.upsert(body("b", VALID))
        assert sample("kafka_retention_policies") == 2
        fleet.start()
        await until(
            lambda: bool(ran) and not any(e.running for e in fleet.scheduler.entries.values())
        )
        await asyncio.sleep(0.1)  # a tick after the batch ended
        assert sample("kafka_retention_scheduler_running") == 0
        assert sample("kafka_retention_scheduler_queue_depth") == 0
        fleet.remove(body("a", VALID))
        assert sample("kafka_retention_policies") == 1
        await fleet.stop()

    asyncio.run(scenario())
    assert ran == [[f"{NS}/a", f"{NS}/b"]]
    assert sample("kafka_retention_batch_policies_count") == batches_before + 1
    assert sample("kafka_retention_batch_policies_sum") == sizes_before + 2
    assert sample("kafka_retention_policy_start_lateness_seconds_count") == late_before + 2
    assert (
        sample("kafka_retention_run_duration_seconds_count", kind="RetentionPolicy")
        == runs_before + 1
    )
    # Each run's outcome, reported by the same handler layer.
    cut = {"kind": "RetentionPolicy", "namespace": NS}
    assert sample("kafka_retention_partitions_cut_total", name="a", **cut) == 2
    assert sample("kafka_retention_bytes_reclaimed_estimate_total", name="b", **cut) == 300


def test_a_standing_by_replica_reports_no_queue_and_not_acting() -> None:
    class StandingBy:
        why = "a peer acts"

        def active(self) -> bool:
            return False

    fleet = Fleet(
        no_cluster(),
        Reporting(),
        window=0,
        leadership=StandingBy(),  # type: ignore[arg-type]
        resync=list,
        check_every=0.02,
        status_store=MemoryStore,
    )
    assert sample("kafka_retention_acting") == 0

    async def scenario() -> None:
        fleet.upsert(body("due-now", VALID))
        fleet.start()
        await asyncio.sleep(0.2)
        assert sample("kafka_retention_scheduler_queue_depth") == 0
        await fleet.stop()

    asyncio.run(scenario())


def test_the_fleet_parses_a_policy_when_it_hears_of_it_and_its_batches_parse_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[Mapping[str, Any]] = []

    def counted(raw: Mapping[str, Any]) -> policy_spec.PolicySpec:
        parsed.append(raw)
        return policy_spec.parse_policy_spec(raw)

    monkeypatch.setattr(batches, "parse_policy_spec", counted)
    fleet = Fleet(no_cluster(), Reporting(), status_store=MemoryStore)
    fleet.upsert(body("good", VALID))
    fleet.upsert(body("bad", {**VALID, "topics": {}}))
    assert len(parsed) == 2
    good, bad = fleet.specs[f"{NS}/good"], fleet.specs[f"{NS}/bad"]
    assert good == policy_spec.parse_policy_spec(VALID)
    assert isinstance(bad, SpecError)
    assert bad.field == "spec.topics"

    now = datetime(2026, 11, 29, tzinfo=UTC)
    items = [
        Due(PolicyRun(f"{NS}/{name}", {}, 1, MemoryStore(), lambda: now), VALID, spec)
        for name, spec in (("good", good), ("bad", bad))
    ]
    outcomes = run_batch(items, {f"{NS}/good": good}, no_cluster(), lambda: now)
    assert len(parsed) == 2  # the batch ran on the fleet's parse
    assert outcomes[f"{NS}/bad"].invalid_field == "spec.topics"
    assert outcomes[f"{NS}/good"].reason == "KafkaUnavailable"
