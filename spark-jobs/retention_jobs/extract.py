"""Executor-side fact gathering with the operator's Kafka adapter (confluent-kafka).

Each function takes an iterator of work items (one Spark partition's share) and yields
plain tuples matching the schemas in schemas.py. A retriable Kafka failure raises, which
fails the task and so the run: a plan is never built from a partial picture.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from kafka_retention.adapters.kafka import KafkaAdmin, KafkaFailure, KafkaUnavailable
from kafka_retention.core.facts import TopicPartition
from retention_jobs.request import Connection

OffsetsRow = tuple[str, int, int | None, int | None, dict[int, int | None], str | None]
CommitRow = tuple[str, str, int, int | None]


def _value(result: int | KafkaFailure | None, what: str) -> tuple[int | None, str | None]:
    if isinstance(result, KafkaFailure):
        if result.retriable:
            raise KafkaUnavailable(f"{what}: {result}")
        return None, str(result)
    return result, None


def read_offsets(
    items: Iterable[tuple[str, int]], conn: Connection, times: tuple[int, ...]
) -> Iterator[OffsetsRow]:
    """(topic, partition) -> log start, high watermark and the offset at each time."""
    tps = [TopicPartition(t, p) for t, p in items]
    if not tps:
        return
    admin = KafkaAdmin(conn.bootstrap_servers, conn.client_config)
    earliest, latest = admin.log_bounds(tps)
    at_time = {t: admin.offsets_for_timestamp(tps, t) for t in times}
    for tp in tps:
        start, err1 = _value(earliest.get(tp), f"log start of {tp}")
        end, err2 = _value(latest.get(tp), f"high watermark of {tp}")
        offsets: dict[int, int | None] = {}
        error = err1 or err2
        for t, found in at_time.items():
            off, err = _value(found.get(tp), f"offset for time {t} of {tp}")
            error = error or err
            offsets[t] = off if off is not None and off >= 0 else None
        yield tp.topic, tp.partition, start, end, offsets, error


def read_commits(
    groups: Iterable[str], conn: Connection, partitions: Mapping[str, Mapping[str, list[int]]]
) -> Iterator[CommitRow]:
    """One admin call per group (the API takes one group at a time): committed offsets on
    the partitions of the policies that name the group, None where it has none."""
    admin = KafkaAdmin(conn.bootstrap_servers, conn.client_config)
    for group in groups:
        tps = [TopicPartition(t, p) for t, parts in partitions[group].items() for p in parts]
        for tp, offset in admin.committed(group, tps).items():
            yield group, tp.topic, tp.partition, offset
