"""The benchmark's pure parts: the growth fit, the plots' grouping of points, the
"where we are slower" section, the physical plan's exchange count, the policy fleet's
runs a minute and the policy run's cron reference."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bench import policies
from bench.common import Point, Row
from bench.planning import fit_growth
from bench.plots import by_figure, draw, is_line
from bench.run import slower_lines
from bench.synthetic import count_exchanges


def test_a_line_is_fitted_exactly() -> None:
    fit = fit_growth([1000, 10_000, 50_000], [1.2, 3.0, 11.0])
    assert fit is not None
    assert fit.slope == pytest.approx(0.0002)
    assert fit.intercept == pytest.approx(1.0)
    assert "2.00 s per 10k partitions" in fit.text()


def test_a_power_law_gives_its_exponent() -> None:
    xs = [1000.0, 10_000.0, 50_000.0]
    fit = fit_growth(xs, [3e-4 * x**1.5 for x in xs])
    assert fit is not None
    assert fit.exponent == pytest.approx(1.5)
    assert fit.scale == pytest.approx(3e-4)


def test_one_size_fits_nothing() -> None:
    assert fit_growth([1000, 1000], [1.0, 2.0]) is None
    assert fit_growth([1000], [1.0]) is None


def test_a_zero_time_has_no_power_law() -> None:
    fit = fit_growth([1, 2], [0.0, 1.0])
    assert fit is not None
    assert math.isnan(fit.exponent)


def _rows() -> list[Row]:
    return [
        Row("a", "", "", "", points=(Point("planning", "ours", 10_000, 3.0),)),
        Row(
            "b",
            "",
            "",
            "",
            points=(
                Point("planning", "ours", 1000, 1.0),
                Point("planning", "reference", 1000, 2.0),
                Point("scan", "ours", 1e6, 200.0, "records", "k rec/s"),
                Point("scan", "reference", 1e6, 300.0, "records", "k rec/s"),
            ),
            why="slower",
        ),
        Row("c", "", "", "", points=(Point("scan", "reference", 1e6, 300.0),)),
    ]


def test_points_group_by_figure_and_series_sorted_by_x() -> None:
    figures = by_figure(_rows())
    assert list(figures) == ["planning", "scan"]
    assert [p.x for p in figures["planning"]["ours"]] == [1000, 10_000]
    assert list(figures["planning"]) == ["ours", "reference"]
    assert len(figures["scan"]["reference"]) == 1  # the same reference, carried twice
    assert is_line(figures["planning"])
    assert not is_line(figures["scan"])


def test_a_png_per_figure(tmp_path: Path) -> None:
    written = draw(_rows(), tmp_path)
    assert [p.name for p in written] == ["planning.png", "scan.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written)


def test_only_rows_with_a_why_are_listed_as_slower() -> None:
    lines = slower_lines(_rows())
    assert lines[-1] == "- **b**: slower"
    assert sum(line.startswith("- ") for line in lines) == 1
    assert "Nowhere" in slower_lines([Row("d", "", "", "")])[-1]


def test_exchanges_counted_in_the_final_plan_only() -> None:
    plan = (
        "AdaptiveSparkPlan isFinalPlan=true\n"
        "+- == Final Plan ==\n"
        "   Exchange hashpartitioning(topic#1, 8)\n"
        "   BroadcastExchange HashedRelationBroadcastMode\n"
        "   ReusedExchange [a#1], Exchange hashpartitioning(topic#1, 8)\n"
        "+- == Initial Plan ==\n"
        "   Exchange hashpartitioning(topic#1, 8)\n"
    )
    assert count_exchanges(plan) == (1, 1)


def test_planning_rows_without_a_spark_figure() -> None:
    from bench.planning import Measured, rows

    done = [
        Measured(1000, [3.0, 3.2, 3.1], [0.5, 0.4, 0.6], [2.0, 2.1, 2.2], {"offsets": 0.2}, [], ""),
        Measured(10_000, [], [4.0, 4.2, 4.1], [6.0, 6.3, 6.1], {"offsets": 2.0}, [], ""),
    ]
    out = rows(done, ["50,000 partitions could not be made here (test)"])
    assert [p.series for p in out[1].points] == [
        "in process",
        "kafka-consumer-groups --describe x2",
    ]
    assert "cancelled" in out[1].ours
    assert "did not finish" in out[1].why
    assert "Spark plan job: too few sizes" in out[2].ours
    assert "50,000" in out[2].note
    assert out[0].why.startswith("The Spark job (3.1 s)")


def test_a_purge_over_half_the_reference_says_why_and_one_within_it_does_not() -> None:
    from bench.purge_scale import purge_why

    assert purge_why(0.5, 1.0, 2.0) == ""
    assert purge_why(0.32, 1.0, 2.0) == ""
    assert purge_why(1.72, 1.0, 2.0).startswith(
        "1.72x of kafka-delete-records against a goal of 0.5x"
    )


def test_a_slow_purge_says_how_much_of_the_machine_the_brokers_took() -> None:
    from bench.purge_scale import purge_why

    cores = os.cpu_count() or 1
    why = purge_why(0.9, brokers_cpu=1.5 * cores, seconds=2.0)
    assert f"The brokers used {1.5 * cores:.1f} CPU-s within the purge's 2.00 s, 75% of" in why


def test_a_scan_slower_than_the_reference_names_its_read_floor() -> None:
    from bench.scan import scan_why

    source = "Spark Kafka source, tombstone inventory"
    assert scan_why(source, 2.0, 2.3, 1.5) == ""
    why = scan_why(source, 3.4, 2.3, 2.5)
    assert "alone (count only) takes 2.5 s" in why
    assert "0.9 s is the aggregation" in why
    assert "count only" not in scan_why(source, 3.4, 2.3, None)


class _Clock:
    """A fake clock for the fleet's tick counter: sleeping moves it on."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _fleet_rate(monkeypatch: pytest.MonkeyPatch, phase: float, period: float) -> float:
    """The fleet's runs per minute when every policy runs in one burst each `period` s,
    the first `phase` s after the window opens."""
    clock = _Clock()
    count = "kafka_retention_policy_start_lateness_seconds_count"

    def scrape(port: int) -> dict[str, float]:
        bursts = 0 if clock.now < phase else 1 + int((clock.now - phase) // period)
        return {count: 5000.0 + policies.FLEET * bursts}

    monkeypatch.setattr(policies, "time", clock)
    monkeypatch.setattr(policies, "scrape", scrape)
    ticks = policies.fleet_ticks(0, {count: 5000.0}, 3)
    assert len(ticks) == 4
    return policies.runs_a_minute(ticks)


@pytest.mark.parametrize("phase", [1.0, 30.0, 59.0])
def test_a_fleet_that_keeps_its_interval_runs_once_a_minute_wherever_the_window_falls(
    monkeypatch: pytest.MonkeyPatch, phase: float
) -> None:
    """Runs over a 3-interval window gave 2 or 3 bursts depending on the phase: a fleet
    keeping up showed 662 runs a minute where it ran 1,000."""
    rate = _fleet_rate(monkeypatch, phase, policies.INTERVAL_S)
    assert rate == pytest.approx(policies.FLEET * 60 / policies.INTERVAL_S, rel=0.01)


def test_a_fleet_whose_ticks_stretch_shows_the_lower_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    rate = _fleet_rate(monkeypatch, 10.0, policies.INTERVAL_S * 1.5)
    assert rate == pytest.approx(policies.FLEET * 60 / (policies.INTERVAL_S * 1.5), rel=0.01)


DESCRIBED_FAST = """
Consumer group 'bench-fast' has no active members.

GROUP       TOPIC    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID
bench-fast  bpr-000         0          7               7               0    -            -     -
bench-fast  bpr-000         1          5               7               2    -            -     -
bench-fast  bpr-001         0          4               4               0    -            -     -
"""
DESCRIBED_SLOW = """
GROUP       TOPIC    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID
bench-slow  bpr-000         0          6               7               1    -            -     -
bench-slow  bpr-000         1          6               7               1    -            -     -
bench-slow  bpr-001         0          -               4               -    -            -     -
"""


def test_the_cron_reference_cuts_at_the_slowest_group_and_skips_uncommitted_partitions() -> None:
    from bench.policy_run import smallest_commits

    cuts = smallest_commits([DESCRIBED_FAST, DESCRIBED_SLOW])
    # The slower group's offset on each partition; bpr-001/0 has no commit from one group.
    assert cuts == {("bpr-000", 0): 6, ("bpr-000", 1): 5}
    # A partition only one group's output names is not cut either.
    assert smallest_commits([DESCRIBED_FAST, ""]) == {}


def test_an_explicit_purges_stages_are_the_medians_in_order() -> None:
    from bench.purge_scale import stage_line

    runs = [
        {"apply": 200.0, "pickUp": 9, "planning": 300, "storing": 150, "deleting": 1100,
         "reporting": 2, "seen": 90},
        {"apply": 160.0, "pickUp": 25, "planning": 170, "storing": 270, "deleting": 1050,
         "reporting": 1, "seen": 120},
        {"apply": 250.0, "pickUp": 40, "planning": 290, "storing": 260, "deleting": 1280,
         "reporting": 3, "seen": 60},
    ]  # fmt: skip
    line = stage_line(runs)
    assert line.endswith(
        "apply 200, pickUp 25, planning 290, storing 260, deleting 1100, reporting 2, seen 90"
    )


def test_a_purges_breakdown_counts_from_kubectls_return_and_sums_to_its_time() -> None:
    from bench.purge_scale import breakdown

    timings = {
        "pickedUpAt": "2026-11-29T10:00:00.120Z",
        "plannedAt": "2026-11-29T10:00:00.300Z",
        "storedAt": "2026-11-29T10:00:00.350Z",
        "deletedAt": "2026-11-29T10:00:01.050Z",
        "completedAt": "2026-11-29T10:00:01.060Z",
        "ms": {"pickUp": 120},
    }
    wall = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC).timestamp()
    # kubectl returned 100 ms after it started; the final phase was seen at 1.2 s.
    got = breakdown(timings, wall, applied=0.1, took=1.2)
    assert {k: round(v) for k, v in got.items()} == {
        "apply": 100,
        "pickUp": 20,
        "planning": 180,
        "storing": 50,
        "deleting": 700,
        "reporting": 10,
        "seen": 140,
    }
    assert round(sum(got.values())) == 1200


