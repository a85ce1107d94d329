"""`kafka-retention run` starts the operator against the real API server and stops cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devstack.stack import Stack


@pytest.mark.stack
def test_operator_connects_watches_and_exits_zero_on_sigterm(
    stack: Stack, namespace: str, tmp_path: Path
) -> None:
    log = tmp_path / "operator.log"
    exe = Path(sys.executable).with_name("kafka-retention")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), "run", "--namespace", namespace, "--verbose"],
            env={**os.environ, **stack.env()},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "Initial authentication has finished" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0, log.read_text()
    assert "Traceback" not in log.read_text()
