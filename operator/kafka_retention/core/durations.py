"""Durations as the CRDs spell them: 90s, 15m, 36h, 7d, 1h30m (units ms, s, m, h, d)."""

from __future__ import annotations

import re

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# [0-9], not \d: \d also matches other scripts' digits, which int() reads as numbers.
_PART = re.compile(r"([0-9]+)(ms|s|m|h|d)")
# A century: longer is a mistake, and past about 2,700 centuries it leaves the calendar
# (datetime arithmetic on it raises).
MAX_MS = 100 * 365 * 86_400_000


def parse_duration_ms(text: str) -> int:
    """Milliseconds in `text`; ValueError naming the text when it is not a duration."""
    pos, total = 0, 0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += int(match.group(1)) * _UNIT_MS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 36h or 7d")
    if total > MAX_MS:
        raise ValueError(f"{text!r} is longer than 100 years")
    return total
