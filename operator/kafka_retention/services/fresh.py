"""The read every destructive step starts from: offsets and group positions, now; or, where
the broker checks the offsets itself (DeleteRecords refuses a cut above the high
watermark and does nothing below the log start), the group positions alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from kafka_retention.core.cluster_features import UnknownGroups, unknown_groups
from kafka_retention.core.facts import GroupRead, GroupType, PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.services.ports import KafkaCutter

K = TypeVar("K")
V = TypeVar("V")


def raise_if_retriable(failure: KafkaFailure) -> None:
    if failure.retriable:
        raise KafkaUnavailable(str(failure))


def answered(results: Mapping[K, V | KafkaFailure], errors: dict[K, str]) -> dict[K, V]:
    """The values of a per-key answer. A failure that goes away by itself raises
    KafkaUnavailable (nothing is decided on a partial picture); one that lasts is put in
    `errors` under its key, in words."""
    out: dict[K, V] = {}
    for key, value in results.items():
        if isinstance(value, KafkaFailure):
            raise_if_retriable(value)
            errors[key] = str(value)
        else:
            out[key] = value
    return out


@dataclass
class Fresh:
    """What one fresh read found: facts per partition, the partitions that failed for good
    (with why), and the type each group was read as."""

    facts: dict[TopicPartition, PartitionFacts] = field(default_factory=dict)
    errors: dict[TopicPartition, str] = field(default_factory=dict)
    group_types: dict[str, GroupType] = field(default_factory=dict)


def read_facts(
    kafka: KafkaCutter,
    tps: Sequence[TopicPartition],
    groups_of: Callable[[TopicPartition], Iterable[str]],
    also_groups: Iterable[str] = (),
) -> Fresh:
    """Log start, high watermark and the position of each partition's groups (a share
    group's share-partition start offset, any other group's committed offset).
    `also_groups` are typed even when no partition read names them (a purge reports the
    type of every group it names, in the same group read).

    Retriable trouble raises KafkaUnavailable, so nothing is decided on a partial picture;
    a partition that fails for good is returned among the errors instead.
    """
    # Both in flight at once: neither read depends on the other (a cut is held to the
    # high watermark whatever a group committed, and re-checked against the groups just
    # before the delete), so the plan waits for the slower, not for the sum.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-reads") as pool:
        reading = pool.submit(_group_reads, kafka, tps, groups_of, also_groups)
        earliest, latest = kafka.log_bounds(tps)
        reads = reading.result()
    committed: dict[str, Mapping[TopicPartition, int | None]] = {
        group: read.positions for group, read in reads.items()
    }
    out = Fresh(group_types={group: read.type for group, read in reads.items()})
    for tp in tps:
        start, end = earliest.get(tp), latest.get(tp)
        problem = next((x for x in (start, end) if isinstance(x, KafkaFailure)), None)
        if problem is not None:
            raise_if_retriable(problem)
            out.errors[tp] = str(problem)
            continue
        if not isinstance(start, int) or not isinstance(end, int):
            raise KafkaUnavailable(f"no offsets returned for {tp}")
        out.facts[tp] = PartitionFacts(
            tp, start, end, {g: committed[g].get(tp) for g in groups_of(tp)}
        )
    return out


def read_positions(
    kafka: KafkaCutter,
    tps: Sequence[TopicPartition],
    groups_of: Callable[[TopicPartition], Iterable[str]],
) -> dict[TopicPartition, dict[str, int | None]]:
    """Each partition's groups' positions, read now (None: the group has none there)."""
    reads = _group_reads(kafka, tps, groups_of, ())
    return {tp: {g: reads[g].positions.get(tp) for g in groups_of(tp)} for tp in tps}


def _group_reads(
    kafka: KafkaCutter,
    tps: Sequence[TopicPartition],
    groups_of: Callable[[TopicPartition], Iterable[str]],
    also_groups: Iterable[str],
) -> Mapping[str, GroupRead]:
    wanted: dict[str, list[TopicPartition]] = {g: [] for g in also_groups}
    for tp in tps:
        for group in groups_of(tp):
            wanted.setdefault(group, []).append(tp)
    return kafka.group_positions(wanted) if wanted else {}


def unsupported_groups(
    kafka: KafkaCutter, types: Mapping[str, GroupType | str]
) -> UnknownGroups | None:
    """The named groups that answer as no group at all on a cluster that cannot have
    share or streams groups (Kafka 3.9, say, or 4.1 with share groups off): each may be
    one written for another cluster, which a status should say. What the cluster runs is
    read only when some group is absent."""
    if not any(str(t) == GroupType.NONE for t in types.values()):
        return None
    return unknown_groups(types, kafka.cluster_features())
