"""A few slots that namespaces take in turn: how RecordPurges share the operator.

Each purge runs in a worker thread; Kopf hands every new purge to its handler at once,
and a plain pool serves them first come, first served, so a namespace that creates a
thousand purges would make the next namespace's one wait for all of them. Here a purge
waits for a slot without holding a thread, and a freed slot goes to the next namespace
in turn (each namespace's purges in the order they came): one namespace's backlog
delays another's purge by a turn, never by the backlog.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class FairSlots:
    """`slots` at a time; waiting namespaces are served round-robin. One event loop."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("FairSlots needs at least one slot")
        self._free = slots
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._turns: deque[str] = deque()  # namespaces with waiters, the next first

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._waiting.values())

    @asynccontextmanager
    async def slot(self, namespace: str) -> AsyncIterator[None]:
        await self._acquire(namespace)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, namespace: str) -> None:
        if self._free > 0 and not self._turns:
            self._free -= 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if namespace not in self._waiting:
            self._waiting[namespace] = deque()
            self._turns.append(namespace)
        self._waiting[namespace].append(granted)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release()  # handed over as the wait was cancelled: pass it on
            else:
                self._forget(namespace, granted)
            raise

    def _forget(self, namespace: str, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(namespace)
        if queue is None or granted not in queue:
            return
        queue.remove(granted)
        if not queue:
            del self._waiting[namespace]
            self._turns.remove(namespace)

    def _release(self) -> None:
        while self._turns:
            namespace = self._turns.popleft()
            queue = self._waiting[namespace]
            granted = queue.popleft()
            if queue:
                self._turns.append(namespace)  # its next waits for the others' turns
            else:
                del self._waiting[namespace]
            if not granted.done():
                granted.set_result(None)
                return
        self._free += 1