def test_a_purge_missing_its_goal_below_the_floor_says_so_and_its_own_share() -> None:
    from bench.purge_scale import explicit_goal, purge_why

    assert explicit_goal(1000) == 0.5
    assert explicit_goal(10_000) == 0.7
    under = purge_why(0.62, 1.0, 2.0, goal=0.5, floor=0.41)
    assert "the purge's own share is the 0.21x above it" in under
    assert "below this machine's floor" not in under
    floored = purge_why(0.8, 1.0, 2.0, goal=0.5, floor=0.55)
    assert "the goal is below this machine's floor for this size" in floored
    assert purge_why(0.69, 1.0, 2.0, goal=0.7, floor=0.6) == ""


def test_a_purge_whose_goal_is_below_the_least_recordpurge_says_so_and_its_own_share() -> None:
    from bench.purge_scale import purge_why

    # 1,000 entries at RF 3: the delete alone 0.42x, the least RecordPurge 0.53x.
    why = purge_why(0.62, 1.0, 2.0, goal=0.5, floor=0.42, least=0.53)
    assert "the least RecordPurge (created, answered by a controller" in why
    assert "took 0.53x, so the goal is at or below what a purge by a resource can take" in why
    assert "the operator's own share is the 0.09x above it" in why
    # The least RecordPurge within the goal: the operator's share above it, no excuse.
    within = purge_why(0.62, 1.0, 2.0, goal=0.5, floor=0.38, least=0.45)
    assert "the goal is below" not in within
    assert "the least RecordPurge took 0.45x, and the operator's own share is the 0.17x" in within
    # Not measured: the share above the delete alone, as before.
    assert "the purge's own share is the 0.24x above it" in purge_why(0.62, 1.0, 2.0, floor=0.38)


