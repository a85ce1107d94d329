"""Spark's Python daemon for `make test`: its workers write their line coverage.

The local sessions reuse their Python workers (`adapters/spark.local_session`), so a
worker lives from its first task until its session stops. The daemon then sends its
process group SIGHUP, and pyspark's worker restores SIGHUP's default action before every
task: the worker dies without running coverage's save, and every line it ran for the
tests (transforms, extracts, scans) is lost, or counted only when some other worker
happened to end through `os._exit` first. Here a hang-up ends the worker through
`os._exit`, which coverage's `_exit` patch (pyproject's `[tool.coverage.run]`) saves
first. Spark runs this module in place of `pyspark.daemon` when `spark.python.daemon.module`
names it (`devstack.build.spark_env`); pods and users run pyspark's own.
"""

from __future__ import annotations

import os
import signal
from types import FrameType, ModuleType
from typing import Any

import pyspark.daemon


def _hang_up(signum: int, frame: FrameType | None) -> None:
    os._exit(0)


class _Signals:
    """pyspark.daemon's view of the `signal` module, with SIGHUP's default replaced."""

    def __init__(self, real: ModuleType) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def signal(self, signum: int, handler: Any) -> Any:
        if signum == signal.SIGHUP and handler == signal.SIG_DFL:
            handler = _hang_up
        return self._real.signal(signum, handler)


# pyspark.daemon.worker restores the signals through its module's `signal`: the one place
# to change SIGHUP's handler without copying pyspark's fork loop.
pyspark.daemon.signal = _Signals(signal)  # type: ignore[attr-defined,assignment]

if __name__ == "__main__":
    pyspark.daemon.manager()
