"""The read every destructive step starts from: offsets and group positions, now."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.services.ports import KafkaCutter


def raise_if_retriable(failure: KafkaFailure) -> None:
    if failure.retriable:
        raise KafkaUnavailable(str(failure))


def read_facts(
    kafka: KafkaCutter,
    tps: Sequence[TopicPartition],
    groups_of: Callable[[TopicPartition], Iterable[str]],
) -> tuple[dict[TopicPartition, PartitionFacts], dict[TopicPartition, str]]:
    """Log start, high watermark and the position of each partition's groups (a share
    group's share-partition start offset, any other group's committed offset).

    Retriable trouble raises KafkaUnavailable, so nothing is decided on a partial picture;
    a partition that fails for good is returned among the errors instead.
    """
    earliest, latest = kafka.log_bounds(tps)
    wanted: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        for group in groups_of(tp):
            wanted.setdefault(group, []).append(tp)
    committed: dict[str, Mapping[TopicPartition, int | None]] = {
        group: read.positions for group, read in kafka.group_positions(wanted).items()
    }
    facts: dict[TopicPartition, PartitionFacts] = {}
    errors: dict[TopicPartition, str] = {}
    for tp in tps:
        start, end = earliest.get(tp), latest.get(tp)
        problem = next((x for x in (start, end) if isinstance(x, KafkaFailure)), None)
        if problem is not None:
            raise_if_retriable(problem)
            errors[tp] = str(problem)
            continue
        if not isinstance(start, int) or not isinstance(end, int):
            raise KafkaUnavailable(f"no offsets returned for {tp}")
        facts[tp] = PartitionFacts(tp, start, end, {g: committed[g].get(tp) for g in groups_of(tp)})
    return facts, errors
