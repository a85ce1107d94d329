"""How far a running RecordPurge has got: `status.progress`, {stage, partitionsDone,
partitionsTotal, updatedAt}, while it plans, stores its plan and deletes.

A purge of 100,000 partitions runs for most of a minute, and its phase alone says only
"Purging". Progress rides along with the status writes a run makes anyway (the Planning
phase, the stored plan) and is otherwise written at most once every `every_s` seconds,
so a small purge writes no more than it did and a large one a handful of merge patches;
the Planning phase itself is written only once planning has run PLANNING_SHOWN_AFTER_S.
The run's last status write clears it (a merge patch of null): the phase and summary say
the rest. Progress only hands out `ProgressMark` values; status.py writes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from kafka_retention.core import conditions as cond

# The least time between two progress writes of their own, in seconds.
PROGRESS_EVERY_S = 2.0
# How long planning runs before phase Planning is written. A status write carries the
# whole object through the API server: a RecordPurge naming 10,000 partitions is 600 KB,
# and each write of it took 0.55-0.8 s here (its CEL rules run on every write), longer
# than planning those partitions. A phase that would be over before a watch showed it
# is not written: a quick purge goes from no phase straight to Purging.
PLANNING_SHOWN_AFTER_S = 1.0
# Cuts sent in one DeleteRecords call: a purge of more partitions deletes in rounds of
# this many, its progress counted after each (a purge of 100,000: 5 rounds). The adapter
# sends one round's requests (per leader, 1,000 partitions each) all at once, so a purge
# up to this size (the stack's largest) deletes exactly as in one call, and a larger one
# waits on the slowest request of each round: the brokers' CPU, not the round trips,
# bounds a delete this large.
DELETE_ROUND = 20_000


class Stage(StrEnum):
    PLANNING = "planning"  # reading topics, offsets and groups; cutting per partition
    STORING = "storing"  # the plan into the purge's ConfigMaps
    DELETING = "deleting"  # DeleteRecords, its answers verifying each cut


@dataclass(frozen=True)
class ProgressMark:
    """How far a run has got at one moment: status.progress."""

    stage: Stage
    done: int
    updated_at: str
    # None while planning: the number of partitions is not known yet.
    total: int | None = None

    def to_status(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            "stage": str(self.stage),
            "partitionsDone": self.done,
            "updatedAt": self.updated_at,
        }
        if self.total is not None:
            value["partitionsTotal"] = self.total
        return value


class Progress:
    """Reports a run's progress through `write` (a status.progress write), throttled."""

    def __init__(
        self,
        write: Callable[[ProgressMark], None],
        now: Callable[[], datetime],
        every_s: float = PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write, self._now, self._every, self._clock = write, now, every_s, clock
        self._last: float | None = None

    def field(self, stage: Stage, done: int = 0, total: int | None = None) -> ProgressMark:
        """The progress for a status write that goes out anyway (it counts as a progress
        write)."""
        self._last = self._clock()
        return ProgressMark(stage, done, cond.timestamp(self._now()), total)

    def report(self, stage: Stage, done: int, total: int) -> None:
        """Write the progress if the last write is `every_s` old; else drop it (a later
        report says more)."""
        if self._last is not None and self._clock() - self._last < self._every:
            return
        self._write(self.field(stage, done, total))
