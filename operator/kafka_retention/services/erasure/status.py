"""The one status writer of a RecordErasure: each step's value (outcomes.py) becomes the
status patch here, and nowhere else in the erasure is the StatusStore written.

    write ... Scanning: the first scan begins
    end ..... Refusal, Completed: a final phase; the handler's Outcome
    retry ... NotReady, Waiting, Unsigned: the status of a run to be looked at again; its
              Retry (quiet when it only waits on the cleaner or on retention)

A write the API server refuses (core.failures.WriteRefused: too large, a conflict, the
API server away) is never raised out of here: the smallest status that says so (Ready
False, StateNotPersisted, phase and evidence as stored before) and a Retry. The next run
starts again from the stored status; the steps are idempotent (a tombstone already after
a key's last value is found, not written again), so nothing is repeated.

Conditions: Ready (can the erasure proceed), Erased (how far its keys are gone: reasons
Tombstoned ... KeyErased), DeadlineAtRisk (spec.deadline against the topics' configs)
and ReceiptSigned. Every value here is a digest, an offset, a count or a topic name:
an ErasureKey's bytes never reach this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import ConditionStatus, Reason
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.failures import WriteRefused
from kafka_retention.services.erasure import evidence as ev
from kafka_retention.services.erasure.inputs import Erasure
from kafka_retention.services.erasure.outcomes import (
    Completed,
    Event,
    NotReady,
    Outcome,
    Picture,
    Refusal,
    Retry,
    Run,
    Scanning,
    Unsigned,
    Waiting,
)


def write(erasure: Erasure, step: Scanning) -> None:
    """The first scan begins; a refusal raises Retry (nothing was read yet)."""
    message = f"scanning the topics; {step.cause}" if step.cause else "scanning the topics"
    conditions = _set(erasure, None, "Ready", "True", Reason.IN_PROGRESS, message)
    try:
        erasure.store.patch({**_run(step.run), "phase": Phase.SCANNING, "conditions": conditions})
    except WriteRefused as err:
        raise _not_stored(erasure, err, []) from err


def end(erasure: Erasure, ending: Refusal | Completed) -> Outcome:
    """A final phase's status and the handler's Outcome; a refused write raises Retry."""
    try:
        if isinstance(ending, Refusal):
            return _refused(erasure, ending)
        return _completed(erasure, ending)
    except WriteRefused as err:
        events = list(ending.events) if isinstance(ending, Completed) else []
        raise _not_stored(erasure, err, events) from err


def retry(erasure: Erasure, waiting: NotReady | Waiting | Unsigned) -> Retry:
    """The status of a run to be looked at again, and its Retry."""
    try:
        return _retry(erasure, waiting)
    except WriteRefused as err:
        events = [] if isinstance(waiting, NotReady) else list(waiting.events)
        return _not_stored(erasure, err, events)


def _not_stored(erasure: Erasure, err: WriteRefused, events: list[Event]) -> Retry:
    """Ready False with StateNotPersisted, all else as stored: the run is tried again from
    there. The events of what the run did (tombstones written) are still posted."""
    message = (
        f"status not stored: HTTP {err.status} {err.reason}: {err.body[:200]}; the next run "
        "starts again from the stored status"
    )
    conditions = _set(erasure, None, "Ready", "False", Reason.STATE_NOT_PERSISTED, message)
    with contextlib.suppress(WriteRefused):  # refused again: the Retry's message says why
        erasure.store.patch({"conditions": conditions})
    return Retry(f"{Reason.STATE_NOT_PERSISTED}: {message}", erasure.retry_delay, events=events)


def _retry(erasure: Erasure, waiting: NotReady | Waiting | Unsigned) -> Retry:
    if isinstance(waiting, NotReady):
        conditions = _set(erasure, None, "Ready", "False", waiting.reason, waiting.message)
        erasure.store.patch({**_run(waiting.run), "phase": waiting.phase, "conditions": conditions})
        return Retry(f"{waiting.reason}: {waiting.message}", erasure.retry_delay)
    if isinstance(waiting, Waiting):
        conditions = _set(erasure, None, "Ready", "True", Reason.IN_PROGRESS, waiting.message)
        conditions = _set(erasure, conditions, "Erased", "False", waiting.reason, waiting.message)
        erasure.store.patch(
            {
                **_run(waiting.run),
                "phase": waiting.phase,
                **_picture(erasure, waiting.picture, conditions),
            }
        )
        return Retry(
            f"{waiting.phase}: {waiting.message}",
            waiting.delay,
            quiet=True,
            events=waiting.events,
        )
    conditions = _set(erasure, None, "Ready", "False", waiting.why, waiting.message)
    conditions = _set(
        erasure, conditions, "Erased", "True", waiting.reason, "no record with a listed key is left"
    )
    conditions = _set(
        erasure,
        conditions,
        "ReceiptSigned",
        "False",
        waiting.why,
        waiting.message,
    )
    erasure.store.patch(
        {
            **_run(waiting.run),
            # KeyErased is true; the run is still looked at again until the receipt is
            # signed (pipeline.finished).
            "phase": Phase.KEY_ERASED,
            **_picture(erasure, waiting.picture, conditions),
        }
    )
    return Retry(
        f"{waiting.why}: {waiting.message}",
        waiting.delay,
        events=waiting.events,
    )


def _refused(erasure: Erasure, refusal: Refusal) -> Outcome:
    now = erasure.now()
    conditions = _set(erasure, None, "Ready", "False", refusal.reason, refusal.message)
    conditions = _set(erasure, conditions, "Erased", "False", refusal.reason, refusal.message)
    erasure.store.patch(
        {
            "phase": Phase.FAILED,
            "observedGeneration": erasure.generation,
            "completedAt": cond.timestamp(now),
            "conditions": conditions,
        }
    )
    return Outcome(
        Phase.FAILED,
        refusal.message,
        finished=True,
        reason=refusal.reason,
        invalid_field=refusal.field,
    )


def _completed(erasure: Erasure, done: Completed) -> Outcome:
    now = erasure.now()
    erased: ConditionStatus = "True" if done.phase == Phase.KEY_ERASED else "False"
    ready: ConditionStatus = "False" if done.phase == Phase.FAILED else "True"
    conditions = _set(erasure, None, "Ready", ready, done.reason, done.message)
    conditions = _set(erasure, conditions, "Erased", erased, done.reason, done.message)
    document: dict[str, Any] = {
        **_run(done.run),
        "phase": done.phase,
        "completedAt": cond.timestamp(now),
    }
    if done.receipt is not None:
        conditions = _set(
            erasure,
            conditions,
            "ReceiptSigned",
            "True",
            Reason.RECEIPT_SIGNED,
            f"receipt sha256 {done.receipt['sha256']}, key {done.receipt['keyId']}, "
            f"ConfigMap {done.receipt['configMap']}",
        )
        document["receipt"] = dict(done.receipt)
    document.update(_picture(erasure, done.picture, conditions))
    try:
        erasure.store.patch(document)
    except WriteRefused as err:
        if done.receipt is None or not _never_fits(err):
            raise  # tried again from the stored status (end)
        # Signed and stored, and status will never hold all of it: the smallest status
        # that says so, rather than a new scan and signature on every retry.
        document = _without_detail(erasure, document, err)
        erasure.store.patch(document)
    return Outcome(
        done.phase,
        done.message,
        finished=True,
        reason=done.reason,
        events=list(done.events),
        matches_remaining=done.picture.summary.get("matchesRemaining", 0),
    )


# etcd's refusal of an oversized write comes back as a 500; a 413 or a 422 (a schema
# limit) is not transient either: the same write is refused again.
_TRANSIENT = {409, 429, 500, 502, 503, 504}
_NEVER_FITS = "request is too large"


def _never_fits(err: WriteRefused) -> bool:
    return err.status not in _TRANSIENT or _NEVER_FITS in err.body


def _without_detail(
    erasure: Erasure, document: dict[str, Any], err: WriteRefused
) -> dict[str, Any]:
    """The completed status without its evidence and topics lists: the signed receipt in
    its ConfigMap holds all of it, and Ready says why status does not."""
    message = (
        f"status.evidence and status.topics left out: HTTP {err.status} {err.reason}; "
        f"the receipt ConfigMap {document['receipt']['configMap']} holds the evidence"
    )
    ready = cond.set_condition(
        document["conditions"],
        "Ready",
        "True",
        Reason.STATE_NOT_PERSISTED,
        message,
        erasure.generation,
        erasure.now(),
    )
    return {**document, "evidence": None, "topics": None, "conditions": ready}


def _picture(
    erasure: Erasure, picture: Picture, conditions: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "topics": [dict(t) for t in picture.topics],
        "evidence": ev.fold(picture.evidence),
        "evidenceRef": dict(picture.evidence_ref) if picture.evidence_ref else None,
        "summary": dict(picture.summary),
        "deadline": dict(picture.deadline),
        "conditions": cond.stamp(conditions, picture.at_risk, erasure.generation, erasure.now()),
    }


def _run(run: Run) -> dict[str, Any]:
    return {"observedGeneration": run.generation, "startedAt": run.started_at}


def _set(
    erasure: Erasure,
    conditions: list[dict[str, Any]] | None,
    type_: str,
    status: ConditionStatus,
    reason: Reason,
    message: str,
) -> list[dict[str, Any]]:
    """The erasure's conditions (as stored, or as set so far by this write) with one set."""
    base: Any = conditions if conditions is not None else erasure.status.get("conditions")
    given: list[Mapping[str, Any]] | None = base
    return cond.set_condition(
        given, type_, status, reason, message, erasure.generation, erasure.now()
    )
