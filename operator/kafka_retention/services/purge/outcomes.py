"""What the stages of a RecordPurge return: each value says what status is to become,
and status.py, the one status writer, turns it into the status patch.

    Planning ... the run begins to plan (phase Planning)
    Stored ..... the plan is in its ConfigMaps (phase Purging, status points at them)
    Refusal .... the purge ends Failed before anything was deleted
    NotReady ... not done: Ready is False with the cause, and the run is tried again
    Pending .... partitions are left to retry (phase stays Purging)
    Finished ... every partition has its answer (or a dry run its estimate)

`Run` is what every status write of one run carries but a refusal's. `Outcome` is what a
run tells the handler (events, metrics); `Retry` says the run is to be tried again, and
`NotPersisted` that the API server refused to store the purge's state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafka_retention.core.conditions import ConditionStatus, Reason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import Phase
from kafka_retention.services.purge.facts import NamedGroup
from kafka_retention.services.purge.progress import ProgressMark
from kafka_retention.services.purge.tiers import RemoteReport, TieredCut
from kafka_retention.services.purge.timings import Timings

# API server answers that mean "try again" rather than "this can never be stored".
_TRANSIENT = {409, 429, 500, 502, 503, 504}
# etcd's refusal of an oversized write comes back as a 500, yet retrying cannot help.
_NEVER_FITS = "request is too large"


@dataclass(frozen=True)
class Run:
    """One run of a purge, as every status write it makes says it (but a refusal's)."""

    generation: int | None  # status.observedGeneration
    started_at: str  # status.startedAt: the first run's start, kept by later runs
    # The marks so far (timings.py), shared with the pipeline that sets them: each write
    # carries the marks set by then.
    timings: Timings
    # status.groups, once this run has planned (a resumed run leaves the stored ones).
    groups: tuple[NamedGroup, ...] | None = None
    # status.kafka: what the cluster runs (core.cluster_features), once this run planned.
    kafka: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Planning:
    """The run begins to plan: phase Planning, with its first progress mark."""

    run: Run
    progress: ProgressMark


@dataclass(frozen=True)
class Stored:
    """The plan is in its ConfigMaps: phase Purging, status pointing at them. Nothing is
    deleted before the writer has stored this."""

    run: Run
    # Where the plan's ConfigMaps are, as the BlobStore answered (status.planRef).
    plan_ref: Mapping[str, Any]
    entries: Sequence[PurgeEntry]
    progress: ProgressMark


@dataclass(frozen=True)
class Refusal:
    """The purge ends Failed before anything was deleted (an invalid or refused spec, a
    plan too large): Ready False with the reason."""

    reason: Reason
    message: str
    partitions: int  # what the purge covers, all counted as failed (0: not known)
    invalid_field: str | None = None  # the spec field at fault, for the handler


@dataclass(frozen=True)
class NotReady:
    """Not done, and nothing deleted by this run: Ready False with the cause (Kafka
    unreachable, a binding not found), tried again after the retry delay."""

    run: Run
    phase: str | None  # the phase the purge is in (None: Pending)
    reason: Reason
    message: str


@dataclass(frozen=True)
class Pending:
    """Partitions are left to retry: the phase stays Purging, with every entry as it
    stands (their outcomes so far)."""

    run: Run
    entries: Sequence[PurgeEntry]
    message: str  # which partitions are left, and the first one's error


@dataclass(frozen=True)
class Finished:
    """Every partition has its answer (or a dry run its estimate): the final phase,
    Succeeded, the summary and the bounded results."""

    run: Run
    dry_run: bool
    phase: Phase
    succeeded: ConditionStatus  # the Succeeded condition: its status, reason, message
    reason: Reason
    message: str  # the Succeeded condition's
    # What the handler's outcome adds to `message` (the event): results not stored.
    results_note: str
    completed_at: datetime
    summary: Mapping[str, int]
    # status.results: bounded in size (report.py), JSON as status holds it.
    results: Sequence[Mapping[str, Any]]
    # Folded results have every partition's outcome in ConfigMaps beside them:
    # status.resultsRef, None when those could not be stored.
    folded: bool
    results_ref: Mapping[str, Any] | None
    failures: tuple[str, ...]
    topics_deleted: Mapping[str, int]
    # The tiered topics' partitions: status.tiered and RemoteDeletionPending (tiers.py);
    # None when the purge cut no tiered topic.
    tiered: TieredCut | None = None


class Retry(Exception):
    """Not done yet; run again after `delay` seconds. The status says what is pending."""

    def __init__(self, message: str, delay: float) -> None:
        super().__init__(message)
        self.delay = delay


@dataclass
class Outcome:
    """What a run did, for the handler's events and metrics."""

    phase: str
    message: str
    finished: bool = False
    failures: list[str] = field(default_factory=list)
    records_deleted: int = 0
    partitions_purged: int = 0
    topics_deleted: dict[str, int] = field(default_factory=dict)
    invalid_field: str | None = None
    # Where the remote deletion below a tiered topic's cuts stands (metrics, an Event).
    remote: RemoteReport | None = None


class NotPersisted(Exception):
    """The API server refused to store the purge's state (its ConfigMaps or its status);
    the message carries the API server's answer."""

    def __init__(self, what: str, refused: WriteRefused) -> None:
        answer = f"HTTP {refused.status} {refused.reason}: {refused.body}"
        super().__init__(f"{what} not stored: {answer}".strip())
        self.transient = refused.status in _TRANSIENT and _NEVER_FITS not in refused.body
