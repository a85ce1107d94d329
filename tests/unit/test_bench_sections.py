"""`bench/run.py --only SECTION`: a partial run replaces its own rows (and their "slower"
lines) in BENCHMARKS.md, keeps every other row, and says which command ran when."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import run
from bench.common import Row

PAGE = """# Benchmarks

Written by `make bench` (bench/run.py); every figure beside Apache Kafka's own tool,

- Machine: 2 cores
- Command: `make bench`
- Date: 2026-11-27 14:37 UTC; run took 4310 s

| what | kafka-retention | reference tool | notes |
| --- | --- | --- | --- |
| plan 1,000 partitions | 1.6 s | 3.1 s | medians |
| erasure scan, 10 digests | 9.0 s | 2.7 s | old |

## Figures

![scan](bench/plots/scan.png)

## Where we are slower, and why

- **erasure scan, 10 digests**: old reason
- **purge**: kept reason
"""


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "BENCHMARKS.md").write_text(PAGE)
    monkeypatch.setattr(run, "REPO", tmp_path)
    monkeypatch.setattr(run, "machine", lambda: "2 cores (test)")
    return tmp_path / "BENCHMARKS.md"


def test_a_section_run_replaces_its_rows_and_keeps_the_others(page: Path) -> None:
    rows = [Row("erasure scan, 10 digests", "2.0 s", "2.7 s", "new"), Row("new row", "1", "2", "n")]
    run.write_sections(rows, 42.0, ["erasure-scan"])
    text = page.read_text()
    assert "| plan 1,000 partitions | 1.6 s | 3.1 s | medians |" in text
    assert "| erasure scan, 10 digests | 2.0 s | 2.7 s | new |" in text
    assert "9.0 s" not in text
    assert "| new row | 1 | 2 | n |" in text
    # Every row stays in the one table, before the figures.
    assert text.index("| new row") < text.index("## Figures")
    # No longer slower: its old reason goes, another row's stays.
    assert "old reason" not in text
    assert "- **purge**: kept reason" in text
    assert "- Date: 2026-11-27 14:37 UTC" in text
    assert (
        "- Sections erasure-scan run again: `PYTHONPATH=hack:. python bench/run.py "
        "--only erasure-scan`" in text
    )
    assert "on 2 cores (test)" in text


def test_a_second_section_run_keeps_one_note_and_adds_its_slower_line(page: Path) -> None:
    slow = Row("erasure scan, 10 digests", "3.0 s", "2.7 s", "n", why="new reason")
    run.write_sections([slow], 1.0, ["erasure-scan"])
    run.write_sections([slow], 1.0, ["erasure-scan"])
    text = page.read_text()
    assert text.count(" run again: ") == 1
    assert text.count("- **erasure scan, 10 digests**: new reason") == 1
    assert text.count("| erasure scan, 10 digests |") == 1


def test_a_run_of_another_section_keeps_the_first_sections_note(page: Path) -> None:
    run.write_sections([Row("purge", "1 s", "2 s", "n")], 1.0, ["purges"])
    run.write_sections([Row("big purge", "9 s", "9 s", "n")], 1.0, ["big-cluster"])
    run.write_sections([Row("big purge", "8 s", "9 s", "n")], 1.0, ["big-cluster"])
    text = page.read_text()
    assert text.count("- Sections purges run again: ") == 1
    assert text.count("- Sections big-cluster run again: ") == 1
    assert "| purge | 1 s | 2 s | n |" in text
    assert "| big purge | 8 s | 9 s | n |" in text
