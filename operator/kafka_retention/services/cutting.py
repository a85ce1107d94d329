"""Delete, with the broker's answer as the verification: the one way both resources apply
their cuts.

DeleteRecords succeeds only once the log start of every live replica has reached the cut
(else REQUEST_TIMED_OUT), and answers with that low watermark, the smallest log start
among live replicas: a cut is applied when the answer says so. Only partitions whose
delete failed in a way that may still have deleted (a retriable failure: a timeout, a
leader moving) or got no answer are read back with ListOffsets, so a delete that landed
is neither done twice nor reported as failed.

The broker refuses a cut above the high watermark itself (OFFSET_OUT_OF_RANGE). A high
watermark can drop between the fresh read and the delete (an unclean leader election).
For a RecordPurge (`lower=True`) such a cut is lowered to the high watermark read then
and tried once more, never raised: what its re-check did when it read offsets itself.
A RetentionPolicy's cut stays refused (a retriable failure): records written since the
truncation may be newer than its rules allow to cut, and its next run plans from new
facts.

No cut below zero is ever sent: the broker reads -1 as "the high watermark".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.purge import OFFSET_OUT_OF_RANGE
from kafka_retention.services.ports import KafkaCutter


@dataclass(frozen=True)
class Applied:
    """What became of one cut: the log start it left, or why not. `target` is the cut
    applied, lower than the one asked when the high watermark had dropped below it."""

    target: int
    log_start_after: int | None = None
    failure: KafkaFailure | None = None
    # The answer did not show the log start at the cut (or there was no answer and the
    # read-back did not show it either); the next attempt looks again rather than claim
    # success.
    unverified: str | None = None

    @property
    def done(self) -> bool:
        return self.log_start_after is not None and self.log_start_after >= self.target


def delete_and_verify(
    kafka: KafkaCutter, cuts: Mapping[TopicPartition, int], *, lower: bool = False
) -> dict[TopicPartition, Applied]:
    """DeleteRecords for every cut in one call; ListOffsets only where the answer leaves
    the outcome open; with `lower`, one more DeleteRecords for cuts above a dropped high
    watermark."""
    out: dict[TopicPartition, Applied] = {
        tp: Applied(target, failure=_NEGATIVE) for tp, target in cuts.items() if target < 0
    }
    cuts = {tp: target for tp, target in cuts.items() if target >= 0}
    if not cuts:
        return out
    results = kafka.delete_records(cuts)
    unsure: list[TopicPartition] = []
    above: dict[TopicPartition, tuple[int, KafkaFailure]] = {}
    for tp, target in cuts.items():
        result = results.get(tp)
        if isinstance(result, int):
            out[tp] = answered(target, result)
        elif result is None or result.retriable:
            unsure.append(tp)
        elif result.code == OFFSET_OUT_OF_RANGE:
            above[tp] = (target, result)
            if not lower:
                out[tp] = Applied(target, failure=_dropped(result))
        else:
            out[tp] = Applied(target, failure=result)
    if unsure:
        out.update(_read_back(kafka, {tp: cuts[tp] for tp in unsure}, results))
    if above and lower:
        out.update(_lowered(kafka, above))
    return out


# A negative cut would read as "the high watermark" at the broker: never sent.
_NEGATIVE = KafkaFailure("INVALID_CUT", "a cut below offset 0 is never sent", False)


def _dropped(refused: KafkaFailure) -> KafkaFailure:
    """A refusal above the high watermark, as a failure to try again from fresh facts."""
    return KafkaFailure(
        refused.code,
        f"{refused.message} (the high watermark dropped below the cut; planned again "
        "from fresh offsets)",
        True,
    )


def answered(target: int, low_watermark: int) -> Applied:
    if low_watermark >= target:
        return Applied(target, log_start_after=low_watermark)
    return Applied(
        target,
        log_start_after=low_watermark,
        unverified=f"low watermark answered as {low_watermark}, expected {target}",
    )


def _read_back(
    kafka: KafkaCutter,
    cuts: Mapping[TopicPartition, int],
    results: Mapping[TopicPartition, int | KafkaFailure],
) -> dict[TopicPartition, Applied]:
    """A timed-out delete may still have landed: the log start read now says."""
    read = kafka.offsets(list(cuts), "earliest")
    out: dict[TopicPartition, Applied] = {}
    for tp, target in cuts.items():
        after, result = read.get(tp), results.get(tp)
        if isinstance(after, int) and after >= target:
            out[tp] = Applied(target, log_start_after=after)
        elif isinstance(result, KafkaFailure):
            out[tp] = Applied(target, failure=result)
        else:
            out[tp] = Applied(
                target, unverified=f"no answer to the delete; log start read as {after}"
            )
    return out


def _lowered(
    kafka: KafkaCutter, cuts: Mapping[TopicPartition, tuple[int, KafkaFailure]]
) -> dict[TopicPartition, Applied]:
    """Cuts the broker found above its high watermark: lowered to the high watermark read
    now and deleted once more; a cut the log start has already reached needs nothing."""
    earliest, latest = kafka.log_bounds(list(cuts))
    out: dict[TopicPartition, Applied] = {}
    again: dict[TopicPartition, int] = {}
    for tp, (target, refused) in cuts.items():
        start, end = earliest.get(tp), latest.get(tp)
        if not isinstance(start, int) or not isinstance(end, int):
            # Which it was cannot be told now: tried again later, from the stored plan.
            out[tp] = Applied(target, failure=_dropped(refused))
        elif end >= target:
            # Not a dropped high watermark: the refusal stands.
            out[tp] = Applied(target, failure=refused)
        elif end <= start:
            out[tp] = Applied(end, log_start_after=start)
        else:
            again[tp] = end
    if again:
        retried = kafka.delete_records(again)
        for tp, target in again.items():
            result = retried.get(tp)
            if isinstance(result, int):
                out[tp] = answered(target, result)
            else:
                failure = result or KafkaFailure("UNKNOWN", "no answer to the delete", True)
                out[tp] = Applied(target, failure=failure)
    return out
