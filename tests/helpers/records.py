"""Records on the real stack: written, read back, deleted by hand (all with Kafka's own
clients, never the operator's)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from tests.helpers.offsets import latest_offsets

# Record timestamps are in milliseconds.
HOUR = 3_600_000


def hours_ago_on_the_hour(hours: int) -> int:
    """The record timestamp `hours` hours before the current hour began."""
    return (int(time.time() * 1000) // HOUR - hours) * HOUR


def old_then_new(
    old: int, age_ms: int, new: int = 10, *, now: int | None = None, new_age_ms: int = 0
) -> list[int]:
    """Timestamps of `old` records written `age_ms` ago (a millisecond apart), then of
    `new` records written `new_age_ms` ago (now, unless said), before `now`."""
    now = int(time.time() * 1000) if now is None else now
    return [now - age_ms + i for i in range(old)] + [now - new_age_ms + i for i in range(new)]


def utc(ms: int) -> str:
    """A record timestamp as the RFC 3339 time a spec's deleteBefore takes."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def produce(
    bootstrap: str,
    topic: str,
    per_partition: Mapping[int, int],
    *,
    timestamps: Mapping[int, list[int]] | None = None,
    value: bytes = b"v" * 100,
    key: Callable[[int, int], bytes | None] | None = None,
) -> None:
    """Write per_partition[p] records to each partition p (acks=all); optional CreateTimes."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    )
    failures: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(err)

    for partition, count in per_partition.items():
        for i in range(count):
            extra: dict[str, Any] = {}
            if timestamps is not None:
                extra["timestamp"] = timestamps[partition][i]
            producer.produce(
                topic,
                value=value,
                key=key(partition, i) if key else None,
                partition=partition,
                on_delivery=on_delivery,
                **extra,
            )
    assert producer.flush(60) == 0
    assert failures == []


def produce_to_each(
    bootstrap: str, targets: list[tuple[str, int]], value: bytes = b"r", rounds: int = 10
) -> None:
    """One record per entry of `targets` (a partition named n times gets n), exactly. A
    producer that has not yet seen a brand-new topic's partitions refuses records for them
    (unknown partition), which flush() does not count. A failed delivery report does not
    say the record is not written, though: a request that timed out may have landed. So
    after a round with failures the high watermarks say how many each partition still
    lacks, and only those are sent again (sending every failed record again wrote
    duplicates: 20,005 records in 20,000 partitions). Idempotent: the client's own retry
    of a request that timed out in flight, which may have landed, wrote a duplicate too
    (10,001 records in 10,000 partitions on a loaded 7-broker cluster)."""
    # A record waiting for metadata fails after a minute (not librdkafka's default five)
    # and is sent again in the next round with fresh metadata.
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "message.timeout.ms": 60_000,
            "acks": "all",
            "enable.idempotence": True,
        }
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted: dict[tuple[str, int], int] = {}
    for target in targets:
        wanted[target] = wanted.get(target, 0) + 1
    partitions: dict[str, int] = {}
    for topic, partition in wanted:
        partitions[topic] = max(partitions.get(topic, 0), partition + 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # let the producer see every partition first
        seen = producer.list_topics(timeout=10).topics
        if all(t in seen and len(seen[t].partitions) >= n for t, n in partitions.items()):
            break
        time.sleep(0.5)
    before = latest_offsets(admin, list(wanted))
    pending = dict(wanted)
    for _ in range(rounds):
        failures: list[int] = []

        def on_delivery(
            err: KafkaError | None, _msg: Message, failures: list[int] = failures
        ) -> None:
            if err is not None:
                failures.append(1)

        for (topic, partition), count in pending.items():
            for _i in range(count):
                try:
                    producer.produce(
                        topic, value=value, partition=partition, on_delivery=on_delivery
                    )
                except KafkaException:
                    failures.append(1)
                producer.poll(0)
        assert producer.flush(300) == 0
        if not failures:
            return
        time.sleep(2)  # a request that timed out here may still be landing
        now = latest_offsets(admin, list(pending))
        short = {tp: wanted[tp] - (now[tp] - before[tp]) for tp in pending}
        pending = {tp: n for tp, n in short.items() if n > 0}
        if not pending:
            return
        producer.list_topics(timeout=10)  # a fresh look at the metadata
    raise AssertionError(f"{len(pending)} partitions short of records, e.g. {list(pending)[:3]}")


def first_offsets_read(bootstrap: str, topic: str, partitions: int) -> list[int | None]:
    """The first offset a consumer reading from the earliest position gets, per partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    first: dict[int, int | None] = {}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    try:
        deadline = time.monotonic() + 30
        while len(first) < partitions and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=100, timeout=0.2):
                p = int(msg.partition() or 0)
                err = msg.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    first.setdefault(p, None)
                elif err is None:
                    first.setdefault(p, msg.offset())
    finally:
        consumer.close()
    return [first.get(p) for p in range(partitions)]


def delete_records(admin: AdminClient, topic: str, cuts: dict[int, int]) -> None:
    """A manual DeleteRecords, as a person with kafka-delete-records.sh would."""
    futures = admin.delete_records([TopicPartition(topic, p, o) for p, o in cuts.items()])
    for fut in futures.values():
        fut.result(timeout=30)
