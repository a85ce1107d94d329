"""Stage 3 of a RecordPurge, and the purge's own ConfigMaps: the plan (a plan of 100,000
partitions does not fit in status) and, at the end, every partition's result.

The plan is written before anything is deleted: its ConfigMaps (parts, then manifest);
the `Stored` outcome then has status.py point status at them, phase Purging. A run that
finds a stored plan reads it back, checksum verified, and never plans again. A save the
API server refuses (core.failures.WriteRefused) becomes NotPersisted, carrying the API
server's answer, so the caller can name the cause.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge_entry import PurgeEntry, from_lines, to_lines
from kafka_retention.core.purge_states import Phase
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services.purge.inputs import Purge
from kafka_retention.services.purge.outcomes import NotPersisted, Run, Stored
from kafka_retention.services.purge.progress import ProgressMark


class PlanLost(Exception):
    """The plan a previous run stored cannot be read back. It is never planned again (that
    could widen the purge), so the purge ends here."""


def stored_plan(purge: Purge) -> list[PurgeEntry] | None:
    """The plan a previous run stored, or None when there is none yet."""
    if purge.status.get("phase") != Phase.PURGING:
        return None
    if purge.status.get("planRef"):
        try:
            payload = purge.blobs.load("plan")
        except SinkError as err:
            raise PlanLost(f"the stored plan is damaged ({err})") from err
        if payload is None:
            raise PlanLost(f"the stored plan {purge.status['planRef'].get('configMap')} is gone")
        try:
            return from_lines(payload)
        except ValueError as err:
            raise PlanLost(f"the stored plan cannot be read ({err})") from err
    # Purges stored by earlier versions kept the plan in status.results.
    if purge.status.get("results"):
        try:
            return [PurgeEntry.from_status(e) for e in purge.status["results"]]
        except ValueError as err:
            raise PlanLost(f"the plan in status.results cannot be read ({err})") from err
    return None


def store_plan(
    purge: Purge, run: Run, entries: Sequence[PurgeEntry], progress: ProgressMark
) -> Stored:
    """The plan in the purge's ConfigMaps; status is to point at it (and say `progress`)
    before any delete."""
    try:
        ref = purge.blobs.save("plan", to_lines(entries))
    except WriteRefused as refused:
        raise NotPersisted("the plan", refused) from refused
    return Stored(run, ref, entries, progress)


def store_results(purge: Purge, entries: Sequence[PurgeEntry]) -> Mapping[str, Any]:
    """Every partition's result in the purge's ConfigMaps (status holds them folded);
    where they are. A refusal raises WriteRefused: the purge still ends, saying so."""
    return purge.blobs.save("results", to_lines(entries))
