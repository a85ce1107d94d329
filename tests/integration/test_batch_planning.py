"""A batch of policies planned two ways on the real cluster: by one Spark job over the
union of their partitions, and in the operator process. Both apply the same planning
core, so every policy's cuts must agree row for row."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.plan_request import PlanRequest, Scans
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy_spec import Member, parse_policy_spec
from kafka_retention.services.policy.planning import plan_in_process, select
from retention_jobs.plan_job import run_batch
from tests.helpers.commits import commit
from tests.helpers.records import produce
from tests.helpers.topics import TopicFactory

HOUR = 3_600_000
COMPARED = (
    "log_start_offset",
    "high_watermark",
    "target_offset",
    "rule",
    "reason_guard",
    "guards",
    "records_to_delete",
)


def comparable(rows: list[PlanRow]) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        groups = tuple((g.group, g.committed_offset, g.unconsumed_to_delete) for g in r.groups)
        out.append((r.topic, r.partition, *(getattr(r, k) for k in COMPARED), groups))
    return sorted(out)


@pytest.mark.stack
def test_spark_and_in_process_plans_of_a_batch_agree_for_every_policy(
    spark: Any, bootstrap: str, make_topic: TopicFactory
) -> None:
    now = int(time.time() * 1000)
    shared = make_topic(partitions=3, config={"retention.ms": "-1"})
    other = make_topic(partitions=2, config={"retention.ms": "-1"})
    old = [now - 3 * HOUR + i for i in range(40)]
    young = [now - 60_000 + i for i in range(20)]
    produce(
        bootstrap,
        shared,
        dict.fromkeys(range(3), 60),
        timestamps=dict.fromkeys(range(3), old + young),
    )
    produce(bootstrap, other, {0: 10, 1: 10})
    commit(bootstrap, f"{shared}-a", shared, {0: 50, 1: 20})  # nothing on partition 2
    commit(bootstrap, f"{shared}-b", shared, {0: 30, 1: 45, 2: 5})
    commit(bootstrap, f"{other}-a", other, {0: 7, 1: 3})

    def spec(**fields: Any) -> Any:
        return parse_policy_spec({"cluster": {"bootstrapServers": bootstrap}, **fields})

    members = [
        Member(
            "ns/consumed",
            spec(
                topics={"names": [shared]},
                deleteConsumed={"groups": [f"{shared}-a", f"{shared}-b"]},
            ),
        ),
        Member(
            "ns/aged",
            spec(
                topics={"names": [shared]},
                deleteConsumed={"groups": [f"{shared}-b"]},
                maxRetention="1h",
            ),
        ),
        Member(
            "ns/floor",
            spec(
                topics={"names": [shared, other]},
                deleteConsumed={"groups": [f"{shared}-b", f"{other}-a"], "minRetention": "2h"},
            ),
        ),
        Member(
            "ns/other", spec(topics={"names": [other]}, deleteConsumed={"groups": [f"{other}-a"]})
        ),
    ]
    request = PlanRequest.for_policies(
        bootstrap, {}, {m.key: m.spec for m in members}, now, Scans(time_lag=False)
    )
    by_spark = run_batch(spark, request)
    kafka = KafkaAdmin(bootstrap)
    by_core = plan_in_process(kafka, members, select(kafka, members), now)
    assert sorted(by_spark) == sorted(by_core) == sorted(m.key for m in members)
    for m in members:
        assert comparable(by_spark[m.key].rows) == comparable(by_core[m.key].rows), m.key
    # And the cuts are the ones the rules promise, not merely equal to each other.
    consumed = {r.partition: r.target_offset for r in by_core["ns/consumed"].rows}
    assert consumed == {0: 30, 1: 20, 2: 0}  # slowest group; no commit protects p2
    aged = {r.partition: r.target_offset for r in by_core["ns/aged"].rows}
    assert aged == {0: 40, 1: 45, 2: 40}  # an hour's age passes group b on p0 and p2
    floor = {(r.topic, r.partition): r.target_offset for r in by_core["ns/floor"].rows}
    assert floor[(other, 0)] == 0  # group b has no commit on the other topic
