"""The RecordPurge service: `reconcile` one purge through its named stages (see
pipeline.py), each returning a value that status.py, the one status writer, turns into
the status patch; the handler and the CLI wire in the stores and the Kafka connection
(inputs.Purge)."""

from kafka_retention.core.failures import Unresolved
from kafka_retention.services.purge.inputs import Purge
from kafka_retention.services.purge.outcomes import Outcome, Retry
from kafka_retention.services.purge.pipeline import (
    MAX_PLANNED_PARTITIONS,
    follow_remote,
    reconcile,
    too_large,
)
from kafka_retention.services.purge.tiers import RemoteReport, watched

__all__ = [
    "MAX_PLANNED_PARTITIONS",
    "Outcome",
    "Purge",
    "RemoteReport",
    "Retry",
    "Unresolved",
    "follow_remote",
    "reconcile",
    "too_large",
    "watched",
]
