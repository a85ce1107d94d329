"""How long Kafka may take to erase a key, from a topic's config: compaction (bounded only
by max.compaction.lag.ms), retention (bounded unless retention.ms=-1), and whether a
RecordErasure's deadline is at risk, naming the config that puts it there."""

from __future__ import annotations

import pytest

from kafka_retention.core.conditions import Reason
from kafka_retention.core.erasure_deadlines import (
    CLEANER_BACKOFF_MS,
    RETENTION_CHECK_MS,
    Cleaning,
    deadline_condition,
    expected_compaction,
    expected_erasure,
    expected_retention,
)

SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000
T0 = 1_800_000_000_000  # a tombstone's (or last match's) timestamp


def compacted(**config: str) -> Cleaning:
    return Cleaning.from_config({"cleanup.policy": "compact", **config}, topic="users")


@pytest.mark.parametrize(
    ("config", "kind", "deletes"),
    [
        ({"cleanup.policy": "compact"}, "compacted", False),
        ({"cleanup.policy": "compact,delete"}, "compacted", True),
        ({"cleanup.policy": "delete,compact"}, "compacted", True),
        ({"cleanup.policy": "delete"}, "delete", True),
        ({}, "delete", True),
        ({"cleanup.policy": "delete", "remote.storage.enable": "true"}, "tiered", True),
        # Kafka never compacts tiered storage (kafka#19702): retention is all there is.
        ({"cleanup.policy": "compact", "remote.storage.enable": "true"}, "tiered", True),
    ],
)
def test_kind_follows_cleanup_policy_and_tiered_storage(
    config: dict[str, str], kind: str, deletes: bool
) -> None:
    cleaning = Cleaning.from_config(config)
    assert (cleaning.kind, cleaning.deletes) == (kind, deletes)


def test_timing_configs_are_read_and_kafka_defaults_fill_the_gaps() -> None:
    defaults = Cleaning.from_config({"cleanup.policy": "compact"})
    assert (defaults.segment_ms, defaults.min_lag_ms, defaults.max_lag_ms) == (7 * DAY, 0, None)
    assert (defaults.delete_retention_ms, defaults.retention_ms) == (DAY, 7 * DAY)
    assert defaults.min_dirty_ratio == 0.5
    described = Cleaning.from_config(
        {
            "cleanup.policy": "compact",
            "segment.ms": "1000",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "5",
            "max.compaction.lag.ms": "9223372036854775807",
            "delete.retention.ms": "2000",
            "retention.ms": "-1",
            "file.delete.delay.ms": "3",
        }
    )
    assert described.max_lag_ms is None
    assert described.retention_ms is None
    assert (described.segment_ms, described.min_lag_ms, described.delete_retention_ms) == (
        1000,
        5,
        2000,
    )
    assert (described.min_dirty_ratio, described.file_delete_delay_ms) == (0.01, 3)


def test_max_compaction_lag_caps_when_a_compacted_segment_rolls() -> None:
    assert compacted(**{"segment.ms": str(7 * DAY), "max.compaction.lag.ms": str(DAY)}).roll_ms == (
        DAY
    )
    assert compacted(**{"segment.ms": str(HOUR), "max.compaction.lag.ms": str(DAY)}).roll_ms == (
        HOUR
    )
    # Not on a delete topic: max.compaction.lag.ms means nothing there.
    delete = Cleaning.from_config({"segment.ms": str(7 * DAY), "max.compaction.lag.ms": str(DAY)})
    assert delete.roll_ms == 7 * DAY


