"""status.timings of a RecordPurge: marks to the millisecond, durations that sum to the
total, the total as the Took column shows it (the service tests run it through a purge)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kafka_retention.services.purge import timings

T = datetime(2026, 11, 28, 12, 0, 0, 123456, tzinfo=UTC)


def test_a_mark_has_milliseconds_in_utc() -> None:
    assert timings.stamp(T) == "2026-11-28T12:00:00.123Z"


@pytest.mark.parametrize(
    ("ms", "shown"), [(0, "0ms"), (850, "850ms"), (1_934, "1.93s"), (125_000, "2m05s")]
)
def test_took_reads_as_kubectl_get_shows_durations(ms: int, shown: str) -> None:
    assert timings.took(ms) == shown


def test_without_a_creation_time_the_total_counts_from_the_pick_up() -> None:
    marks = {"pickedUpAt": timings.stamp(T), "plannedAt": timings.stamp(T + timedelta(seconds=1))}
    done = timings.final(marks, None, T + timedelta(seconds=3))
    assert done["ms"] == {"planning": 1000, "reporting": 2000, "total": 3000}
    assert done["took"] == "3.00s"


def test_an_earlier_runs_completion_is_not_kept_as_a_mark() -> None:
    previous = {"pickedUpAt": "2026-11-28T12:00:00.000Z", "completedAt": "x", "ms": {}}
    kept = timings.Timings(previous, lambda: T)
    assert kept.marks == {"pickedUpAt": "2026-11-28T12:00:00.000Z"}
    with pytest.raises(ValueError, match="no stage"):
        kept.mark("startedAt")


def test_a_mark_that_is_not_a_time_is_dropped_and_the_purge_still_finishes() -> None:
    previous = {"pickedUpAt": "2026-11-28T12:00:00.000Z", "plannedAt": "yesterday", "x": "y"}
    kept = timings.Timings(previous, lambda: T)
    assert kept.marks == {"pickedUpAt": "2026-11-28T12:00:00.000Z"}
    done = timings.final(kept.marks, None, T)
    assert done["ms"] == {"reporting": 123, "total": 123}
