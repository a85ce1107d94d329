"""Stages 1 and 2 of a RecordPurge: every fact read now, then one entry per partition.

Retriable trouble aborts the whole read (KafkaUnavailable), so nothing is ever planned
from a partial picture; a topic or partition that fails for good becomes a failed entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from kafka_retention.core import topics as topic_rules
from kafka_retention.core.cluster_features import ClusterFeatures, unknown_groups
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge import (
    UNKNOWN_TOPIC_OR_PARTITION,
    PlanInput,
    PurgeRequest,
    plan_purge,
)
from kafka_retention.core.purge_entry import PurgeEntry, planned
from kafka_retention.core.stored_plan import timestamp_partitions, topic_cut_topics
from kafka_retention.core.topics import delete_refusal
from kafka_retention.services.fresh import answered, read_facts
from kafka_retention.services.ports import KafkaPlanner
from kafka_retention.services.purge.tiers import tiered_topics


@dataclass(frozen=True)
class NamedGroup:
    """A group the spec names, and the type it was read as (one entry of status.groups;
    "none": no such group). `note`: why an absent group may not be what was meant (a
    cluster that cannot have share or streams groups)."""

    name: str
    type: str
    note: str | None = None


@dataclass(frozen=True)
class Planned:
    """The plan, the type each named group was read as (status.groups), and the topics
    whose configs enable remote storage (tiers.py reports on them after the cut)."""

    entries: list[PurgeEntry]
    groups: tuple[NamedGroup, ...]
    tiered: frozenset[str] = frozenset()
    kafka: Mapping[str, object] | None = None  # status.kafka
    # Its read, when it was still going as the plan was made: status.kafka comes later.
    kafka_pending: Future[ClusterFeatures | None] | None = None


# How long a plan, its own reads done, waits for what the cluster runs when only
# status.kafka needs it: not at all. The first read of an operator starts the group
# reader's JVM (seconds on a busy machine), and status.kafka, which a read still going
# writes when it answers (pipeline._ended), is not worth holding a delete for; later
# reads come from a cache and have answered by then.
FEATURES_WAIT_S = 0.0


def plan(kafka: KafkaPlanner, request: PurgeRequest, describe: bool = True) -> Planned:
    """The plan from facts read now. What the cluster runs decides whether an empty
    cleanup.policy takes DeleteRecords and whether an absent group may be of a type the
    cluster lacks, and is read only when one of those comes up; with `describe`
    (status.kafka) it is read anyway, beside the plan's own reads and off their path. The
    CLI, which shows no status.kafka, does not: a first read starts the group reader's
    JVM, which its process would then wait for at exit."""
    if not describe:
        lazy = functools.cache(kafka.cluster_features)
        given, group_types, tiered = gather_facts(kafka, request, lazy)
        absent = any(t == "none" for t in group_types.values())
        found = lazy() if absent else None
        return _planned(request, given, group_types, tiered, found)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cluster-features")
    try:
        reading = pool.submit(kafka.cluster_features)
        given, group_types, tiered = gather_facts(kafka, request, reading.result)
        absent = any(t == "none" for t in group_types.values())
        try:
            found = reading.result(timeout=None if absent else FEATURES_WAIT_S)
        except TimeoutError:
            # Still reading (a first read of this cluster, a busy machine): the plan
            # goes on, and status.kafka comes with a later status write.
            planned = _planned(request, given, group_types, tiered, None)
            return replace(planned, kafka_pending=reading)
    finally:
        pool.shutdown(wait=False)
    return _planned(request, given, group_types, tiered, found)


def kafka_answered(reading: Future[ClusterFeatures | None]) -> Mapping[str, object] | None:
    """status.kafka from a read that has answered; None while it has not (never waited
    for) or when it failed."""
    if not reading.done() or reading.exception() is not None:
        return None
    found = reading.result()
    return found.status() if found is not None else None


def _planned(
    request: PurgeRequest,
    given: PlanInput,
    group_types: Mapping[str, str],
    tiered: frozenset[str],
    found: ClusterFeatures | None,
) -> Planned:
    entries = [planned(p) for p in plan_purge(request, given)]
    unknown = unknown_groups(group_types, found)
    groups = tuple(
        NamedGroup(
            g,
            group_types.get(g, "none"),
            unknown.note() if unknown is not None and g in unknown.groups else None,
        )
        for g in request.all_groups()
    )
    return Planned(entries, groups, tiered, found.status() if found else None)


def gather_facts(
    kafka: KafkaPlanner,
    request: PurgeRequest,
    features: Callable[[], ClusterFeatures | None] = lambda: None,
) -> tuple[PlanInput, dict[str, str], frozenset[str]]:
    """Every fact the plan depends on, read now; the named groups' types, from the same
    group read; and the tiered topics among those named, from the configs read.
    `features` is asked (and waited for) only when a topic's cleanup.policy is empty."""
    given = PlanInput()
    topics = sorted(request.topic_names())
    # The configs of every named topic are asked for while the metadata is read: one
    # round trip instead of two. Only those of topics the metadata knows count, so a
    # missing topic still fails as the metadata says.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="topic-configs") as pool:
        asked = pool.submit(kafka.topic_configs, topics)
        given.topic_partitions = answered(kafka.topic_partitions(topics), given.topic_errors)
        described = asked.result()
    existing = {t: c for t, c in described.items() if t in given.topic_partitions}
    configs = answered(existing, given.topic_errors)
    empty_allowed = topic_rules.has_empty_policy(configs.values()) and (
        (found := features()) is not None and found.deletes_with_empty_cleanup_policy()
    )
    for topic, config in configs.items():
        refusal = delete_refusal(topic, config, empty_allowed)
        if refusal is not None:
            given.topic_errors[topic] = refusal
    tps = _partitions_to_read(request, given)
    # The timestamp lookups go out with the log bounds and group reads: none depends on
    # another (a cut found by time is still held to the high watermark read beside it).
    # Only the lookups write given.partition_errors until their result is taken.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="time-lookups") as pool:
        looking = pool.submit(_offsets_for_times, kafka, request, given, tps)
        fresh = read_facts(
            kafka, tps, lambda tp: request.guard_groups(tp.topic), also_groups=request.all_groups()
        )
        for_times = looking.result()
    given.partition_errors.update(fresh.errors)
    given.facts = fresh.facts
    for tp, fact in given.facts.items():
        if tp in for_times:
            given.facts[tp] = replace(fact, offsets_for_times=for_times[tp])
    return given, {g: str(t) for g, t in fresh.group_types.items()}, tiered_topics(configs)


