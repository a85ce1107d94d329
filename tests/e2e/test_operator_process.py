"""`kafka-retention run` starts the operator against the real API server and stops cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.operator import OperatorProcess
from devstack.stack import Stack

pytestmark = pytest.mark.stack


def test_operator_connects_watches_and_exits_zero_on_sigterm(
    stack: Stack, namespace: str, tmp_path: Path
) -> None:
    operator = OperatorProcess(stack, [namespace], tmp_path / "operator.log").start()
    code = operator.stop()
    assert code == 0, operator.tail()
    assert "Traceback" not in operator.log.read_text()