def test_a_goal_below_the_least_safe_recordpurge_is_said_to_be_below_the_rules_floor() -> None:
    from bench.purge_scale import purge_why

    # The least RecordPurge meets the goal, the least one that plans and stores does not.
    why = purge_why(0.56, 1.0, 2.0, goal=0.5, floor=0.42, least=0.46, safe=0.52)
    assert "the least RecordPurge took 0.46x, below the goal, but the least safe one" in why
    assert "took 0.52x: the goal is below what a purge under DESIGN.md's rules can take" in why
    assert "the operator's own share is the 0.04x above that" in why
    # Both within the goal: the operator's share above each, and no excuse.
    within = purge_why(0.56, 1.0, 2.0, goal=0.5, floor=0.42, least=0.44, safe=0.48)
    assert "the goal is below" not in within
    assert "the operator's own share is the 0.12x above it (0.08x above the least safe" in within


def test_the_explicit_rows_of_a_size_measure_the_least_recordpurge_beside_the_delete() -> None:
    from bench.purge_scale import (
        SERIES_CLI,
        SERIES_CR,
        SERIES_EXPLICIT,
        SERIES_FLOOR,
        SERIES_LEAST,
        SERIES_REF,
        SERIES_SAFE,
        _rows,
    )

    times = {
        SERIES_CR: [1.0, 1.0, 1.0],
        SERIES_EXPLICIT: [1.2, 1.1, 1.3],
        SERIES_CLI: [1.0, 1.0, 1.0],
        SERIES_REF: [2.0, 1.9, 2.1],
        SERIES_FLOOR: [0.8, 0.8, 0.8],
        SERIES_LEAST: [0.95, 0.85, 0.9],
        SERIES_SAFE: [0.94, 0.96, 0.98],
    }
    brokers = {series: [0.5] * 3 for series in times}
    stages = [{"apply": 150.0, "planning": 50.0, "seen": 60.0}] * 3
    least_stages = [{"apply": 140.0, "seen": 860.0}, {"apply": 160.0, "seen": 840.0}]
    rows = {r.what: r for r in _rows(1000, 3, times, brokers, stages, least_stages)}
    least = rows["floor: the least RecordPurge of 1000 partitions (RF 3), one entry a partition"]
    assert (least.ours, least.reference) == ("0.90 s", "2.00 s")
    assert least.note.startswith("0.45x; the same object")
    assert "apply 150 ms (median); median of 3 runs (0.95, 0.85, 0.90)" in least.note
    assert [p.series for p in least.points] == ["the least RecordPurge (RF 3)"]
    safe = rows[
        "floor: the least safe RecordPurge of 1000 partitions (RF 3), one entry a partition"
    ]
    assert (safe.ours, safe.reference) == ("0.96 s", "2.00 s")
    assert safe.note.startswith("0.48x; the least controller doing also what")
    assert "median of 3 runs (0.94, 0.96, 0.98)" in safe.note
    assert [p.series for p in safe.points] == ["the least safe RecordPurge (RF 3)"]
    explicit = rows[
        "RecordPurge of 1000 partitions (RF 3), one entry a partition, apply -> Succeeded"
    ]
    # 1.20 s against 2.00: 0.60x; the least purge's 0.45x meets the goal, so no excuse.
    assert explicit.why.startswith("0.60x of kafka-delete-records against a goal of 0.5x.")
    assert "the least RecordPurge took 0.45x, and the operator's own share is the 0.15x" in (
        explicit.why
    )
    assert "(0.12x above the least safe one's 0.48x)" in explicit.why
