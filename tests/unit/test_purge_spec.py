"""RecordPurge specs the operator refuses, each error naming the field, and the plans it makes."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.purge import PlanInput, parse_spec, plan_purge
from kafka_retention.core.specs import SpecError

CLUSTER = {"bootstrapServers": "127.0.0.1:9092"}


def spec(**fields: Any) -> dict[str, Any]:
    return {"cluster": CLUSTER, **fields}


@pytest.mark.parametrize(
    ("fields", "field_path"),
    [
        ({}, "spec"),
        (
            {"cluster": {}, "partitions": [{"topic": "t", "partition": 0, "offset": 1}]},
            "spec.cluster.bootstrapServers",
        ),
        (
            {"partitions": [{"topic": "t", "partition": 0, "offset": -2}]},
            "spec.partitions[0].offset",
        ),
        (
            {"partitions": [{"topic": "t", "partition": -1, "offset": 1}]},
            "spec.partitions[0].partition",
        ),
        (
            {"partitions": [{"topic": "bad topic", "partition": 0, "offset": 1}]},
            "spec.partitions[0].topic",
        ),
        (
            {"partitions": [{"topic": "__consumer_offsets", "partition": 0, "offset": 1}]},
            "spec.partitions[0].topic",
        ),
        (
            {
                "partitions": [
                    {"topic": "t", "partition": 0, "offset": 1},
                    {"topic": "t", "partition": 0, "offset": 2},
                ]
            },
            "spec.partitions[1]",
        ),
        (
            {
                "partitions": [{"topic": "t", "partition": 0, "offset": 1}],
                "topics": [{"name": "t", "before": {"highWatermark": True}}],
            },
            "spec.topics[0].name",
        ),
        ({"topics": [{"name": "t", "before": {}}]}, "spec.topics[0].before"),
        (
            {"topics": [{"name": "t", "before": {"highWatermark": True, "committedBy": ["g"]}}]},
            "spec.topics[0].before",
        ),
        (
            {"topics": [{"name": "t", "before": {"timestamp": "yesterday"}}]},
            "spec.topics[0].before.timestamp",
        ),
        (
            {"topics": [{"name": "t", "before": {"timestamp": "2026-01-01T00:00:00"}}]},
            "spec.topics[0].before.timestamp",
        ),
        (
            {"topics": [{"name": "t", "before": {"committedBy": []}}]},
            "spec.topics[0].before.committedBy",
        ),
        (
            {"topics": [{"name": "t", "before": {"highWatermark": False}}]},
            "spec.topics[0].before.highWatermark",
        ),
    ],
)
def test_invalid_spec_names_the_field(fields: dict[str, Any], field_path: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({"cluster": CLUSTER, **fields} if "cluster" not in fields else fields)
    assert err.value.field == field_path


def test_internal_topic_is_allowed_only_when_asked() -> None:
    req = parse_spec(
        spec(allowInternalTopics=True, partitions=[{"topic": "__x", "partition": 0, "offset": 1}])
    )
    assert req.partitions[0].tp == TopicPartition("__x", 0)


def _facts(tp: TopicPartition, start: int, hw: int, **committed: int | None) -> PartitionFacts:
    return PartitionFacts(tp, start, hw, committed)


T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_explicit_offsets_resolve_minus_one_and_refuse_offsets_past_the_high_watermark() -> None:
    req = parse_spec(
        spec(
            partitions=[
                {"topic": "t", "partition": 0, "offset": -1},
                {"topic": "t", "partition": 1, "offset": 99},
            ]
        )
    )
    given = PlanInput(
        facts={T0: _facts(T0, 0, 40), T1: _facts(T1, 0, 50)}, topic_partitions={"t": [0, 1]}
    )
    p0, p1 = plan_purge(req, given)
    assert (p0.target, p0.records_to_delete, p0.error) == (40, 40, None)
    assert p1.error is not None
    assert p1.error.startswith("OFFSET_OUT_OF_RANGE")
    assert "t-1" in p1.error
    assert p1.records_to_delete == 0


def test_committed_by_cuts_at_the_slowest_group_and_no_commit_protects_the_partition() -> None:
    req = parse_spec(spec(topics=[{"name": "t", "before": {"committedBy": ["a", "b"]}}]))
    given = PlanInput(
        facts={T0: _facts(T0, 5, 100, a=60, b=30), T1: _facts(T1, 5, 100, a=60, b=None)},
        topic_partitions={"t": [0, 1]},
    )
    p0, p1 = plan_purge(req, given)
    assert p0.target == 30
    assert p0.records_to_delete == 25
    assert p1.target == 5
    assert p1.records_to_delete == 0
    assert "group b has no committed offset" in p1.reason


def test_protect_groups_lower_the_cut_and_say_so() -> None:
    req = parse_spec(
        spec(topics=[{"name": "t", "before": {"highWatermark": True}}], protectGroups=["audit"])
    )
    given = PlanInput(
        facts={T0: _facts(T0, 0, 100, audit=70), T1: _facts(T1, 0, 100, audit=None)},
        topic_partitions={"t": [0, 1]},
    )
    p0, p1 = plan_purge(req, given)
    assert p0.target == 70
    assert any("audit" in n for n in p0.notes)
    assert p1.target == 0
    assert p1.records_to_delete == 0


def test_timestamp_cut_uses_the_offset_for_that_time() -> None:
    req = parse_spec(spec(topics=[{"name": "t", "before": {"timestamp": "2026-11-20T00:00:00Z"}}]))
    ms = req.topics[0].timestamp_ms
    assert ms is not None
    given = PlanInput(
        facts={
            T0: PartitionFacts(T0, 0, 100, {}, {ms: 42}),
            T1: PartitionFacts(T1, 0, 100, {}, {ms: None}),
        },
        topic_partitions={"t": [0, 1]},
    )
    p0, p1 = plan_purge(req, given)
    assert p0.target == 42
    assert p1.target == 100  # every record is older than the time


def test_topic_level_errors_become_one_failed_entry_per_topic() -> None:
    req = parse_spec(spec(topics=[{"name": "c", "before": {"highWatermark": True}}]))
    given = PlanInput(topic_errors={"c": "POLICY_VIOLATION: compact"})
    (plan,) = plan_purge(req, given)
    assert plan.error == "POLICY_VIOLATION: compact"
    assert plan.tp == TopicPartition("c", -1)


def test_guard_groups_are_the_protected_groups_plus_that_topics_committed_by_groups() -> None:
    req = parse_spec(
        spec(
            partitions=[{"topic": "x", "partition": 0, "offset": 5}],
            topics=[
                {"name": "a", "before": {"committedBy": ["g2", "g1"]}},
                {"name": "c", "before": {"committedBy": ["g3", "audit"]}},
                {"name": "b", "before": {"highWatermark": True}},
            ],
            protectGroups=["audit"],
        )
    )
    assert req.guard_groups("a") == ("audit", "g1", "g2")
    assert req.guard_groups("c") == ("audit", "g3")
    assert req.guard_groups("b") == ("audit",)
    assert req.guard_groups("x") == ("audit",)  # explicit cuts: protected groups only
    assert req.all_groups() == ("audit", "g1", "g2", "g3")
