"""A RecordErasure's phases and its topics' kinds: the words status uses, in one place."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Phase(StrEnum):
    PENDING = "Pending"
    SCANNING = "Scanning"
    # Compacted topics: a tombstone written for each key where it occurs, then the
    # cleaner follows (values before the tombstone go, then the tombstone itself).
    TOMBSTONED = "Tombstoned"
    VALUES_ERASED = "ValuesErased"
    KEY_ERASED = "KeyErased"
    # Topics that cannot be compacted (onDeleteTopics: report): retention removes them.
    AWAITING_RETENTION = "AwaitingRetention"
    DRY_RUN = "DryRun"
    FAILED = "Failed"


FINAL_PHASES = frozenset({Phase.KEY_ERASED, Phase.DRY_RUN, Phase.FAILED})

# compacted: cleanup.policy has compact (compact,delete too); delete: no compact;
# tiered: remote.storage.enable=true, which Kafka never compacts (kafka#19702).
TopicKind = Literal["compacted", "delete", "tiered"]
