"""Executor-side fact gathering with the operator's Kafka adapter (confluent-kafka).

Each function takes an iterator of work items (one Spark partition's share) and yields
plain tuples matching the schemas in schemas.py. A retriable Kafka failure raises, which
fails the task and so the run: a plan is never built from a partial picture.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.core.plan_request import Connection

FactsRow = tuple[
    str, int, int | None, int | None, dict[int, int | None], dict[str, int | None], str | None
]


def _value(result: int | KafkaFailure | None, what: str) -> tuple[int | None, str | None]:
    if isinstance(result, KafkaFailure):
        if result.retriable:
            raise KafkaUnavailable(f"{what}: {result}")
        return None, str(result)
    return result, None


def read_facts(
    items: Iterable[tuple[str, int]],
    conn: Connection,
    times: tuple[int, ...],
    groups_of_topic: Mapping[str, Sequence[str]],
) -> Iterator[FactsRow]:
    """(topic, partition) -> log start, high watermark, the offset at each time and the
    committed offset of each group a policy on the topic names (None: nothing committed).

    Offsets and commits are read in the same task for the same partitions, so a
    partition's row leaves the task whole: joining a separate (group, partition) commit
    table to the offsets cost a shuffle of groups x partitions rows, the largest part of
    the plan at fleet size."""
    tps = [TopicPartition(t, p) for t, p in items]
    if not tps:
        return
    admin = KafkaAdmin(conn.bootstrap_servers, conn.client_config)
    earliest, latest = admin.log_bounds(tps)
    at_time = {t: admin.offsets_for_timestamp(tps, t) for t in times}
    # Each group is asked for this task's partitions of the topics whose policies name it.
    asked: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        for group in groups_of_topic.get(tp.topic, ()):
            asked.setdefault(group, []).append(tp)
    committed: dict[TopicPartition, dict[str, int | None]] = {tp: {} for tp in tps}
    # A group's position whatever its type (a share group's start offset, any other's
    # commit): the same adapter call as the in-process planner's.
    for group, read in admin.group_positions(asked).items():
        for tp, offset in read.positions.items():
            committed[tp][group] = offset
    for tp in tps:
        start, err1 = _value(earliest.get(tp), f"log start of {tp}")
        end, err2 = _value(latest.get(tp), f"high watermark of {tp}")
        offsets: dict[int, int | None] = {}
        error = err1 or err2
        for t, found in at_time.items():
            off, err = _value(found.get(tp), f"offset for time {t} of {tp}")
            error = error or err
            offsets[t] = off if off is not None and off >= 0 else None
        yield tp.topic, tp.partition, start, end, offsets, committed[tp], error
