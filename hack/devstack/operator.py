"""`kafka-retention run` as a child process against the local stack: one way to start the
operator for tests, the demo and the benchmarks. Ready means Kopf's liveness endpoint
answers, which it does once the operator has started and authenticated."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from devstack.stack import Stack


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class OperatorProcess:
    """The operator watching `namespaces`, logging to `log`; extra flags as given.

    `tenancy`: open unless said otherwise, because most tests exercise what a spec can say
    about its cluster inline (bootstrap servers, Secrets, Strimzi, broker pods), which
    only --tenancy=open accepts; tests/e2e/test_tenancy.py runs the strict default."""

    def __init__(
        self,
        stack: Stack,
        namespaces: list[str],
        log: Path,
        extra_args: tuple[str, ...] = (),
        tenancy: str = "open",
    ) -> None:
        self.stack, self.namespaces, self.log = stack, namespaces, log
        self.extra_args = (f"--tenancy={tenancy}", *extra_args)
        self.proc: subprocess.Popen[bytes] | None = None
        self.health_port = free_port()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60) -> OperatorProcess:
        exe = Path(sys.executable).with_name("kafka-retention")
        liveness = f"http://127.0.0.1:{self.health_port}/healthz"
        args = [str(exe), "run", "--verbose", "--liveness", liveness, *self.extra_args]
        for ns in self.namespaces:
            args += ["--namespace", ns]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                args, env={**os.environ, **self.stack.env()}, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while not self._alive(liveness):
            if self.proc.poll() is not None:
                raise RuntimeError(f"operator exited {self.proc.returncode}: {self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"operator not ready in {timeout:.0f}s: {self.tail()}")
            time.sleep(0.2)
        return self

    @staticmethod
    def _alive(url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:  # noqa: S310 - loopback
                return bool(answer.status == 200)
        except OSError:
            return False

    def log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def watching(self, namespace: str, since: int) -> bool:
        """Whether the operator's log, from byte `since` on, says it started watching
        `namespace` (Kopf logs each watch-stream it starts; run with --verbose)."""
        with self.log.open("rb") as log:
            log.seek(since)
            said = f"Starting the watch-stream for [^\n]* in '{re.escape(namespace)}'"
            return re.search(said.encode(), log.read()) is not None

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no clean-up, as when a node dies or the pod is OOM-killed."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)
