"""Background processes with pid files, so `up` is idempotent and `down` leaves nothing behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path


class StackError(RuntimeError):
    """A part of the local stack could not be built, started or reached."""


def wait_for(
    what: str,
    check: Callable[[], bool],
    timeout: float,
    interval: float = 0.5,
    log: Path | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(interval)
    hint = f"; last lines of {log}:\n{tail(log)}" if log else ""
    raise StackError(f"{what} was not ready after {timeout:.0f}s{hint}")


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Process:
    """One long-running child, known by a pid file under the stack's run directory."""

    def __init__(self, name: str, run_dir: Path) -> None:
        self.name = name
        self.pid_file = run_dir / f"{name}.pid"
        self.log = run_dir / f"{name}.log"

    def pid(self) -> int | None:
        """The process's pid while it runs; None once it is gone, even when another process
        has its pid by now: this machine hands out at most 32,768 pids (kernel.pid_max), a
        test run starts more processes than that, and a stale pid file would send `stop`'s
        signals to whatever got the number (an xdist worker: "node down")."""
        try:
            number, _, started = self.pid_file.read_text().strip().partition(" ")
            pid = int(number)
        except (OSError, ValueError):
            return None
        if started and _start_time(pid) != started:
            return None
        return pid if _alive(pid) else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(
        self, argv: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> int:
        if (pid := self.pid()) is not None:
            return pid
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            # A session of its own: `down` signals the whole group, and Ctrl-C in the
            # terminal that ran `make dev-up` does not reach the stack.
            child = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        # The pid and its start time: the two name one process (see pid()).
        self.pid_file.write_text(f"{child.pid} {_start_time(child.pid) or ''}".strip())
        return child.pid

    def exited_early(self) -> bool:
        """True when the pid file names a process that is gone (it crashed while starting)."""
        return self.pid_file.exists() and self.pid() is None

    def signal(self, sig: signal.Signals) -> None:
        if (pid := self.pid()) is not None:
            _signal_group(pid, sig)

    def stop(self, timeout: float = 20.0) -> None:
        self.terminate()
        self.wait_gone(timeout)

    def terminate(self) -> None:
        if (pid := self.pid()) is not None:
            _signal_group(pid, signal.SIGTERM)

    def wait_gone(self, timeout: float) -> None:
        """Wait for the process to exit after terminate(); SIGKILL it past the timeout."""
        pid = self.pid()
        if pid is not None:
            deadline = time.monotonic() + timeout
            # pid(), not the number alone: it may be another process's by the next look.
            while self.pid() is not None and time.monotonic() < deadline:
                time.sleep(0.2)
            if self.pid() is not None:
                _signal_group(pid, signal.SIGKILL)
                while self.pid() is not None:
                    time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this very process still answers kill(0); reap it.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return _state(pid) not in {"Z", "X"}


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields from the third (state) on: those after the command name,
    which may hold spaces and parentheses; None once the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def _start_time(pid: int) -> str | None:
    """When the process started, in clock ticks after boot (the 22nd field)."""
    fields = _stat_fields(pid)
    return fields[19] if fields else None


def _state(pid: int) -> str:
    fields = _stat_fields(pid)
    return fields[0] if fields else "X"


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def run(
    argv: Sequence[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    what: str | None = None,
) -> str:
    """Run a short command; on failure raise with its output, which is what the user needs."""
    done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise StackError(
            f"{what or argv[0]} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout
