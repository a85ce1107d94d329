"""Partition offsets as Kafka itself reports them (ListOffsets through the AdminClient):
log start offsets, high watermarks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import tenacity
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

_T = TypeVar("_T")


def latest_offsets(
    admin: AdminClient, partitions: list[tuple[str, int]], chunk: int = 5000
) -> dict[tuple[str, int], int]:
    """Each partition's high watermark, asked in chunks (one request for 20,000 is slow)."""
    out: dict[tuple[str, int], int] = {}
    for i in range(0, len(partitions), chunk):
        part = partitions[i : i + chunk]

        # Brand-new partitions answer NOT_LEADER until their leader broker has taken them
        # on, which after creating 20,000 takes a minute or two past the metadata naming
        # it; the metadata is refreshed between tries, as _offsets does.
        def read(part: list[tuple[str, int]] = part) -> dict[tuple[str, int], int]:
            futures = admin.list_offsets(
                {TopicPartition(t, p): OffsetSpec.latest() for t, p in part},  # type: ignore[no-untyped-call]
                request_timeout=30,
            )
            got = {
                (tp.topic, tp.partition): f.result(timeout=60).offset for tp, f in futures.items()
            }
            if any(offset < 0 for offset in got.values()):
                raise Unanswered(f"no offset for {[tp for tp, o in got.items() if o < 0][:3]}")
            return got

        stop = tenacity.stop_after_delay(300)
        out.update(_until_answered(read, lambda: admin.list_topics(timeout=30), stop, wait_s=2))
    return out


def log_starts(admin: AdminClient, topic: str, partitions: int) -> list[int]:
    return _offsets(admin, topic, partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]


def high_watermarks(admin: AdminClient, topic: str, partitions: int) -> list[int]:
    return _offsets(admin, topic, partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]


class Unanswered(Exception):
    """Kafka gave no offset for a partition."""


def _until_answered(
    read: Callable[[], _T], refresh: Callable[[], object], stop: Any, wait_s: float
) -> _T:
    """read(), tried again while Kafka does not answer it (an error, a timeout, a
    partition without an offset) until `stop`, with a fresh look at the metadata
    (`refresh`) before each try."""

    def before_sleep(_: tenacity.RetryCallState) -> None:
        refresh()

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type((KafkaException, TimeoutError, Unanswered)),
        stop=stop,
        wait=tenacity.wait_fixed(wait_s),
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(read)


def _offsets(admin: AdminClient, topic: str, partitions: int, spec: OffsetSpec) -> list[int]:
    # librdkafka answers "No leaders found" when its metadata cache lags a leader change
    # (brokers restarted by other tests); a fresh look a moment later gets the answer.
    # A request sent to a broker that was just killed gets no answer: it times out, and
    # the next one, after a metadata refresh, goes to the partition's new leader.
    def read() -> list[int]:
        futures = admin.list_offsets(
            {TopicPartition(topic, p): spec for p in range(partitions)}, request_timeout=10
        )
        by_partition = {tp.partition: f.result(timeout=15).offset for tp, f in futures.items()}
        if any(offset < 0 for offset in by_partition.values()):
            # -1001 (no offset) comes back while a partition has no leader to answer.
            raise Unanswered(f"{topic}: {by_partition}")
        return [by_partition[p] for p in range(partitions)]

    stop = tenacity.stop_after_attempt(20)
    return _until_answered(read, lambda: admin.list_topics(topic, timeout=10), stop, wait_s=0.5)
