"""Delete, then read the log start back: the one way both resources apply their cuts.

DeleteRecords answers with a low watermark, but the log start that counts is the one a
fresh ListOffsets reads afterwards; a cut is applied only when that read shows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.services.ports import KafkaCutter


@dataclass(frozen=True)
class Applied:
    """What became of one cut: the log start read back, or why not."""

    target: int
    log_start_after: int | None = None
    failure: KafkaFailure | None = None
    # DeleteRecords succeeded but the log start could not be read back (or not at the cut
    # yet: a follower lagging); the next attempt looks again rather than claim success.
    unverified: str | None = None

    @property
    def done(self) -> bool:
        return self.log_start_after is not None and self.log_start_after >= self.target


def delete_and_verify(
    kafka: KafkaCutter, cuts: Mapping[TopicPartition, int]
) -> dict[TopicPartition, Applied]:
    """DeleteRecords for every cut in one call, then one ListOffsets of the log starts."""
    if not cuts:
        return {}
    results = kafka.delete_records(cuts)
    verified = kafka.offsets(list(cuts), "earliest")
    out: dict[TopicPartition, Applied] = {}
    for tp, target in cuts.items():
        result, after = results.get(tp), verified.get(tp)
        if isinstance(result, KafkaFailure):
            out[tp] = Applied(target, failure=result)
        elif isinstance(after, int):
            out[tp] = Applied(
                target,
                log_start_after=after,
                unverified=None
                if after >= target
                else f"low watermark read back as {after}, expected {target}",
            )
        else:
            out[tp] = Applied(target, unverified=f"log start not read back: {after}")
    return out
