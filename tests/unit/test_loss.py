"""core.loss: which records a watched group lost, by cause, each reported once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, cast

from kafka_retention.core import loss
from kafka_retention.core import tombstones as ts
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_row import GroupImpactRow, PlanRow, TombstoneRow
from kafka_retention.core.policy import RetentionRules
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.purge_ledger import (
    OTHER_NAMESPACE_PURGE,
    RECORD_PURGE,
    PurgeLedger,
    purge_done,
)
from kafka_retention.services.watch import loss as loss_watch

TP = TopicPartition("t", 3)


def ext(_tp: TopicPartition) -> str:
    return loss.EXTERNAL


def test_loss_is_the_gap_between_the_committed_offset_and_the_log_start() -> None:
    found, cursor = loss.detect(
        [loss.Observed(TP, 50, {"a": 20, "b": 50, "c": None})], ["a", "b", "c"], {}, {}, ext
    )
    assert [(x.group, x.from_offset, x.to_offset, x.records) for x in found] == [("a", 20, 50, 30)]
    assert cursor == {("a", "t", 3): 50}


def test_a_range_already_reported_is_not_reported_again() -> None:
    found, cursor = loss.detect(
        [loss.Observed(TP, 50, {"a": 20})], ["a"], {("a", "t", 3): 50}, {}, ext
    )
    assert found == []
    assert cursor == {("a", "t", 3): 50}


def test_a_loss_is_split_between_an_earlier_cause_and_this_runs_own_cut() -> None:
    found, _ = loss.detect(
        [loss.Observed(TP, 80, {"a": 20})],
        ["a"],
        {},
        {TP: loss.OwnCut(before=35, after=80, rule="deleteBefore")},
        ext,
    )
    assert [(x.from_offset, x.to_offset, x.cause) for x in found] == [
        (20, 35, "external"),
        (35, 80, "deleteBefore"),
    ]


def test_time_retention_is_plausible_only_for_records_past_the_retention_boundary() -> None:
    now = 10_000_000
    config = {"cleanup.policy": "delete", "retention.ms": "60000"}
    assert loss.broker_retention_plausible(config, now - 61_000, now)
    assert not loss.broker_retention_plausible(config, now - 59_000, now)
    assert not loss.broker_retention_plausible({"retention.ms": "-1"}, now - 10**9, now)
    assert loss.broker_retention_plausible({"retention.bytes": "1000"}, now, now)
    assert not loss.broker_retention_plausible(
        {"cleanup.policy": "compact", "retention.bytes": "1000"}, now, now
    )


def test_the_cursor_survives_its_status_form() -> None:
    cursor = {("a", "t", 0): 5, ("a", "t", 12): 900, ("b/x", "u", 1): 3}
    encoded = loss.encode_cursor(cursor)
    assert encoded[0] == {"group": "a", "topic": "t", "reportedTo": "0:5,12:900"}
    assert loss.decode_cursor(encoded) == cursor


def test_time_left_is_the_first_window_whose_boundary_passed_the_next_unread_record() -> None:
    # offsets_at[w]: first offset whose timestamp is at or after now - retention + w.
    offsets_at = {0: 10, 900: 30, 1800: 50, 2700: 70, 3600: 90}
    assert loss.time_left(5, offsets_at) == 0  # already older than the boundary
    assert loss.time_left(40, offsets_at) == 1800
    assert loss.time_left(95, offsets_at) is None  # out of the window
    # No record as recent as a boundary: every record is older, all within it.
    assert loss.time_left(95, {0: 10, 900: None}) == 900


def test_the_nearest_time_retention_decides_and_none_without_one() -> None:
    deleting = {"cleanup.policy": "delete", "retention.ms": "7200000"}
    none = RetentionRules(consumed_groups=("g",), delete_before_ms=0)
    assert loss.retention_of(deleting, none) == (7_200_000, "brokerRetention")
    capped = RetentionRules(max_retention_ms=3_600_000)
    assert loss.retention_of(deleting, capped) == (3_600_000, "maxRetention")
    assert loss.retention_of({"cleanup.policy": "compact", "retention.ms": "1"}, none) is None
    assert loss.retention_of({"retention.ms": "-1"}, none) is None
    assert loss.windows(3_600_000) == (0, 900_000, 1_800_000, 2_700_000, 3_600_000)


def test_tombstone_risk_starts_at_the_warn_share_and_the_raise_is_capped() -> None:
    c0 = TopicPartition("c", 0)
    lags = {("a", c0): 79, ("b", c0): 80, ("c", c0): 120}
    risks = ts.at_risk(lags, {"c": 100}, warn_percent=80)
    assert [(r.group, r.margin_ms) for r in risks] == [("c", -20), ("b", 20)]
    minute = ts.MINUTE_MS
    # 80 minutes of lag sits at half of 80% of 200 minutes.
    assert ts.raised_delete_retention(60 * minute, 80 * minute, 80, 1000 * minute) == 200 * minute
    assert ts.raised_delete_retention(60 * minute, 80 * minute, 80, 90 * minute) == 90 * minute
    assert ts.raised_delete_retention(200 * minute, 80 * minute, 80, 1000 * minute) is None
    assert ts.raised_delete_retention(300 * minute, 80 * minute, 80, 1000 * minute) is None


def test_a_growing_lag_raises_delete_retention_once_per_doubling_not_every_run() -> None:
    """A stuck group's lag grows by a minute a run: after one raise it is out of risk
    until its lag has doubled."""
    minute, c0 = ts.MINUTE_MS, TopicPartition("c", 0)
    retention, raises = 60 * minute, 0
    for lag in range(48 * minute, 400 * minute, minute):
        if ts.at_risk({("g", c0): lag}, {"c": retention}, warn_percent=80):
            target = ts.raised_delete_retention(retention, lag, 80, 10_000 * minute)
            assert target is not None
            assert target > retention
            retention, raises = target, raises + 1
    # At 48 min -> 120 (the lag at 40%), at 96 -> 240, 192 -> 480, 384 -> 960: four
    # raises over 352 runs.
    assert (raises, retention) == (4, 960 * minute)


def test_the_tombstone_inventory_folds_partitions_and_puts_the_nearest_to_expiry_first() -> None:
    def row(topic: str, read: int, found: int, age: int | None) -> TombstoneRow:
        return TombstoneRow(
            topic, 0, records_read=read, tombstones=found, oldest_tombstone_age_ms=age
        )

    rows = [
        row("a", 10, 2, 100),
        row("a", 20, 1, 300),
        row("b", 5, 1, 50),
        row("none", 7, 0, None),
        row("not-compacted", 9, 9, 999),
    ]
    found = ts.fold_inventory(rows, {"a": 1000, "b": 100, "none": 1000})
    # b's oldest has 50 ms left, a's 700; a topic without tombstones comes last.
    assert [
        (t.topic, t.partitions, t.records_scanned, t.tombstones, t.oldest_age_ms) for t in found
    ] == [
        ("b", 1, 5, 1, 50),
        ("a", 2, 30, 3, 300),
        ("none", 1, 7, 0, None),
    ]


class NoKafka:
    """Nothing to read: the ledger names the cause and no group has unread records."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} was not expected")


