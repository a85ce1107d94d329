"""Whether this replica runs RetentionPolicies now. Kopf pauses its own handlers while a
peer has priority (core.peering); the policy scheduler is not a Kopf handler, so it asks
here before it starts anything, from the same peering objects Kopf reads.

A replica acts only once its own record has been visible for `hold_s`: replicas started
together then see each other before either starts a run. A peering object that cannot
be read means standing by: a run delayed is better than two replicas deleting at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from kafka_retention.core.peering import Peering, blockers

log = logging.getLogger(__name__)

ReadPeering = Callable[[str, str | None], Mapping[str, Any] | None]  # (name, namespace)


class Leadership:
    def __init__(
        self,
        me: Peering,
        read: ReadPeering,
        clock: Callable[[], datetime],
        hold_s: float = 5.0,
    ) -> None:
        self.me, self.read, self.clock = me, read, clock
        self.hold = timedelta(seconds=hold_s)
        self._seen_since: datetime | None = None
        self.why = "not checked yet"

    def active(self) -> bool:
        now = self.clock()
        seen_everywhere = True
        for namespace in self.me.scopes:
            where = "cluster" if namespace is None else f"namespace {namespace}"
            try:
                obj = self.read(self.me.name, namespace)
            except Exception as err:  # any API trouble: stand by, say why
                self._seen_since = None
                self.why = f"peering {self.me.name} in {where} unreadable: {err}"
                return False
            status = (obj or {}).get("status") or {}
            found = blockers(status, self.me, now)
            if found:
                self.why = f"paused in favour of {', '.join(found)} ({where})"
                return False
            if self.me.identity not in status:
                seen_everywhere = False
        if not seen_everywhere:
            self._seen_since = None
            self.why = f"own record not in peering {self.me.name} yet"
            return False
        if self._seen_since is None:
            self._seen_since = now
        if now - self._seen_since < self.hold:
            self.why = "own record just written; waiting for peers to show"
            return False
        self.why = "acting"
        return True
