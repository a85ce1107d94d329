"""The stack's pid files name one process, not a number: pids come round again within a test
run here (kernel.pid_max 32768), and `stop` must never signal whoever got a dead one's."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.procs import Process


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A process the stack did not start."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_started_process_is_known_by_its_pid_and_start_time_and_stops(tmp_path: Path) -> None:
    proc = Process("sleeper", tmp_path)
    pid = proc.start(["sleep", "60"])
    number, started = proc.pid_file.read_text().split()
    assert int(number) == pid
    assert int(started) > 0
    assert proc.pid() == pid
    proc.stop(timeout=5)
    assert proc.pid() is None
    assert not proc.pid_file.exists()


def test_a_pid_file_whose_pid_went_to_another_process_names_nothing_and_stop_spares_it(
    tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    proc = Process("broker", tmp_path)
    # The broker's pid, now the stranger's: same number, another start time.
    proc.pid_file.write_text(f"{stranger.pid} 1")
    assert proc.pid() is None
    proc.stop(timeout=1)
    proc.signal(signal.SIGKILL)
    assert running(stranger.pid), "stop signalled a process the stack never started"


def test_a_pid_file_of_a_pid_alone_still_names_its_process(
    tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    # What a stack started before the start time was recorded wrote: still stoppable.
    proc = Process("old", tmp_path)
    proc.pid_file.write_text(str(stranger.pid))
    assert proc.pid() == stranger.pid
    proc.stop(timeout=5)
    assert not running(stranger.pid)


def running(pid: int) -> bool:
    """Whether the process runs (Popen.poll would not do: the stack's own liveness check
    reaps a child of this process, and Popen then reads a return code of 0)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in {"Z", "X"}
