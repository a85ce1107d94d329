"""The one status writer of a RecordErasure: each step's value (outcomes.py) becomes the
status patch here, and nowhere else in the erasure is the StatusStore written.

    write ... Scanning: the first scan begins
    end ..... Refusal, Completed: a final phase; the handler's Outcome
    retry ... NotReady, Waiting, Unsigned: the status of a run to be looked at again; its
              Retry (quiet when it only waits on the cleaner or on retention)

Conditions: Ready (can the erasure proceed), Erased (how far its keys are gone: reasons
Tombstoned ... KeyErased), DeadlineAtRisk (spec.deadline against the topics' configs)
and ReceiptSigned. Every value here is a digest, an offset, a count or a topic name:
an ErasureKey's bytes never reach this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import ConditionStatus, Reason
from kafka_retention.core.erasure_states import Phase
from kafka_retention.services.erasure import evidence as ev
from kafka_retention.services.erasure.inputs import Erasure
from kafka_retention.services.erasure.outcomes import (
    Completed,
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
    conditions = _set(erasure, None, "Ready", "True", Reason.IN_PROGRESS, "scanning the topics")
    erasure.store.patch({**_run(step.run), "phase": Phase.SCANNING, "conditions": conditions})


def end(erasure: Erasure, ending: Refusal | Completed) -> Outcome:
    if isinstance(ending, Refusal):
        return _refused(erasure, ending)
    return _completed(erasure, ending)


def retry(erasure: Erasure, waiting: NotReady | Waiting | Unsigned) -> Retry:
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
    conditions = _set(
        erasure, None, "Ready", "False", Reason.SIGNING_KEY_UNAVAILABLE, waiting.message
    )
    conditions = _set(
        erasure, conditions, "Erased", "True", waiting.reason, "no record with a listed key is left"
    )
    conditions = _set(
        erasure,
        conditions,
        "ReceiptSigned",
        "False",
        Reason.SIGNING_KEY_UNAVAILABLE,
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
        f"{Reason.SIGNING_KEY_UNAVAILABLE}: {waiting.message}",
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
    erasure.store.patch(document)
    return Outcome(
        done.phase,
        done.message,
        finished=True,
        reason=done.reason,
        events=list(done.events),
        matches_remaining=done.picture.summary.get("matchesRemaining", 0),
    )


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
