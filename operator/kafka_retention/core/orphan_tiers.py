"""Orphan directories of tiered topics (KIP-405): whether a directory orphaned from a live
tiered partition may hold records that nobody else holds.

A live tiered partition's records are in two places: remote storage, from the log start
up to the last offset copied there, and the live replicas' disks, from the earliest local
offset on. A directory orphaned from it (a KRaft `-stray` copy, a copy a reassignment
left behind) is garbage only when every offset it holds is below the log start (deleted
for every reader), in remote storage, or at or past the earliest local offset. Offsets
from the first one not yet copied (the earliest pending upload) up to the earliest local
one are in neither place: the remote log manager still has to copy them from somewhere,
and a directory holding one of them may hold the only copy. Brokers keep that range empty
(local retention deletes only copied segments), so a range that is not empty is a broker
in trouble, and the one time an orphan's bytes may matter.

Pure: the offsets come from the cluster (ListOffsets -4, -5, -6 and the log start) and
from the directory's own segment files, read by the adapter.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_retention.core.tiers import TierOffsets


@dataclass(frozen=True)
class HeldOffsets:
    """The offsets a partition directory's segments hold: from the lowest segment's base
    offset to the last offset of its last record batch. Both None when its segments hold
    no record at all."""

    first: int | None
    last: int | None


EMPTY = HeldOffsets(None, None)


@dataclass(frozen=True)
class Gap:
    """Offsets [start, end) of a live partition, at or past its log start, that are
    neither in remote storage nor on the live replicas' disks."""

    start: int
    end: int


class TiersUnknown(ValueError):
    """The cluster's answer does not say where the live partition's records are."""


def tier_gap(log_start: int, tiers: TierOffsets) -> Gap | None:
    """The live partition's offsets that only an orphan directory might still hold; None
    when every offset at or past the log start is in remote storage or local on the live
    replicas. Remote storage is counted only up to the latest tiered offset and below the
    earliest pending upload, whichever says less."""
    if tiers.earliest_local is None:
        raise TiersUnknown("the brokers gave no earliest local offset")
    remote_end = log_start  # nothing copied: remote storage holds nothing past the start
    if tiers.latest_tiered is not None:
        remote_end = max(remote_end, tiers.latest_tiered + 1)
    if tiers.pending_upload is not None:
        remote_end = min(remote_end, max(tiers.pending_upload, log_start))
    if remote_end >= tiers.earliest_local:
        return None
    return Gap(remote_end, tiers.earliest_local)


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def gap_hold(gap: Gap, held: HeldOffsets | None, why_unknown: str = "") -> str | None:
    """Why an orphan directory must stay while the live partition has `gap`: it holds
    offsets in it, or what it holds could not be read (`held` None, `why_unknown` says
    why). None when it holds none of them."""
    missing = f"offsets {_span(gap.start, gap.end - 1)}"
    if held is None:
        return (
            f"tiered topic: {missing} are neither in remote storage nor on the live "
            f"replicas' disks, and the offsets this directory holds are unknown"
            + (f" ({why_unknown})" if why_unknown else "")
        )
    if held.first is None or held.last is None:
        return None  # no record at all: nothing the remote log manager could need
    if held.first < gap.end and held.last >= gap.start:
        return (
            f"tiered topic: holds offsets {_span(held.first, held.last)}, and {missing} "
            "are neither in remote storage nor on the live replicas' disks (the remote log "
            "manager may still need them)"
        )
    return None
