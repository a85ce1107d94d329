"""The RecordPurge service: `reconcile` one purge through its named stages (see
reconcile.py); the handler and the CLI wire in the stores and the Kafka connection."""

from kafka_retention.services.purge.outcome import Outcome, Retry
from kafka_retention.services.purge.pipeline import MAX_PLANNED_PARTITIONS, reconcile, too_large
from kafka_retention.services.purge.store import Purge, Unresolved

__all__ = [
    "MAX_PLANNED_PARTITIONS",
    "Outcome",
    "Purge",
    "Retry",
    "Unresolved",
    "reconcile",
    "too_large",
]
