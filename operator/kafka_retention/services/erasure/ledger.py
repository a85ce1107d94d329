"""Recording a signed receipt's digests in the cluster's ledger (core/ledger.py), in the
shards of the erasure's namespace, and the port the ledger is stored through
(adapters/ledger_store.py: ConfigMaps in the operator's namespace).

The namespace is the one the signed receipt names (its resource, the RecordErasure):
what a tenant's erasures can fill is its own namespace's shards, never another's.

Two erasures may finish at once and touch the same shard: each write names the version
it read (resourceVersion), the store refuses a stale one (LedgerConflict), and the
writer reads again, merges again and retries. A merge that changes nothing writes
nothing. When the ledger cannot be brought up to date, `record` raises LedgerBehind and
the erasure stays unfinished: its next run signs and records again (the receipt stays
stored in the erasure's ConfigMaps meanwhile).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.ledger import (
    LedgerBehind,
    LedgerConflict,
    LedgerError,
    StoredShard,
    by_shard,
    encode_shard,
    entries_of,
    merge,
)

log = logging.getLogger(__name__)

ATTEMPTS = 8  # reads and writes of one shard before the ledger is reported behind
BACKOFF_S = 0.05  # the first pause after a conflict, doubled each time (with jitter)


class LedgerStore(Protocol):
    """A cluster's ledger shards, per namespace of the erasures. `write` with `version`
    None creates the shard; both raise LedgerConflict when the shard is not (or no
    longer) at that version, and WriteRefused when the API server refuses otherwise;
    `read` raises LedgerError on a shard it cannot parse. `read_all` reads every
    namespace's shards of the cluster, or only `namespace`'s, sorted by (namespace,
    shard)."""

    def read(self, cluster: str, namespace: str, shard: str) -> StoredShard | None: ...
    def write(
        self, cluster: str, namespace: str, shard: str, payload: str, version: str | None
    ) -> None: ...
    def read_all(self, cluster: str, namespace: str | None = None) -> list[StoredShard]: ...


@dataclass(frozen=True)
class Recorded:
    """What one receipt added: its entries, the shards they went to, and how many
    shards actually changed (0 when it was recorded before)."""

    entries: int
    shards: int
    written: int
    conflicts: int


def record(
    ledger: LedgerStore,
    signed: Mapping[str, Any],
    cluster: str,
    *,
    pause: Callable[[float], None] = time.sleep,
) -> Recorded:
    """Every digest `signed` (a signed receipt, core.receipts.sign) vouches for, in the
    ledger of `cluster` (core.ledger.cluster_name), in the shards of the namespace the
    receipt names. Raises LedgerBehind when any shard could not be brought up to date;
    the shards written before stay written (a second call merges them as no-ops)."""
    namespace = str(signed["receipt"]["resource"]["namespace"])
    entries = entries_of(signed)
    written = conflicts = 0
    grouped = by_shard(entries)
    for shard, new in sorted(grouped.items()):
        changed, lost_races = _record_shard(ledger, cluster, namespace, shard, new, pause)
        written += changed
        conflicts += lost_races
    log.info(
        "ledger of cluster %s, namespace %s: receipt sha256 %s, %d digests in %d shards, "
        "%d written, %d conflicts retried",
        cluster,
        namespace,
        signed.get("sha256"),
        len(entries),
        len(grouped),
        written,
        conflicts,
    )
    return Recorded(len(entries), len(grouped), written, conflicts)


def _record_shard(
    ledger: LedgerStore,
    cluster: str,
    namespace: str,
    shard: str,
    new: list[Any],
    pause: Callable[[float], None],
) -> tuple[int, int]:
    conflicts = 0
    delay = BACKOFF_S
    for _ in range(ATTEMPTS):
        try:
            stored = ledger.read(cluster, namespace, shard)
            before = list(stored.entries) if stored is not None else []
            after = merge(before, new)
            if after == before:
                return 0, conflicts
            payload = encode_shard(cluster, namespace, shard, after)
            ledger.write(cluster, namespace, shard, payload, stored.version if stored else None)
            return 1, conflicts
        except LedgerConflict:
            conflicts += 1
            pause(delay * (1 + random.random()))  # noqa: S311 - jitter, not a secret
            delay *= 2
        except LedgerError as err:
            # A full or unreadable shard: retrying now changes nothing, the next run may.
            raise LedgerBehind(507, f"ledger not updated: {err}") from err
        except WriteRefused as err:
            raise LedgerBehind(
                err.status,
                f"ledger shard {shard} of namespace {namespace} not stored: {err.reason}",
                err.body,
            ) from err
    raise LedgerBehind(
        409,
        f"ledger shard {shard} of namespace {namespace} in cluster {cluster} changed "
        f"{conflicts} times while written",
    )
