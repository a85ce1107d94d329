"""Writing records: tombstones for a RecordErasure, and nothing else. The only Producer in
the operator.

A tombstone goes to the partition named, never where a partitioner would put it: a key
written by a custom partitioner or an explicit partition can sit in several partitions,
and librdkafka's default partitioner hashes differently from Java's anyway. Key bytes
pass through and are never logged or put into a failure's message.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import partial

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kafka_retention.adapters import kafka_calls as calls
from kafka_retention.core.erasure_scan import WrittenTombstone
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure

# librdkafka gives up on a record after this long (retries included); flush waits a
# little longer, so every record has its delivery report, good or bad, by then.
MESSAGE_TIMEOUT_MS = 30_000
FLUSH_TIMEOUT_S = MESSAGE_TIMEOUT_MS / 1000 + 15


class TombstoneWriter:
    """An idempotent producer (acks=all) of null-valued records with given keys, each to
    an explicit partition; every write answers with its offset and timestamp as the
    leader stored them (the delivery report), or its failure."""

    def __init__(self, bootstrap: str, client_config: Mapping[str, str] | None = None) -> None:
        self._producer = Producer(
            {
                **(client_config or {}),
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": MESSAGE_TIMEOUT_MS,
                "log_level": 0,
            }
        )

    def tombstone(self, tp: TopicPartition, key: bytes) -> WrittenTombstone | KafkaFailure:
        """One tombstone, flushed before it answers."""
        return self.tombstones([(tp, key)])[0]

    def tombstones(
        self, writes: Sequence[tuple[TopicPartition, bytes]]
    ) -> list[WrittenTombstone | KafkaFailure]:
        """Tombstones in one batch (flushed once), answered in the order given. Refuses
        (ValueError) a missing or empty key before anything is written: a keyless record
        is no tombstone (and a compacted topic refuses it)."""
        for i, (_, key) in enumerate(writes):
            if not isinstance(key, bytes) or not key:
                raise ValueError(f"tombstone #{i}: a tombstone needs a non-empty key")
        answers: list[WrittenTombstone | KafkaFailure | None] = [None] * len(writes)

        def delivered(i: int, err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                answers[i] = calls.failure(KafkaException(err))
                return
            offset, (_, stamp) = msg.offset(), msg.timestamp()
            if offset is None or offset < 0:
                answers[i] = KafkaFailure("NO_OFFSET", "delivered without an offset", True)
            else:
                answers[i] = WrittenTombstone(int(offset), int(stamp))

        for i, (tp, key) in enumerate(writes):
            for attempt in range(3):
                try:
                    self._producer.produce(
                        tp.topic,
                        key=key,
                        value=None,
                        partition=tp.partition,
                        on_delivery=partial(delivered, i),
                    )
                    break
                except BufferError:  # the local queue is full: let it drain, then again
                    self._producer.poll(1.0)
                    if attempt == 2:
                        answers[i] = KafkaFailure("_QUEUE_FULL", "the producer queue is full", True)
                except KafkaException as exc:
                    answers[i] = calls.failure(exc)
                    break
            self._producer.poll(0)
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while self._producer.flush(1.0) > 0 and time.monotonic() < deadline:
            pass
        # A record without a report by now may still land: a second tombstone for the
        # same key, written on a retry, adds nothing a cleaner will not remove.
        return [
            a
            if a is not None
            else KafkaFailure("_MSG_TIMED_OUT", "no delivery report in time", True)
            for a in answers
        ]

    def close(self) -> None:
        """Deliver what is queued (bounded); a Producer has nothing else to release."""
        self._producer.flush(FLUSH_TIMEOUT_S)
