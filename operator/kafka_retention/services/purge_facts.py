"""What a RecordPurge plans from: every fact read now, then one entry per partition.

Retriable trouble aborts the whole read (KafkaUnavailable), so nothing is ever planned
from a partial picture; a topic or partition that fails for good becomes a failed entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.purge import (
    UNKNOWN_TOPIC_OR_PARTITION,
    PartitionPlan,
    PlanInput,
    PurgeRequest,
    plan_purge,
)
from kafka_retention.core.purge_states import State
from kafka_retention.core.topics import delete_refusal
from kafka_retention.services.fresh import raise_if_retriable, read_facts
from kafka_retention.services.ports import KafkaPlanner


def plan_entries(kafka: KafkaPlanner, request: PurgeRequest) -> list[dict[str, Any]]:
    """The plan, one status-shaped entry per partition (or per unplannable topic)."""
    return [entry(plan) for plan in plan_purge(request, gather_facts(kafka, request))]


def gather_facts(kafka: KafkaPlanner, request: PurgeRequest) -> PlanInput:
    """Every fact the plan depends on, read now."""
    given = PlanInput()
    topics = sorted(request.topic_names())
    for topic, parts in kafka.topic_partitions(topics).items():
        if isinstance(parts, KafkaFailure):
            raise_if_retriable(parts)
            given.topic_errors[topic] = str(parts)
        else:
            given.topic_partitions[topic] = parts
    existing = [t for t in topics if t in given.topic_partitions]
    for topic, config in kafka.topic_configs(existing).items():
        if isinstance(config, KafkaFailure):
            raise_if_retriable(config)
            given.topic_errors[topic] = str(config)
            continue
        refusal = delete_refusal(topic, config)
        if refusal is not None:
            given.topic_errors[topic] = refusal
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
    tps_of_topic: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        tps_of_topic.setdefault(tp.topic, []).append(tp)
    by_timestamp: dict[int, list[TopicPartition]] = {}
    for tcut in request.topics:
        if tcut.timestamp_ms is not None and tcut.topic not in given.topic_errors:
            by_timestamp.setdefault(tcut.timestamp_ms, []).extend(tps_of_topic.get(tcut.topic, []))
    for_times: dict[TopicPartition, dict[int, int | None]] = {}
    for ts, ts_tps in by_timestamp.items():
        for tp, off in kafka.offsets_for_timestamp(ts_tps, ts).items():
            if isinstance(off, KafkaFailure):
                raise_if_retriable(off)
                given.partition_errors[tp] = str(off)
            else:
                for_times.setdefault(tp, {})[ts] = off if off >= 0 else None
    given.facts = read_partition_facts(kafka, request, tps, given.partition_errors)
    for tp, fact in given.facts.items():
        if tp in for_times:
            given.facts[tp] = replace(fact, offsets_for_times=for_times[tp])
    return given


def read_partition_facts(
    kafka: KafkaPlanner,
    request: PurgeRequest,
    tps: Sequence[TopicPartition],
    errors: dict[TopicPartition, str],
) -> dict[TopicPartition, PartitionFacts]:
    """Log start, high watermark and the guard groups' committed offsets, read now."""
    facts, failed = read_facts(kafka, tps, lambda tp: request.guard_groups(tp.topic))
    errors.update(failed)
    return facts


def entry(plan: PartitionPlan) -> dict[str, Any]:
    out: dict[str, Any] = {
        "topic": plan.tp.topic,
        "partition": plan.tp.partition,
        "state": str(State.FAILED if plan.error else State.PLANNED),
    }
    if plan.error:
        out["error"] = plan.error
    else:
        out |= {
            "requestedOffset": plan.target,
            "logStartBefore": plan.log_start,
            "highWatermark": plan.high_watermark,
            "recordsToDelete": plan.records_to_delete,
            "reason": plan.reason,
        }
    if plan.notes:
        out["note"] = "; ".join(plan.notes)
    return out


def tp_of(item: dict[str, Any]) -> TopicPartition:
    return TopicPartition(str(item["topic"]), int(item["partition"]))
