"""What the purge pipeline is handed: one RecordPurge object (`Purge`), with the stores
and the Kafka connection the handler or the CLI wires in, and `Unresolved`, what that
connection raises when the purge's cluster cannot be named yet. Every stage takes its
input from here; none of them defines it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kafka_retention.core.purge import PurgeRequest
from kafka_retention.services.ports import BlobStore, KafkaPlanner, StatusStore
from kafka_retention.services.purge.progress import (
    DELETE_ROUND,
    PLANNING_SHOWN_AFTER_S,
    PROGRESS_EVERY_S,
)

# How long a finished purge's remote deletion is watched after the cut before it stops
# checking (RemoteDeletionUnconfirmed). The brokers' remote log manager runs every
# remote.log.manager.task.interval.ms (30 s by default) and deletes what is below the log
# start at its next run; an hour is many runs.
REMOTE_WATCH_S = 3600.0


@dataclass
class Purge:
    """One RecordPurge object, as the service needs it. `spec` and `status` are the
    object's own, as the API server gave them: `spec` is parsed once
    (core.purge.parse_spec), `status` says how far an earlier run got."""

    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    generation: int | None
    # Only services/purge/status.py writes through this (the single status writer).
    store: StatusStore
    blobs: BlobStore
    connect: Callable[[PurgeRequest], KafkaPlanner]
    now: Callable[[], datetime]
    retry_delay: float = 10.0
    # Tenancy (services.tenancy), asked before anything is contacted: raises Refused or
    # BindingUnavailable for a purge its namespace may not run, else returns the most
    # partitions it may cut. None: no tenancy (the CLI, service tests).
    admit: Callable[[Mapping[str, Any], PurgeRequest], int] | None = None
    # The least time between two writes of status.progress of their own, and the cuts
    # sent in one DeleteRecords call (progress.py).
    progress_every_s: float = PROGRESS_EVERY_S
    delete_round: int = DELETE_ROUND
    # How long planning runs before phase Planning is written (progress.py).
    planning_shown_after_s: float = PLANNING_SHOWN_AFTER_S
    # metadata.creationTimestamp: where status.timings counts the pick-up from.
    created: datetime | None = None
    # How long after its cut a finished purge's remote deletion is watched (tiers.check).
    remote_watch_s: float = REMOTE_WATCH_S
    # Whether status says what the cluster runs (status.kafka): the CLI shows no status.
    describe_cluster: bool = True
