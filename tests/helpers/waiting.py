"""Waiting for something that the operator or Kafka makes true a moment later."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(
    check: Callable[[], bool],
    timeout: float = 90,
    what: str = "",
    show: Callable[[], object] | None = None,
) -> None:
    """Wait until `check` holds; on timeout, `show` says what was there instead."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            found = f"; found {show()!r}" if show is not None else ""
            raise AssertionError(f"not within {timeout}s: {what}{found}")
        time.sleep(0.5)
