"""core.loss: which records a watched group lost, by cause, each reported once."""

from __future__ import annotations

from kafka_retention.core import loss
from kafka_retention.core.facts import TopicPartition

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
