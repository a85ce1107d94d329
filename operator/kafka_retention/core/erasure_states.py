"""A RecordErasure's phases and its topics' kinds: the words status uses, in one place."""

from __future__ import annotations

from enum import StrEnum, auto
from typing import Any, Literal


class Phase(StrEnum):
    # Each value is its name in CamelCase (VALUES_ERASED: "ValuesErased"), as status and
    # the CRD's enum spell it.
    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
        return name.title().replace("_", "")

    PENDING = auto()
    SCANNING = auto()
    # Compacted topics: a tombstone written for each key where it occurs, then the
    # cleaner follows (values before the tombstone go, then the tombstone itself).
    TOMBSTONED = auto()
    VALUES_ERASED = auto()
    KEY_ERASED = auto()
    # Topics that cannot be compacted (onDeleteTopics: report): retention removes them.
    AWAITING_RETENTION = auto()
    # Those topics under onDeleteTopics: cut: DeleteRecords just past each partition's
    # last match, then a scan of what is left verifies it (Cut); a protected group that
    # has not read past the last match holds the cut there (CutHeld).
    CUT = auto()
    CUT_HELD = auto()
    DRY_RUN = auto()
    FAILED = auto()


FINAL_PHASES = frozenset({Phase.KEY_ERASED, Phase.DRY_RUN, Phase.FAILED})

# compacted: cleanup.policy has compact (compact,delete too); delete: no compact;
# tiered: remote.storage.enable=true, which Kafka never compacts (kafka#19702).
TopicKind = Literal["compacted", "delete", "tiered"]
