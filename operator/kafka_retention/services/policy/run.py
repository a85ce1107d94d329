"""One RetentionPolicy run as the batch sees it (`PolicyRun`), what it ends with
(`RunOutcome`), and the runs that end before any cut: an invalid or refused spec, a
failed plan or read (with its back-off). The conditions every run sets are built here;
`apply` is the run that gets to cut."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core import loss
from kafka_retention.core.conditions import Reason
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.policy.report import ConsumedLoss, GroupSummary
from kafka_retention.services.ports import StatusStore
from kafka_retention.services.watch import orphans as orphan_watch
from kafka_retention.services.watch import tombstones as tombstone_watch


@dataclass
class PolicyRun:
    """One policy as its run sees it: the status it starts from and where it writes."""

    key: str  # namespace/name
    status: Mapping[str, Any]
    generation: int | None
    store: StatusStore
    now: Callable[[], datetime]
    # How late the run started against its schedule (seconds), and the slack allowed.
    late_by: float = 0.0
    slack: float = float("inf")

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]


@dataclass
class RunOutcome:
    ok: bool
    message: str
    next_run_in: float
    invalid_field: str | None = None
    # Ready's reason when the run failed (KafkaUnavailable, PlanFailed, ...).
    reason: Reason | None = None
    records_deleted: int = 0
    bytes_reclaimed: int = 0
    partitions_cut: int = 0
    deleted_by_topic: dict[str, int] = field(default_factory=dict)
    # Records cut before a deleteConsumed group read them (maxRetention, deleteBefore).
    losses: list[ConsumedLoss] = field(default_factory=list)
    # Unread-record losses of spec.notify groups found this run (each reported once).
    notify_losses: list[loss.Loss] = field(default_factory=list)
    # Watched groups' unread records near retention; None when the policy watches none.
    at_risk: list[loss.Risk] | None = None
    # spec.tombstones: groups at risk and delete.retention.ms raised; None when unset.
    tombstones: tombstone_watch.TombstoneReport | None = None
    # spec.orphanPartitions: what the check found and removed; None when unset.
    orphans: orphan_watch.OrphanReport | None = None
    failures: list[str] = field(default_factory=list)
    # status.groups: each group read, with its type and how far behind it is.
    groups: list[GroupSummary] = field(default_factory=list)
    # Remote segments below the log start of its tiered partitions not deleted yet, and
    # their bytes (the metrics); None when it matches no tiered topic or the metadata was
    # unreadable. The seconds the last such deletion took after the cut, at the run that
    # found it complete.
    remote_pending_segments: int | None = None
    remote_pending_bytes: int | None = None
    remote_deletion_lag_s: float | None = None


def invalid(run: PolicyRun, err: SpecError, reason: Reason = Reason.INVALID_SPEC) -> RunOutcome:
    """An invalid spec (or one strict tenancy refuses, `reason` NotPermitted): say which
    field, plan and delete nothing, wait for a new spec."""
    run.store.patch(
        {
            "observedGeneration": run.generation,
            "conditions": ready_conditions(run, "False", reason, str(err)),
        }
    )
    return RunOutcome(
        False,
        str(err),
        next_run_in=float("inf"),
        invalid_field=err.field,
        reason=reason,
    )


MAX_RETRY_DELAY_S = 600.0


def retry_backoff(first: float, failures: int, interval_s: float) -> float:
    """The wait after the n-th failed run in a row: `first`, doubled per failure, never
    past the policy's interval nor MAX_RETRY_DELAY_S."""
    return float(min(first * 2 ** min(failures - 1, 20), interval_s, MAX_RETRY_DELAY_S))


def failed(
    run: PolicyRun,
    spec: PolicySpec,
    reason: Reason,
    err: BaseException,
    started: datetime,
    retry_delay: float,
) -> RunOutcome:
    """The run could not plan or read (Kafka down, Secret missing, plan job failed):
    nothing was deleted; try again sooner than the interval, and back off while the
    failures go on, so a cluster down for hours is not asked every 15 seconds by every
    policy."""
    failures = int(run.status.get("consecutiveFailures") or 0) + 1
    delay = retry_backoff(retry_delay, failures, spec.interval_ms / 1000)
    run.store.patch(
        {
            "observedGeneration": run.generation,
            "consecutiveFailures": failures,
            "nextRunAt": cond.timestamp(started + timedelta(seconds=delay)),
            "lastRun": {**(run.status.get("lastRun") or {}), "error": str(err)},
            "conditions": ready_conditions(run, "False", reason, str(err)),
        }
    )
    return RunOutcome(False, f"{reason}: {err}", next_run_in=delay, reason=reason)


def ready_conditions(
    run: PolicyRun,
    ready: cond.ConditionStatus,
    reason: Reason,
    message: str,
    degraded: str | None = None,
) -> list[dict[str, Any]]:
    """Ready always; Degraded after a run that got to delete (None leaves it as it was);
    OnSchedule says whether this run started within its slack."""
    now = run.now()
    out = cond.set_condition(
        run.status.get("conditions"), "Ready", ready, reason, message, run.generation, now
    )
    if degraded is not None:
        out = cond.set_condition(
            out,
            "Degraded",
            "True" if degraded else "False",
            Reason.PARTIALLY_FAILED if degraded else Reason.ALL_APPLIED,
            degraded or "every partition planned and applied",
            run.generation,
            now,
        )
    return set_schedule(out, run)


def set_schedule(
    conditions: Sequence[Mapping[str, Any]] | None, run: PolicyRun
) -> list[dict[str, Any]]:
    late = run.late_by > run.slack
    return cond.set_condition(
        conditions,
        "OnSchedule",
        "False" if late else "True",
        Reason.LATE if late else Reason.ON_TIME,
        f"started {run.late_by:.0f}s after it was due (slack {run.slack:.0f}s)"
        if late
        else "started within its slack",
        run.generation,
        run.now(),
    )
