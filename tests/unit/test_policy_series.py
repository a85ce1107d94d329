"""A policy's gauge series are replaced at each run: what it no longer reports is gone."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from kafka_retention.metrics import PolicySeries


def series(registry: CollectorRegistry) -> dict[tuple[str, ...], float]:
    return {
        tuple(s.labels[k] for k in ("namespace", "name", "group", "topic")): s.value
        for family in registry.collect()
        for s in family.samples
    }


def test_a_series_the_policy_no_longer_sets_is_removed_and_other_policies_keep_theirs() -> None:
    registry = CollectorRegistry()
    gauge = Gauge("t_seconds", "test", ["namespace", "name", "group", "topic"], registry=registry)
    at_risk = PolicySeries(gauge)
    at_risk.replace("ns", "a", {("g1", "t"): 60.0, ("g2", "t"): 30.0})
    at_risk.replace("ns", "b", {("g1", "t"): 5.0})
    # Policy a's g2 caught up: its series goes, a's g1 is updated, b's is untouched.
    at_risk.replace("ns", "a", {("g1", "t"): 45.0})
    assert series(registry) == {("ns", "a", "g1", "t"): 45.0, ("ns", "b", "g1", "t"): 5.0}
    at_risk.replace("ns", "a", {})
    assert series(registry) == {("ns", "b", "g1", "t"): 5.0}