def test_a_loss_caused_by_another_namespaces_purge_does_not_name_it() -> None:
    """A tenant's RecordPurge on a shared cluster causes another tenant's loss: the loss
    is blamed on a RecordPurge, but the victim's status and events never learn the
    purging namespace or the purge's name."""
    ledger = PurgeLedger()
    purge = {
        "metadata": {"namespace": "secret-ops", "name": "wipe-payroll"},
        "spec": {"cluster": {"bootstrapServers": "k:9092"}},
        "status": {
            "completedAt": "2026-11-22T12:00:00Z",
            "results": [{"topic": "t", "partition": 3, "state": "Purged", "lowWatermark": 40}],
        },
    }
    ledger.put("secret-ops/wipe-payroll", purge_done(purge))
    spec = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "notify": {"groups": ["slow"]},
        }
    )
    row = PlanRow(
        "t",
        3,
        log_start_offset=40,
        high_watermark=100,
        groups=(GroupImpactRow("slow", 10, 0),),
    )
    finished = datetime(2026, 11, 22, 12, 5, tzinfo=UTC)

    def run(namespace: str) -> tuple[Any, dict[str, Any]]:
        report = loss_watch.watch(
            spec, {}, [row], {}, cast(Any, NoKafka()), finished, ledger, "k:9092", namespace
        )
        assert report is not None
        (lost,) = report.new
        return lost, report.status

    lost, status = run("team")
    assert (lost.cause, lost.by) == (RECORD_PURGE, OTHER_NAMESPACE_PURGE)
    text = json.dumps(status)
    assert "secret-ops" not in text
    assert "wipe-payroll" not in text
    assert status["losses"][0]["recordPurge"] == "a RecordPurge in another namespace"
    # The purging namespace's own policy sees its purge by name.
    lost, status = run("secret-ops")
    assert status["losses"][0]["recordPurge"] == "secret-ops/wipe-payroll"
