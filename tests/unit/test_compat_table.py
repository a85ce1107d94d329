"""The page make test-compat writes: one row a scenario, one column a release, each cell
the outcome the run recorded."""

from __future__ import annotations

from tests.helpers.kafka_versions import compat_table


def test_each_scenario_gets_a_row_with_the_outcome_on_each_release() -> None:
    outcomes = {
        ("test_a_purge_by_offset", "3.9.2"): "passed",
        ("test_a_purge_by_offset", "4.4.0"): "failed",
        ("test_share_groups", "3.9.2"): "skipped",
    }
    page = compat_table(outcomes, ("3.9.2", "4.0.1", "4.4.0"))
    lines = page.splitlines()
    # Only releases the run covered get a column, oldest first.
    assert "| scenario | 3.9.2 | 4.4.0 |" in lines
    assert "| a purge by offset | passes | **fails** |" in lines
    # A scenario the run did not reach on a release says so.
    assert "| share groups | skipped | not run |" in lines
