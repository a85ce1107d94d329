"""What the steps of a RecordErasure return: each value says what status is to become,
and status.py, the one status writer, turns it into the status patch.

    Scanning .... the first scan begins (phase Scanning)
    Refusal ..... the erasure ends Failed before anything was read or written
    NotReady .... not done: Ready is False with the cause, and the run is tried again
    Waiting ..... a step is done and the cleaner (or retention) is next: the phase, the
                  topics, the evidence, and when to look again
    Unsigned .... every key is erased but the receipt cannot be signed (its key cannot
                  be read) or recorded in the ledger yet
    Completed ... a final phase: KeyErased with its receipt, DryRun, or Failed after work

`Picture` is what the scans of a run found, as status holds it. `Outcome` is what a run
tells the handler (events, metrics); `Retry` says the run is to be tried again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_retention.core.conditions import Condition, EventReason, Reason
from kafka_retention.core.erasure_states import Phase

# (event reason, message): digests and counts only, never a key.
Event = tuple[EventReason, str]


@dataclass(frozen=True)
class Run:
    """One run of an erasure, as every status write it makes says it (but a refusal's)."""

    generation: int | None  # status.observedGeneration
    started_at: str  # status.startedAt: the first run's start, kept by later runs


@dataclass(frozen=True)
class Picture:
    """What the erasure knows after a run's scans, as status holds it."""

    topics: Sequence[Mapping[str, Any]]  # status.topics
    evidence: Sequence[Mapping[str, Any]]  # every entry (status holds the first ones)
    # status.evidenceRef when the evidence outgrew status (evidence.py), else None.
    evidence_ref: Mapping[str, Any] | None
    summary: Mapping[str, int]
    deadline: Mapping[str, Any]  # status.deadline
    at_risk: Condition  # the DeadlineAtRisk condition


@dataclass(frozen=True)
class Scanning:
    run: Run
    # Why the first scan runs again (the stored evidence was lost), "" on a first run.
    cause: str = ""


@dataclass(frozen=True)
class Refusal:
    """Failed before anything was read or written: Ready False with the reason, the
    message naming the spec field at fault."""

    reason: Reason
    message: str
    field: str | None = None


@dataclass(frozen=True)
class NotReady:
    run: Run
    phase: Phase
    reason: Reason
    message: str


@dataclass(frozen=True)
class Waiting:
    run: Run
    phase: Phase
    picture: Picture
    reason: Reason  # the Erased condition's: why it is not erased yet
    message: str
    delay: float  # seconds until the next look
    events: Sequence[Event] = ()


@dataclass(frozen=True)
class Unsigned:
    run: Run
    picture: Picture
    reason: Reason  # the Erased condition's (KeyErased or NothingFound)
    message: str  # why the receipt is not signed and recorded yet
    delay: float
    events: Sequence[Event] = ()
    # Ready's and ReceiptSigned's: the signing key unreadable, or the ledger behind.
    why: Reason = Reason.SIGNING_KEY_UNAVAILABLE


@dataclass(frozen=True)
class Completed:
    run: Run
    phase: Phase  # KeyErased, DryRun or Failed
    picture: Picture
    reason: Reason  # the Erased condition's
    message: str
    receipt: Mapping[str, Any] | None = None  # status.receipt
    events: Sequence[Event] = ()


class Retry(Exception):
    """Not done yet; run again after `delay` seconds. `quiet` when the erasure only waits
    on the cleaner or on retention (a log line, not a warning event); `events` are what
    the run did before it (tombstones written)."""

    def __init__(
        self, message: str, delay: float, quiet: bool = False, events: Sequence[Event] = ()
    ) -> None:
        super().__init__(message)
        self.delay = delay
        self.quiet = quiet
        self.events = list(events)


@dataclass
class Outcome:
    """What a run did, for the handler's events and metrics."""

    phase: str
    message: str
    finished: bool = False
    reason: Reason | None = None
    invalid_field: str | None = None
    events: list[Event] = field(default_factory=list)
    matches_remaining: int = 0
