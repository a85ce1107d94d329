"""Partition offsets as Kafka itself reports them (ListOffsets through the AdminClient):
log start offsets, high watermarks."""

from __future__ import annotations

import tenacity
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec


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
        def refresh(_: tenacity.RetryCallState) -> None:
            admin.list_topics(timeout=30)

        @tenacity.retry(
            retry=tenacity.retry_if_exception_type((KafkaException, TimeoutError, Unanswered)),
            stop=tenacity.stop_after_delay(300),
            wait=tenacity.wait_fixed(2),
            before_sleep=refresh,
            reraise=True,
        )
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

        out.update(read())
    return out


def log_starts(admin: AdminClient, topic: str, partitions: int) -> list[int]:
    return _offsets(admin, topic, partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]


def high_watermarks(admin: AdminClient, topic: str, partitions: int) -> list[int]:
    return _offsets(admin, topic, partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]


class Unanswered(Exception):
    """Kafka gave no offset for a partition."""


def _offsets(admin: AdminClient, topic: str, partitions: int, spec: OffsetSpec) -> list[int]:
    # librdkafka answers "No leaders found" when its metadata cache lags a leader change
    # (brokers restarted by other tests); a fresh look a moment later gets the answer.
    def refresh(_: tenacity.RetryCallState) -> None:
        admin.list_topics(topic, timeout=10)

    # A request sent to a broker that was just killed gets no answer: it times out, and
    # the next one, after a metadata refresh, goes to the partition's new leader.
    @tenacity.retry(
        retry=tenacity.retry_if_exception_type((KafkaException, TimeoutError, Unanswered)),
        stop=tenacity.stop_after_attempt(20),
        wait=tenacity.wait_fixed(0.5),
        before_sleep=refresh,
        reraise=True,
    )
    def read() -> list[int]:
        futures = admin.list_offsets(
            {TopicPartition(topic, p): spec for p in range(partitions)}, request_timeout=10
        )
        by_partition = {tp.partition: f.result(timeout=15).offset for tp, f in futures.items()}
        if any(offset < 0 for offset in by_partition.values()):
            # -1001 (no offset) comes back while a partition has no leader to answer.
            raise Unanswered(f"{topic}: {by_partition}")
        return [by_partition[p] for p in range(partitions)]

    return read()
