"""RecordPurge reconciliation, as a state machine over its phases:

    Pending -> Planning -> Purging -> Succeeded | PartiallySucceeded | Failed

(Planning is written only when planning takes a while: _plan_announced.)

The plan is persisted before anything is deleted: in the purge's own ConfigMaps (a plan
of 100,000 partitions does not fit in status), with status pointing at them. A run that
finds a stored plan (after a restart or a retry) executes that plan and never re-plans,
so `offset: -1` or a group's offset that moved on cannot widen a purge after the fact.
Each run re-reads the guard groups' positions before deleting (the broker checks offsets
itself) and may only lower a planned cut: a new plan's re-read goes out while the plan is
stored, and is read again if its answer is more than FRESH_WITHIN_S old when the store
ends. State that cannot be stored stops the
purge before any delete, with the API server's answer in a condition.

`reconcile` reads as the stages, top to bottom, each in its own module; each returns a
value (outcomes.py), and status.py alone writes status from it:

    0.   the purge handed in ......... inputs.Purge
    1-2. gather facts, plan .......... facts.plan
    3.   persist the plan ............ store.store_plan
    4-6. re-check, delete, fold ...... execute.execute
    7.   how the run ends ............ conclude.finish / conclude.pending, with
         tiered topics' offsets and RemoteDeletionPending .. tiers.after_cut
    8.   after it, while remote segments below a cut wait for deletion:
         follow_remote (the handler's timer) .......... tiers.check
         (or, before that, a Refusal or NotReady, outcomes.py)
    -    status ...................... status.write / end / retry, write_progress

Each partition travels as a frozen core.purge_entry.PurgeEntry. How far a run has got is
in status.progress while it runs (progress.py).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

from kafka_retention.core import conditions as cond
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import KafkaUnavailable, Unresolved
from kafka_retention.core.purge import PurgeRequest, parse_spec
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import FINAL_PHASES, Phase, State
from kafka_retention.core.specs import SpecError
from kafka_retention.core.stored_plan import problems, refusal
from kafka_retention.services import tenancy
from kafka_retention.services.ports import KafkaCutter, KafkaPlanner
from kafka_retention.services.purge import status
from kafka_retention.services.purge.conclude import finish, pending
from kafka_retention.services.purge.execute import Positions, estimate, execute, guard_positions
from kafka_retention.services.purge.facts import (
    Planned,
    kafka_answered,
    plan,
    stored_plan_facts,
)
from kafka_retention.services.purge.inputs import Purge
from kafka_retention.services.purge.outcomes import (
    Finished,
    NotPersisted,
    NotReady,
    Outcome,
    Planning,
    Refusal,
    Run,
)
from kafka_retention.services.purge.progress import Progress, Stage
from kafka_retention.services.purge.store import PlanLost, store_plan, stored_plan
from kafka_retention.services.purge.tiers import RemoteReport, after_cut, check
from kafka_retention.services.purge.tiers import dry_run as tiered_dry_run
from kafka_retention.services.purge.timings import Timings

__all__ = ["MAX_PLANNED_PARTITIONS", "follow_remote", "reconcile", "too_large"]

# The largest purge the tests prove: 100,000 partitions through the service (unit test,
# in-memory Kafka) and on a real 7-broker local cluster (`make bench`); 20,000 on the
# stack's 3 brokers (e2e), which is what they serve reliably on one small machine.
# Larger ones are refused before anything is deleted.
MAX_PLANNED_PARTITIONS = 100_000


def reconcile(purge: Purge) -> Outcome:
    phase: str | None = purge.status.get("phase")
    if phase in FINAL_PHASES:
        return Outcome(str(phase), "already complete")
    try:
        request = parse_spec(purge.spec)
    except SpecError as err:
        return status.end(purge, Refusal(Reason.INVALID_SPEC, str(err), 0, err.field))
    timings = Timings(purge.status.get("timings"), purge.now)
    run = Run(
        purge.generation, purge.status.get("startedAt") or cond.timestamp(purge.now()), timings
    )
    progress = Progress(
        lambda mark: status.write_progress(purge, mark), purge.now, purge.progress_every_s
    )
    try:
        limit = MAX_PLANNED_PARTITIONS
        if purge.admit is not None:
            limit = min(limit, purge.admit(purge.spec, request))
        kafka = purge.connect(request)
        entries = stored_plan(purge)
        resumed = entries is not None
        positions: Positions | None = None  # a resumed plan's are read when it runs
        # The topics with remote storage (None: not read yet, as in a resumed run).
        tiered: frozenset[str] | None = None
        kafka_pending: Future[ClusterFeatures | None] | None = None  # status.kafka's read
        if entries is not None:
            # The plan's ConfigMaps live in the purge's namespace, where a tenant may write
            # ConfigMaps: a stored plan runs only if it is one the (admitted) spec allows.
            given = stored_plan_facts(kafka, request, entries)
            found = problems(request, entries, limit, given.partitions, given.offsets_at)
            if found:
                message = f"{refusal(found)}; no further records deleted"
                return status.end(purge, Refusal(Reason.PLAN_REJECTED, message, 0))
        if entries is None:
            phase = Phase.PLANNING
            planned = _plan_announced(
                purge, request, kafka, Planning(run, progress.field(Stage.PLANNING))
            )
            timings.mark("plannedAt")
            entries, run = planned.entries, replace(run, groups=planned.groups, kafka=planned.kafka)
            tiered, kafka_pending = planned.tiered, planned.kafka_pending
            progress.report(Stage.STORING, 0, len(entries))
            if len(entries) > limit and not request.dry_run:
                return status.end(purge, too_large(len(entries), limit))
            if request.dry_run:
                estimated = estimate(kafka, entries)
                run = _described(run, kafka_pending)
                where = tiered_dry_run(kafka, purge.blobs, estimated, planned.tiered, purge.now)
                ending = finish(purge, run, estimated, dry_run=True, tiered=where)
                return _ended(purge, ending, kafka_pending)
            # The guard groups are re-read while the plan is stored: the read begins after
            # the plan was made, so a group that moved back since is still seen, and a
            # cut is only ever lowered by it.
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="guard-reads") as pool:
                rereading = pool.submit(_reread, kafka, request, entries)
                deleting = progress.field(Stage.DELETING, 0, len(entries))
                status.write(purge, store_plan(purge, run, entries, deleting))
                timings.mark("storedAt")
                # From here on the stored plan is what runs: a failure below must leave
                # the phase at Purging, or the next run would plan anew from newer offsets.
                phase = Phase.PURGING
                positions, answered_at = rereading.result()
            if time.monotonic() - answered_at > FRESH_WITHIN_S:
                positions = None  # a long store (many ConfigMaps): execute reads them again
        # Remote segments deleted from here on are this purge's doing (tiers.tally).
        cut_at = purge.now()
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
        message = f"{err}; no further records deleted"
        return status.end(purge, Refusal(Reason.STATE_NOT_PERSISTED, message, 0))
    except NotPersisted as err:
        if err.transient:
            waiting = NotReady(run, phase, Reason.STATE_NOT_PERSISTED, str(err))
            raise status.retry(purge, waiting) from err
        message = f"{err}; nothing was deleted"
        return status.end(purge, Refusal(Reason.STATE_NOT_PERSISTED, message, 0))
    except tenancy.Refused as err:
        message = f"{err}; nothing was contacted"
        return status.end(purge, Refusal(err.reason, message, 0, err.field))
    except (KafkaUnavailable, Unresolved, tenancy.BindingUnavailable) as err:
        reason = Reason.KAFKA_UNAVAILABLE if isinstance(err, KafkaUnavailable) else err.reason
        raise status.retry(purge, NotReady(run, phase, reason, str(err))) from err
    if any(e.state == State.RETRYING for e in entries):
        raise status.retry(purge, pending(run, entries))
    # Tiered topics: where the records are now, and whether the remote segments below
    # the cuts are deleted yet (RemoteDeletionPending). It only reads: the cuts are done.
    cut = after_cut(kafka, purge.blobs, entries, tiered, cut_at, purge.now)
    run = _described(run, kafka_pending)
    ending = finish(purge, run, entries, dry_run=False, tiered=cut)
    return _ended(purge, ending, kafka_pending)


def _described(run: Run, pending: Future[ClusterFeatures | None] | None) -> Run:
    """The run with status.kafka, if the plan went on without it and its read has
    answered since."""
    if run.kafka is not None or pending is None:
        return run
    return replace(run, kafka=kafka_answered(pending))


def _ended(
    purge: Purge, ending: Finished, pending: Future[ClusterFeatures | None] | None
) -> Outcome:
    """The purge's end; status.kafka after it, once a read still going then answers (the
    first read of a cluster, a JVM starting on a busy machine: nothing waits for it)."""
    outcome = status.end(purge, ending)
    if ending.run.kafka is None and pending is not None:
        pending.add_done_callback(lambda read: status.write_kafka(purge, kafka_answered(read)))
    return outcome


def _plan_announced(
    purge: Purge, request: PurgeRequest, kafka: KafkaPlanner, planning: Planning
) -> Planned:
    """The plan, with phase Planning written only if planning outlasts
    `purge.planning_shown_after_s` (progress.PLANNING_SHOWN_AFTER_S): on a large object
    (10,000 spec.partitions: 600 KB) the write costs the API server more than planning
    itself, and a phase over in a moment tells a watcher nothing. Planning does not wait
    for the write, which reads nothing the plan needs; the write is waited for before
    anything else is written, so the writes keep their order, and one refused
    (NotPersisted) is raised once the plan is made."""
    planned_event = threading.Event()

    def announce() -> None:
        if not planned_event.wait(purge.planning_shown_after_s):
            status.write(purge, planning)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="planning-status") as pool:
        announced = pool.submit(announce)
        try:
            planned = plan(kafka, request, purge.describe_cluster)
        finally:
            planned_event.set()
        announced.result()
    return planned


def follow_remote(follow: Purge) -> RemoteReport | None:
    """After a purge that cut a tiered topic: the remote segments below its cuts checked
    again while RemoteDeletionPending is watched (tiers.check), and status written; None
    when no check was due. It never deletes: the cuts were made, once, by reconcile."""
    found = check(follow)
    if found is None:
        return None
    status.write_remote(follow, found)
    return found.report


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


def too_large(planned: int, limit: int = MAX_PLANNED_PARTITIONS) -> Refusal:
    """The refusal of a plan of more partitions than the binding, or the operator, allows."""
    if limit < MAX_PLANNED_PARTITIONS:
        message = (
            f"the purge covers {planned} partitions; its KafkaClusterBinding allows "
            f"{limit} in one RecordPurge (spec.limits.partitionsPerPurge): split it into "
            "several; nothing was deleted"
        )
        return Refusal(Reason.QUOTA_EXCEEDED, message, planned)
    message = (
        f"the purge covers {planned} partitions; at most {MAX_PLANNED_PARTITIONS} are "
        "supported in one RecordPurge: split it into several; nothing was deleted"
    )
    return Refusal(Reason.TOO_MANY_PARTITIONS, message, planned)