def test_compaction_bounds_add_roll_lag_backoff_then_the_horizon_and_another_cleaning() -> None:
    c = compacted(
        **{
            "segment.ms": str(HOUR),
            "min.compaction.lag.ms": "0",
            "max.compaction.lag.ms": str(DAY),
            "delete.retention.ms": str(DAY),
            "file.delete.delay.ms": str(MINUTE),
        }
    )
    expected = expected_compaction(c, T0)
    first_cleaning = T0 + HOUR + DAY + CLEANER_BACKOFF_MS
    assert expected.values_erased_ms == first_cleaning + MINUTE
    second_cleaning = first_cleaning + DAY + HOUR + DAY + CLEANER_BACKOFF_MS
    assert expected.key_erased_ms == second_cleaning + MINUTE
    assert expected.topic == "users"
    assert "appended" in expected.note  # only while the topic keeps receiving writes


def test_min_compaction_lag_delays_a_cleaning_past_the_roll() -> None:
    c = compacted(
        **{
            "segment.ms": str(HOUR),
            "min.compaction.lag.ms": str(2 * DAY),
            "max.compaction.lag.ms": str(3 * DAY),
            "file.delete.delay.ms": "0",
        }
    )
    assert expected_compaction(c, T0).values_erased_ms == T0 + 2 * DAY + 3 * DAY + (
        CLEANER_BACKOFF_MS
    )


def test_unset_max_compaction_lag_leaves_compaction_unbounded() -> None:
    expected = expected_compaction(compacted(), T0)
    assert (expected.values_erased_ms, expected.key_erased_ms) == (None, None)
    assert expected.bound_by == "max.compaction.lag.ms"
    assert "max.compaction.lag.ms is not set on topic users" in expected.note


def test_compact_delete_topics_are_also_bounded_by_retention() -> None:
    c = compacted(**{"cleanup.policy": "compact,delete", "retention.ms": str(DAY)})
    expected = expected_compaction(c, T0)
    assert expected.key_erased_ms == T0 + c.roll_ms + DAY + RETENTION_CHECK_MS
    assert expected.bound_by == "retention.ms"


def test_retention_bound_is_last_match_plus_roll_plus_retention_plus_the_check() -> None:
    c = Cleaning.from_config({"segment.ms": str(HOUR), "retention.ms": str(DAY)}, topic="clicks")
    assert expected_retention(c, T0) == T0 + HOUR + DAY + RETENTION_CHECK_MS
    assert expected_erasure(c, T0).key_erased_ms == expected_retention(c, T0)
    forever = Cleaning.from_config({"retention.ms": "-1"}, topic="clicks")
    assert expected_retention(forever, T0) is None
    assert "retention.ms is -1 on topic clicks" in expected_erasure(forever, T0).note


def test_unbounded_compaction_puts_the_deadline_at_risk_naming_the_config() -> None:
    condition = deadline_condition(expected_compaction(compacted(), T0), T0, 30 * DAY)
    assert (condition.type, condition.status) == ("DeadlineAtRisk", "True")
    assert condition.reason == Reason.ERASURE_DEADLINE_AT_RISK
    assert "max.compaction.lag.ms" in condition.message
    assert "users" in condition.message


def test_a_thirty_day_deadline_is_met_with_a_one_day_lag_and_horizon() -> None:
    c = compacted(**{"max.compaction.lag.ms": str(DAY), "delete.retention.ms": str(DAY)})
    condition = deadline_condition(expected_compaction(c, T0), T0, 30 * DAY)
    assert (condition.status, condition.reason) == ("False", Reason.ERASURE_DEADLINE_MET)


def test_a_bound_past_the_deadline_names_the_topic_and_the_config_that_weighs_most() -> None:
    slow = compacted(
        **{
            "segment.ms": str(HOUR),
            "max.compaction.lag.ms": str(DAY),
            "delete.retention.ms": str(40 * DAY),
        }
    )
    fast = Cleaning.from_config({"retention.ms": str(DAY)}, topic="clicks")
    condition = deadline_condition(
        [expected_erasure(fast, T0), expected_compaction(slow, T0)], T0, 30 * DAY
    )
    assert (condition.status, condition.reason) == ("True", Reason.ERASURE_DEADLINE_AT_RISK)
    assert "topic users" in condition.message
    assert "delete.retention.ms" in condition.message
    assert "clicks" not in condition.message
