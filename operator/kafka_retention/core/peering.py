"""Which replica acts, by Kopf's peering rule, so that the policy scheduler (which Kopf
does not pause) stops and starts with Kopf's own handlers.

Every replica writes itself into the KopfPeering object's status as
`{identity: {priority, lifetime, lastseen}}`. A replica is paused while another live peer
(seen within its lifetime) has a higher or the same priority; Kopf pauses both sides of
a tie. Priorities come from start time (`auto_priority`): the oldest replica acts, and a
restarted one joins as the standby instead of taking over.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# Priorities fall with start time, from a base past any clock here (2**43 ms is the year
# 2248): distinct for replicas started a millisecond apart, and under 2**53, so exact even
# for a peer that reads JSON numbers as doubles.
_BASE_MS = 2**43


@dataclass(frozen=True)
class Peering:
    """This replica as its peers see it."""

    name: str
    identity: str
    priority: int
    lifetime_s: int = 60
    clusterwide: bool = False
    namespaces: tuple[str, ...] = ()

    @property
    def scopes(self) -> list[str | None]:
        """Where its peering objects are: the cluster (None), or each watched namespace."""
        return [None] if self.clusterwide else list(self.namespaces)


def auto_priority(started_ms: int, rng: random.Random | None = None) -> int:
    """Older replicas get higher priorities. Replicas started in the same millisecond
    differ by a random tiebreak (the low 10 bits)."""
    tiebreak = rng.randrange(1024) if rng is not None else secrets.randbelow(1024)
    return (_BASE_MS - started_ms) * 1024 + tiebreak


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def blockers(status: Mapping[str, Any], me: Peering, now: datetime) -> list[str]:
    """The live peers that pause this replica. A record this replica cannot read (no
    priority, no time) is taken as live and first: a wrong pause delays a run, a wrong
    resume runs two replicas at once."""
    found = []
    for identity, record in status.items():
        if identity == me.identity or record is None:
            continue
        if not isinstance(record, Mapping):
            found.append(str(identity))
            continue
        seen = _parse_time(record.get("lastseen"))
        try:
            lifetime = int(record.get("lifetime", 60))
            priority = int(record.get("priority", 0))
        except (TypeError, ValueError):
            found.append(str(identity))
            continue
        if seen is None:
            found.append(str(identity))
            continue
        if seen + timedelta(seconds=lifetime) <= now:
            continue  # dead: Kopf ignores it too (and removes it)
        if priority >= me.priority:
            found.append(str(identity))
    return sorted(found)
