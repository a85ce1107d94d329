"""When each stage of a RecordPurge ended: `status.timings`, to the millisecond.

    created -> pickedUpAt -> plannedAt -> storedAt -> deletedAt -> completedAt
    (pickUp)   (planning)    (storing)    (deleting)  (reporting)

A mark is set as its stage ends and rides along with the status writes a run makes anyway
(the stored plan, a retry's pending state), so a run resumed after a restart keeps the
marks of the stages an earlier run finished. The final status adds `ms`, each stage's
duration in whole milliseconds between consecutive marks, which therefore sum to `total`
(creation to completion; creationTimestamp has whole seconds, so pickUp counts from the
second the object was created), and `took`, the total as `kubectl get` shows it. A
stage a run skips (a dry run neither stores nor deletes) has no mark and no duration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kafka_retention.core.conditions import ms_timestamp

# Each mark, in order, and the stage that ends with it.
STAGES: tuple[tuple[str, str], ...] = (
    ("pickedUpAt", "pickUp"),
    ("plannedAt", "planning"),
    ("storedAt", "storing"),
    ("deletedAt", "deleting"),
    ("completedAt", "reporting"),
)
_MARKS = frozenset(mark for mark, _ in STAGES)


# RFC 3339 in UTC with milliseconds, as status.timings holds it.
stamp = ms_timestamp


def _ms(text: str) -> int:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def _readable(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        _ms(value)
    except ValueError:
        return False
    return True


def took(ms: int) -> str:
    """A duration as the Took column shows it: 850ms, 1.93s, 2m05s."""
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f}s"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"{minutes}m{seconds:02d}s"


class Timings:
    """The marks of one run, kept from the status an earlier run left."""

    def __init__(self, previous: Mapping[str, Any] | None, now: Callable[[], datetime]) -> None:
        self._now = now
        # Only the marks of finished stages (an earlier run's completedAt would say the
        # purge ended, and it has not), and only marks that read as times: status is
        # informational here, and a mangled mark must not stop the purge from finishing.
        self.marks: dict[str, str] = {
            k: v
            for k, v in (previous or {}).items()
            if k in _MARKS and k != "completedAt" and _readable(v)
        }
        self.marks.setdefault("pickedUpAt", stamp(now()))

    def mark(self, name: str) -> None:
        if name not in _MARKS:
            raise ValueError(f"no stage ends with {name}")
        self.marks[name] = stamp(self._now())


def final(
    marks: Mapping[str, str], created: datetime | None, completed: datetime
) -> dict[str, Any]:
    """status.timings of a purge that ends at `completed`: its marks, each stage's
    duration and the total."""
    marks = {**marks, "completedAt": stamp(completed)}
    start = round(created.timestamp() * 1000) if created is not None else None
    previous = start
    durations: dict[str, int] = {}
    for mark, stage in STAGES:
        if mark not in marks:
            continue
        at = _ms(marks[mark])
        if previous is not None:
            durations[stage] = at - previous
        previous = at
    first = start if start is not None else _ms(marks["pickedUpAt"])
    total = _ms(marks["completedAt"]) - first
    return {**marks, "ms": {**durations, "total": total}, "took": took(total)}
