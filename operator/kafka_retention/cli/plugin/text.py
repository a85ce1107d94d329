"""How the plugin writes what it reads: tables, times, sizes, counts and conditions. Pure,
so every word the plugin prints is unit-tested without a cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

# Conditions whose good state is True; for every other type (Degraded, DataLoss, AtRisk,
# TombstonesAtRisk, OrphansFound) True is what needs attention.
_GOOD_WHEN_TRUE = frozenset({"Ready", "OnSchedule", "Succeeded"})


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Columns padded as `kubectl get` pads them: three spaces apart, the last one free."""
    lines = [list(header), *(list(r) for r in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    out = []
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.append("   ".join([*cells, line[-1]]).rstrip())
    return "\n".join(out) + "\n"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time as status writes it, or None (absent or not a time)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def span(seconds: float) -> str:
    """A duration as kubectl's AGE column says it: 45s, 3m12s, 5h4m, 2d3h."""
    s = int(abs(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if s < 600 and s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60}m" if (s % 3600) // 60 else f"{s // 3600}h"
    return f"{s // 86400}d{(s % 86400) // 3600}h" if (s % 86400) // 3600 else f"{s // 86400}d"


def relative(value: Any, now: datetime) -> str:
    """`3m ago` or `in 4m` for a status time; `-` when there is none."""
    moment = parse_time(value)
    if moment is None:
        return "-"
    delta = (moment - now).total_seconds()
    if abs(delta) < 1:
        return "now"
    return f"in {span(delta)}" if delta > 0 else f"{span(delta)} ago"


def size(n: Any) -> str:
    """Bytes in binary units, as an estimate reads: `~1.5 KiB`; `-` for none."""
    if not isinstance(n, int) or isinstance(n, bool):
        return "-"
    value, unit = float(n), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    shown = f"{int(value)}" if unit == "B" else f"{value:.1f}".removesuffix(".0")
    return f"~{shown} {unit}"


def count(n: Any) -> str:
    """A count with thousands separators, `-` for none."""
    if not isinstance(n, int) or isinstance(n, bool):
        return "-"
    return f"{n:,}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def failing(condition: Mapping[str, Any]) -> bool:
    """Whether a condition says something needs attention."""
    status = condition.get("status")
    if condition.get("type") in _GOOD_WHEN_TRUE:
        return status != "True"
    return status == "True"


def ordered_conditions(conditions: Any) -> list[Mapping[str, Any]]:
    """The conditions, the failing ones first, each group by type."""
    found = [c for c in conditions or [] if isinstance(c, Mapping)]
    return sorted(found, key=lambda c: (not failing(c), str(c.get("type", ""))))


def conditions_line(conditions: Any) -> str:
    """`type=reason` for each condition, the failing ones first; `-` for none."""
    shown = [f"{c.get('type')}={c.get('reason')}" for c in ordered_conditions(conditions)]
    return ", ".join(shown) or "-"
