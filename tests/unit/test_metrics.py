"""The operator's own metric bookkeeping."""

from __future__ import annotations

from prometheus_client import Gauge

from kafka_retention import metrics


def series(gauge: Gauge) -> dict[tuple[str, ...], float]:
    """What a scrape would show of the gauge: label values -> value."""
    return {
        tuple(sample.labels.values()): sample.value
        for family in gauge.collect()
        for sample in family.samples
    }


def test_a_deleted_policys_gauges_go_and_other_policies_keep_theirs() -> None:
    metrics.UNREAD_AT_RISK.labels("team-a", "gone", "billing", "orders").set(60)
    metrics.TOMBSTONE_MARGIN.labels("team-a", "gone", "billing", "users").set(-5)
    metrics.ORPHAN_PARTITIONS.labels("team-a", "gone", "1").set(3)
    metrics.ORPHAN_BYTES.labels("team-a", "gone", "1").set(4096)
    metrics.BEHIND_SERIES.replace("team-a", "gone", {("billing", "consumer"): 12})
    metrics.UNREAD_AT_RISK.labels("team-a", "kept", "billing", "orders").set(30)
    metrics.ORPHAN_PARTITIONS.labels("team-b", "gone", "1").set(2)  # same name, other ns

    metrics.forget_policy("team-a", "gone")

    for gauge in (
        metrics.UNREAD_AT_RISK,
        metrics.TOMBSTONE_MARGIN,
        metrics.ORPHAN_PARTITIONS,
        metrics.ORPHAN_BYTES,
        metrics.GROUP_RECORDS_BEHIND,  # it used to stay at a deleted policy's last value
    ):
        assert not [k for k in series(gauge) if k[:2] == ("team-a", "gone")], gauge
    assert series(metrics.UNREAD_AT_RISK)[("team-a", "kept", "billing", "orders")] == 30
    assert series(metrics.ORPHAN_PARTITIONS)[("team-b", "gone", "1")] == 2


def test_a_policy_made_again_under_a_deleted_ones_name_starts_from_no_series() -> None:
    metrics.BEHIND_SERIES.replace("team-c", "again", {("old-group", "consumer"): 5})
    metrics.forget_policy("team-c", "again")
    metrics.BEHIND_SERIES.replace("team-c", "again", {("new-group", "classic"): 7})
    metrics.BEHIND_SERIES.replace("team-c", "again", {})

    assert not [k for k in series(metrics.GROUP_RECORDS_BEHIND) if k[:2] == ("team-c", "again")]
