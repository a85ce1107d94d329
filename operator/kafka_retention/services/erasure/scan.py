"""One scan: each partition read from its log start to its high watermark, matched
against the listed digests (adapters.kafka_erasure reads uncommitted records too)."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.services.ports import ErasureKafka


def scan(
    kafka: ErasureKafka, tps: Iterable[TopicPartition], digests: AbstractSet[str]
) -> dict[TopicPartition, PartitionScan]:
    """Every partition's scan; a partition that cannot be read raises KafkaUnavailable
    (an erasure never judges from part of the log: the whole step is tried again)."""
    wanted = sorted(set(tps))
    starts, ends = kafka.log_bounds(wanted)
    failures: dict[TopicPartition, KafkaFailure] = {}
    ranges: dict[TopicPartition, tuple[int, int]] = {}
    out: dict[TopicPartition, PartitionScan] = {}
    for tp in wanted:
        start, end = starts.get(tp), ends.get(tp)
        if not isinstance(start, int) or not isinstance(end, int):
            bad = start if isinstance(start, KafkaFailure) else end
            failures[tp] = (
                bad if isinstance(bad, KafkaFailure) else KafkaFailure("NO_ANSWER", "", True)
            )
        elif start >= end:
            out[tp] = PartitionScan(tp, start, end)  # empty: nothing to read
        else:
            ranges[tp] = (start, end)
    if ranges:
        for tp, found in kafka.scan_keys(ranges, digests).items():
            if isinstance(found, KafkaFailure):
                failures[tp] = found
            else:
                out[tp] = found
    failures.update({tp: KafkaFailure("NO_ANSWER", "", True) for tp in ranges if tp not in out})
    failures = {tp: f for tp, f in failures.items() if tp not in out}
    if failures:
        first = min(failures)
        raise KafkaUnavailable(
            f"{len(failures)} partitions could not be scanned; {first}: {failures[first]}"
        )
    return out
