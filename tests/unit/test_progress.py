"""Progress of long work: a RecordPurge's status.progress written few times however many
partitions it has, and the command line's progress on a terminal only."""

from __future__ import annotations

import io
import threading
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from kafka_retention.cli.common import Progress as Line
from kafka_retention.cli.plan import spark_tasks
from kafka_retention.cli.purge import progress_line
from kafka_retention.services.purge.progress import Progress, ProgressMark, Stage

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def reporter(every_s: float = 2.0) -> tuple[Progress, list[ProgressMark], Clock]:
    written: list[ProgressMark] = []
    clock = Clock()
    return Progress(written.append, lambda: NOW, every_s, clock), written, clock


def test_progress_is_written_at_most_once_every_interval() -> None:
    progress, written, clock = reporter(every_s=2.0)
    progress.report(Stage.DELETING, 0, 100_000)  # the first is written at once
    for done in range(1_000, 100_000, 1_000):
        clock.t += 0.125  # a round of deletes every 1/8 s
        progress.report(Stage.DELETING, done, 100_000)
    # 12.4 s of reports: the first, then one every 2 s (16 rounds).
    assert [w.done for w in written] == [
        0,
        16_000,
        32_000,
        48_000,
        64_000,
        80_000,
        96_000,
    ]
    assert written[0].to_status() == {
        "stage": "deleting",
        "partitionsDone": 0,
        "partitionsTotal": 100_000,
        "updatedAt": "2026-11-28T12:00:00Z",
    }


def test_progress_riding_on_a_status_write_counts_as_a_write() -> None:
    progress, written, clock = reporter(every_s=2.0)
    field = progress.field(Stage.PLANNING).to_status()
    assert field["stage"] == "planning"
    assert "partitionsTotal" not in field  # not known while planning
    clock.t += 1.0
    progress.report(Stage.STORING, 0, 10)
    assert written == []
    clock.t += 1.0
    progress.report(Stage.STORING, 0, 10)
    assert len(written) == 1


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_progress_is_one_line_rewritten_and_cleared() -> None:
    screen = Terminal()
    clock = Clock()
    line = Line(screen, clock=clock)
    line.stage("planning")
    clock.t += 1.5
    line.update("deleting: 10000 of 20000 partitions")
    line.update("deleting: 20000 of 20000 partitions")
    line.clear()
    text = screen.getvalue()
    assert "\n" not in text
    assert text.split("\r")[1:4] == [
        "[  0.0s] planning",
        "[  1.5s] deleting: 10000 of 20000 partitions",
        "[  1.5s] deleting: 20000 of 20000 partitions",
    ]
    assert text.endswith("\r" + " " * len("[  1.5s] deleting: 20000 of 20000 partitions") + "\r")


def test_a_shorter_line_covers_the_longer_one_before_it() -> None:
    screen = Terminal()
    line = Line(screen, clock=Clock())
    line.update("deleting: 10000 of 20000 partitions")
    line.update("done")
    last = screen.getvalue().split("\r")[-1]
    assert last.startswith("[  0.0s] done")
    assert len(last) == len("[  0.0s] deleting: 10000 of 20000 partitions")


def test_piped_there_is_no_progress_at_all() -> None:
    piped = io.StringIO()
    line = Line(piped, clock=Clock())
    line.stage("starting Spark (local mode)")
    line.update("deleting: 1 of 2 partitions")
    line.clear()
    assert piped.getvalue() == ""


def test_piped_with_verbose_each_stage_is_a_line_and_counts_are_left_out() -> None:
    piped = io.StringIO()
    clock = Clock()
    line = Line(piped, verbose=True, clock=clock)
    line.stage("starting Spark (local mode)")
    clock.t += 2.25
    line.update("deleting: 1 of 2 partitions")
    line.stage("computing cuts")
    line.clear()
    assert piped.getvalue() == "[  0.0s] starting Spark (local mode)\n[  2.2s] computing cuts\n"


def test_a_purges_progress_reads_as_partitions_done_of_total() -> None:
    assert progress_line({"stage": "planning", "partitionsDone": 0}) == "planning"
    assert (
        progress_line({"stage": "deleting", "partitionsDone": 20_000, "partitionsTotal": 100_000})
        == "deleting: 20000 of 100000 partitions"
    )


def test_while_work_runs_the_terminal_line_ticks_with_how_far_it_is() -> None:
    screen = Terminal()
    line = Line(screen)
    line.stage("reading offsets on executors")
    reached = threading.Event()

    def done() -> str:
        reached.set()
        return "3 of 8 Spark tasks"

    with line.ticking(done, every_s=0.01):
        assert reached.wait(5)
        time.sleep(0.05)
    assert "reading offsets on executors (3 of 8 Spark tasks)" in screen.getvalue()


def test_piped_nothing_ticks() -> None:
    piped = io.StringIO()
    asked: list[bool] = []

    def done() -> str:
        asked.append(True)
        return "1 of 2 Spark tasks"

    line = Line(piped, verbose=True)
    with line.ticking(done, every_s=0.01):
        time.sleep(0.05)
    assert asked == []
    assert piped.getvalue() == ""


class StageInfo:
    def __init__(self, done: int, total: int) -> None:
        self.numCompletedTasks, self.numTasks = done, total


class Tracker:
    def __init__(self, stages: dict[int, StageInfo | None]) -> None:
        self.stages = stages

    def getActiveStageIds(self) -> list[int]:
        return list(self.stages)

    def getStageInfo(self, i: int) -> StageInfo | None:
        return self.stages[i]


def test_spark_progress_counts_the_tasks_of_the_running_stages() -> None:
    def session(stages: dict[int, StageInfo | None]) -> Any:
        tracker = Tracker(stages)
        return SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))

    assert spark_tasks(session({})) is None
    assert spark_tasks(session({4: None})) is None  # finished between the two calls
    assert spark_tasks(session({4: StageInfo(3, 8), 5: StageInfo(1, 2)})) == "4 of 10 Spark tasks"