def _partitions_to_read(request: PurgeRequest, given: PlanInput) -> list[TopicPartition]:
    """The partitions the request covers on topics that exist and may be cut; a named
    partition the topic lacks becomes an error instead."""
    tps: list[TopicPartition] = []
    for cut in request.partitions:
        known = given.topic_partitions.get(cut.tp.topic)
        if known is not None and cut.tp.partition not in known:
            given.partition_errors[cut.tp] = (
                f"{UNKNOWN_TOPIC_OR_PARTITION}: topic {cut.tp.topic} has no partition "
                f"{cut.tp.partition} (it has {len(known)})"
            )
        elif known is not None:
            tps.append(cut.tp)
    for tcut in request.topics:
        if tcut.topic not in given.topic_errors:
            tps += [
                TopicPartition(tcut.topic, p) for p in given.topic_partitions.get(tcut.topic, [])
            ]
    return tps


def _offsets_for_times(
    kafka: KafkaPlanner, request: PurgeRequest, given: PlanInput, tps: list[TopicPartition]
) -> dict[TopicPartition, dict[int, int | None]]:
    """The offset at each timestamp cut's time, per partition of that topic."""
    tps_of_topic: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        tps_of_topic.setdefault(tp.topic, []).append(tp)
    by_timestamp: dict[int, list[TopicPartition]] = {}
    for tcut in request.topics:
        if tcut.timestamp_ms is not None and tcut.topic not in given.topic_errors:
            by_timestamp.setdefault(tcut.timestamp_ms, []).extend(tps_of_topic.get(tcut.topic, []))
    for_times: dict[TopicPartition, dict[int, int | None]] = {}
    for ts, ts_tps in by_timestamp.items():
        found = answered(kafka.offsets_for_timestamp(ts_tps, ts), given.partition_errors)
        for tp, off in found.items():
            for_times.setdefault(tp, {})[ts] = off if off >= 0 else None
    return for_times


@dataclass(frozen=True)
class StoredPlanFacts:
    """What a stored plan is checked against (core.stored_plan.problems), read now."""

    partitions: dict[str, list[int]]
    offsets_at: dict[TopicPartition, int | None]


def stored_plan_facts(
    kafka: KafkaPlanner, request: PurgeRequest, entries: list[PurgeEntry]
) -> StoredPlanFacts:
    """The partitions of the whole-topic cuts the plan still has entries on, and the
    offsets at each timestamp cut's time. A topic or partition that cannot be read for
    good is left out (the broker cuts nothing there); trouble that passes raises
    KafkaUnavailable, so the plan is checked on a whole picture or not run."""
    errors: dict[str, str] = {}
    topics = topic_cut_topics(request, entries)
    partitions = answered(kafka.topic_partitions(topics), errors) if topics else {}
    offsets_at: dict[TopicPartition, int | None] = {}
    tp_errors: dict[TopicPartition, str] = {}
    for ts, tps in timestamp_partitions(request, entries).items():
        for tp, off in answered(kafka.offsets_for_timestamp(tps, ts), tp_errors).items():
            offsets_at[tp] = off if off >= 0 else None
    return StoredPlanFacts(dict(partitions), offsets_at)
