"""A RecordPurge's phases and its partitions' states: the words status uses, in one place."""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    PENDING = "Pending"
    PLANNING = "Planning"
    PURGING = "Purging"
    SUCCEEDED = "Succeeded"
    PARTIALLY_SUCCEEDED = "PartiallySucceeded"
    FAILED = "Failed"


FINAL_PHASES = frozenset({Phase.SUCCEEDED, Phase.PARTIALLY_SUCCEEDED, Phase.FAILED})


class State(StrEnum):
    """One partition's state in the plan and the results."""

    PLANNED = "Planned"
    PURGED = "Purged"
    RETRYING = "Retrying"
    FAILED = "Failed"
    DRY_RUN = "DryRun"
