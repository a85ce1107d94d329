"""RecordPurge reconciliation, as a state machine over its phases:

    Pending -> Planning -> Purging -> Succeeded | PartiallySucceeded | Failed

The plan is persisted before anything is deleted: in the purge's own ConfigMaps (a plan
of 100,000 partitions does not fit in status), with status pointing at them. A run that
finds a stored plan (after a restart or a retry) executes that plan and never re-plans,
so `offset: -1` or a group's offset that moved on cannot widen a purge after the fact.
Each run re-reads the guard groups' positions before deleting (the broker checks offsets
itself) and may only lower a planned cut: a new plan's re-read goes out while the plan is
stored, and is read again if its answer is more than FRESH_WITHIN_S old when the store
ends. State that cannot be stored stops the
purge before any delete, with the API server's answer in a condition.

`reconcile` reads as the stages, top to bottom, each in its own module:

    1-2. gather facts, plan ........ facts.plan
    3.   persist the plan .......... store.store_plan
    4-6. re-check, delete, fold .... execute.execute
    7.   status .................... outcome.finish / pending / refuse

Each partition travels as a frozen core.purge_entry.PurgeEntry. How far a run has got is
in status.progress while it runs (progress.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import KafkaUnavailable, WriteRefused
from kafka_retention.core.purge import PurgeRequest, parse_spec
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import FINAL_PHASES, Phase, State
from kafka_retention.core.specs import SpecError
from kafka_retention.core.stored_plan import problems, refusal
from kafka_retention.services.ports import KafkaCutter
from kafka_retention.services.purge.execute import Positions, estimate, execute, guard_positions
from kafka_retention.services.purge.facts import plan, stored_plan_facts
from kafka_retention.services.purge.outcome import (
    Outcome,
    Retry,
    finish,
    not_ready,
    pending,
    refuse,
)
from kafka_retention.services.purge.progress import Progress, Stage
from kafka_retention.services.purge.store import (
    NotPersisted,
    PlanLost,
    Purge,
    Unresolved,
    store_plan,
    stored_plan,
    write_status,
)
from kafka_retention.services.purge.timings import Timings
from kafka_retention.services.tenancy import BindingUnavailable, Refused

__all__ = ["MAX_PLANNED_PARTITIONS", "reconcile", "too_large"]

log = logging.getLogger(__name__)

# The largest purge the tests prove: 100,000 partitions through the service (unit test,
# in-memory Kafka) and on a real 7-broker local cluster (`make bench`); 20,000 on the
# stack's 3 brokers (e2e), which is what they serve reliably on one small machine.
# Larger ones are refused before anything is deleted.
MAX_PLANNED_PARTITIONS = 100_000


def reconcile(purge: Purge) -> Outcome:
    phase = purge.status.get("phase")
    if phase in FINAL_PHASES:
        return Outcome(str(phase), "already complete")
    try:
        request = parse_spec(purge.spec)
    except SpecError as err:
        outcome = refuse(purge, Reason.INVALID_SPEC, str(err), partitions=0)
        outcome.invalid_field = err.field
        return outcome
    timings = Timings(purge.status.get("timings"), purge.now)
    base: dict[str, Any] = {
        "observedGeneration": purge.generation,
        "startedAt": purge.status.get("startedAt") or cond.timestamp(purge.now()),
        # The marks so far, written with every status write of this run (timings.py).
        "timings": timings.marks,
    }
    progress = Progress(lambda p: _progress_written(purge, p), purge.now, purge.progress_every_s)
    try:
        limit = MAX_PLANNED_PARTITIONS
        if purge.admit is not None:
            limit = min(limit, purge.admit(purge.spec, request))
        kafka = purge.connect(request)
        entries = stored_plan(purge)
        resumed = entries is not None
        positions: Positions | None = None  # a resumed plan's are read when it runs
        if entries is not None:
            # The plan's ConfigMaps live in the purge's namespace, where a tenant may write
            # ConfigMaps: a stored plan runs only if it is one the (admitted) spec allows.
            given = stored_plan_facts(kafka, request, entries)
            found = problems(request, entries, limit, given.partitions, given.offsets_at)
            if found:
                message = f"{refusal(found)}; no further records deleted"
                return refuse(purge, Reason.PLAN_REJECTED, message, 0)
        if entries is None:
            phase = Phase.PLANNING
            write_status(
                purge, "status", {**base, "phase": phase, **progress.field(Stage.PLANNING)}
            )
            planned = plan(kafka, request)
            timings.mark("plannedAt")
            entries, base["groups"] = planned.entries, planned.groups
            progress.report(Stage.STORING, 0, len(entries))
            if len(entries) > limit and not request.dry_run:
                return too_large(purge, len(entries), limit)
            if request.dry_run:
                return finish(purge, base, estimate(kafka, entries), dry_run=True)
            # The guard groups are re-read while the plan is stored: the read begins after
            # the plan was made, so a group that moved back since is still seen, and a
            # cut is only ever lowered by it.
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="guard-reads") as pool:
                rereading = pool.submit(_reread, kafka, request, entries)
                store_plan(purge, base, entries, progress.field(Stage.DELETING, 0, len(entries)))
                timings.mark("storedAt")
                # From here on the stored plan is what runs: a failure below must leave
                # the phase at Purging, or the next run would plan anew from newer offsets.
                phase = Phase.PURGING
                positions, answered_at = rereading.result()
            if time.monotonic() - answered_at > FRESH_WITHIN_S:
                positions = None  # a long store (many ConfigMaps): execute reads them again
        entries = execute(
            kafka,
            request,
            entries,
            resumed=resumed,
            positions=positions,
            progress=progress,
            round_size=purge.delete_round,
        )
        timings.mark("deletedAt")
    except PlanLost as err:
        return refuse(purge, Reason.STATE_NOT_PERSISTED, f"{err}; no further records deleted", 0)
    except NotPersisted as err:
        if err.transient:
            not_ready(purge, base, phase, Reason.STATE_NOT_PERSISTED, str(err))
            raise Retry(f"{Reason.STATE_NOT_PERSISTED}: {err}", purge.retry_delay) from err
        return refuse(purge, Reason.STATE_NOT_PERSISTED, f"{err}; nothing was deleted", 0)
    except Refused as err:
        outcome = refuse(purge, err.reason, f"{err}; nothing was contacted", partitions=0)
        outcome.invalid_field = err.field
        return outcome
    except (KafkaUnavailable, Unresolved, BindingUnavailable) as err:
        reason = Reason.KAFKA_UNAVAILABLE if isinstance(err, KafkaUnavailable) else err.reason
        not_ready(purge, base, phase, reason, str(err))
        raise Retry(f"{reason}: {err}", purge.retry_delay) from err
    if any(e.state == State.RETRYING for e in entries):
        raise pending(purge, base, entries)
    return finish(purge, base, entries, dry_run=False)


def _progress_written(purge: Purge, progress: Mapping[str, Any]) -> None:
    """A progress patch; one the API server refuses, or that never reaches it (a timeout,
    a reset connection), is left out: it only informs, and between two rounds of deletes
    it must not end the purge half-way. The run's next status write, which must be
    stored, says whether the object and the API server are still there."""
    try:
        purge.store.patch(progress)
    except WriteRefused:
        pass
    except Exception as err:  # the status store's transport: any failure, not only Kafka's
        log.warning("progress of a RecordPurge not written: %s", err)


# How old the guard groups' re-read may be when the delete goes out, beyond what reading
# them after the store would give: a store that outlasts the read by more than this (a
# plan in many ConfigMaps, a slow API server) has them read again after it.
FRESH_WITHIN_S = 0.5


def _reread(
    kafka: KafkaCutter, request: PurgeRequest, entries: list[PurgeEntry]
) -> tuple[Positions, float]:
    """guard_positions, and when they were answered (time.monotonic)."""
    positions = guard_positions(kafka, request, entries)
    return positions, time.monotonic()


def too_large(purge: Purge, planned: int, limit: int = MAX_PLANNED_PARTITIONS) -> Outcome:
    if limit < MAX_PLANNED_PARTITIONS:
        message = (
            f"the purge covers {planned} partitions; its KafkaClusterBinding allows "
            f"{limit} in one RecordPurge (spec.limits.partitionsPerPurge): split it into "
            "several; nothing was deleted"
        )
        return refuse(purge, Reason.QUOTA_EXCEEDED, message, partitions=planned)
    message = (
        f"the purge covers {planned} partitions; at most {MAX_PLANNED_PARTITIONS} are "
        "supported in one RecordPurge: split it into several; nothing was deleted"
    )
    return refuse(purge, Reason.TOO_MANY_PARTITIONS, message, partitions=planned)
