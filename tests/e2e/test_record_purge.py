"""RecordPurge end to end: real API server, real 3-broker Kafka, the operator process."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from devstack.kafka import KafkaCluster
from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.core.purge_states import FINAL_PHASES, Phase, State
from tests.helpers.argocd import argocd_health
from tests.helpers.conditions import condition, with_reason
from tests.helpers.kafka import Kafka, read_by_fast_and_slow
from tests.helpers.kube import NOWHERE, apply_refused, events, get, resource, wait_for
from tests.helpers.offsets import high_watermarks, log_starts
from tests.helpers.purges import (
    apply_purge,
    before,
    cuts,
    finished_by_a_new_operator,
    purge_finished,
    purge_protecting,
    results,
)
from tests.helpers.records import HOUR, first_offsets_read, hours_ago_on_the_hour, produce, utc
from tests.helpers.topics import NO_RETENTION

pytestmark = pytest.mark.stack


def test_explicit_offsets_delete_exactly_below_each_offset(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 100, 1: 80, 2: 50})
    apply_purge(
        stack,
        e2e_ns,
        "explicit",
        partitions=cuts(topic, {0: 30, 1: -1}),
    )
    obj = purge_finished(stack, e2e_ns, "explicit")
    assert obj["status"]["phase"] == Phase.SUCCEEDED
    assert log_starts(kafka.admin, topic, 3) == [30, 80, 0]
    assert first_offsets_read(kafka.bootstrap, topic, 3) == [30, None, 0]
    assert obj["status"]["summary"] == {
        "partitions": 2,
        "purged": 2,
        "failed": 0,
        "recordsDeleted": 110,
    }
    res = results(obj)
    assert res[(topic, 1)]["requestedOffset"] == 80  # -1 resolved to the high watermark
    assert res[(topic, 0)]["lowWatermark"] == 30
    assert condition(obj, "Succeeded")["reason"] == "Purged"
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    reasons = {e["reason"] for e in events(stack, e2e_ns, "explicit")}
    assert {"PurgeStarted", "PurgeSucceeded"} <= reasons
    table = stack.kubectl("get", "recordpurge", "explicit", "-n", e2e_ns).stdout
    header, row = (line.split() for line in table.split("\n")[:2])
    # A finished purge has no Progress or Done: its row has two cells fewer.
    assert header == [
        *("NAME", "PHASE", "PARTITIONS", "DELETED", "FAILED"),
        *("PROGRESS", "DONE", "TOOK", "AGE"),
    ]
    assert row[1:6] == ["Succeeded", "2", "110", "0", obj["status"]["timings"]["took"]]
    # Each stage's end, in order, and their durations summing to creation-to-end.
    timings = obj["status"]["timings"]
    marks = ["pickedUpAt", "plannedAt", "storedAt", "deletedAt", "completedAt"]
    assert [m for m in marks if m in timings] == marks
    assert [timings[m] for m in marks] == sorted(timings[m] for m in marks)
    stages = ["pickUp", "planning", "storing", "deleting", "reporting"]
    assert sum(timings["ms"][s] for s in stages) == timings["ms"]["total"]
    created = datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    ended = datetime.fromisoformat(timings["completedAt"].replace("Z", "+00:00"))
    assert timings["ms"]["total"] == round((ended - created).total_seconds() * 1000)
    assert argocd_health(obj)[0] == "Healthy"  # what Argo CD shows (manifests/argocd)


def test_timestamp_cut_keeps_records_at_or_after_the_time_with_out_of_order_times(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    base = hours_ago_on_the_hour(48)
    # Partition 0: hours 0..9 with one late record (hour 2) after hour 6.
    ts0 = [base + h * HOUR for h in (0, 1, 3, 4, 5, 6, 2, 7, 8, 9)]
    ts1 = [base + h * HOUR for h in range(10)]
    # Broker retention would delete these old-stamped records by itself: turn it off.
    topic = kafka.topic({0: 10, 1: 10}, NO_RETENTION, timestamps={0: ts0, 1: ts1})
    cut = utc(base + 4 * HOUR)  # the first offset with a time >= this is the cut
    apply_purge(stack, e2e_ns, "by-time", topics=before(topic, timestamp=cut))
    obj = purge_finished(stack, e2e_ns, "by-time")
    assert obj["status"]["phase"] == Phase.SUCCEEDED, obj["status"]
    # Offset 3 carries hour 4 in partition 0; offset 4 carries hour 4 in partition 1.
    # The late record (hour 2, offset 6) stays: a cut removes a prefix of offsets.
    assert log_starts(kafka.admin, topic, 2) == [3, 4]


def test_committed_by_cuts_at_the_slower_group_and_a_group_without_commit_protects(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, fast, slow = read_by_fast_and_slow(kafka)
    apply_purge(stack, e2e_ns, "consumed", topics=before(topic, committedBy=[fast, slow]))
    obj = purge_finished(stack, e2e_ns, "consumed")
    assert obj["status"]["phase"] == Phase.SUCCEEDED
    assert log_starts(kafka.admin, topic, 3) == [40, 60, 0]
    assert "no committed offset" in results(obj)[(topic, 2)]["reason"]


def test_protect_groups_lower_a_high_watermark_cut(stack: Stack, e2e_ns: str, kafka: Kafka) -> None:
    topic = kafka.topic({0: 50, 1: 50})
    auditor = kafka.group_at(topic, "auditor", {0: 20})
    obj = purge_protecting(stack, e2e_ns, topic, auditor)
    assert log_starts(kafka.admin, topic, 2) == [20, 0]
    res = results(obj)
    assert f"committed offset of {auditor}" in res[(topic, 0)]["note"]
    assert "no committed offset" in res[(topic, 1)]["note"]


def test_dry_run_reports_the_plan_and_deletes_nothing(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 60, 1: 40}, value=b"x" * 200)
    apply_purge(
        stack,
        e2e_ns,
        "dry",
        dryRun=True,
        topics=before(topic, highWatermark=True),
    )
    obj = purge_finished(stack, e2e_ns, "dry")
    assert obj["status"]["phase"] == Phase.SUCCEEDED
    assert condition(obj, "Succeeded")["reason"] == "DryRunCompleted"
    assert log_starts(kafka.admin, topic, 2) == [0, 0]
    summary = obj["status"]["summary"]
    assert summary["recordsDeleted"] == 0
    assert summary["recordsToDelete"] == 100
    # 200-byte values: the estimate lands near 100 records x ~216 bytes.
    assert 100 * 200 <= summary["bytesToDeleteEstimate"] <= 100 * 260
    assert {r["state"] for r in obj["status"]["results"]} == {State.DRY_RUN}


def test_compact_only_topic_fails_naming_the_cleanup_policy(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 10}, {"cleanup.policy": "compact"}, key=lambda p, i: f"k{i}".encode())
    apply_purge(stack, e2e_ns, "compact", partitions=cuts(topic, {0: 5}))
    obj = purge_finished(stack, e2e_ns, "compact")
    assert obj["status"]["phase"] == Phase.FAILED
    cond = condition(obj, "Succeeded")
    assert cond["status"] == "False"
    assert "cleanup.policy=compact" in cond["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_offset_above_the_high_watermark_fails_that_partition_only(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 10, 1: 10})
    apply_purge(
        stack,
        e2e_ns,
        "too-far",
        partitions=cuts(topic, {0: 5, 1: 500}),
    )
    obj = purge_finished(stack, e2e_ns, "too-far")
    assert obj["status"]["phase"] == Phase.PARTIALLY_SUCCEEDED
    assert log_starts(kafka.admin, topic, 2) == [5, 0]
    error = results(obj)[(topic, 1)]["error"]
    assert error.startswith("OFFSET_OUT_OF_RANGE")
    assert f"{topic}-1" in error
    warnings = [e for e in events(stack, e2e_ns, "too-far") if e["reason"] == "PartitionFailed"]
    assert any(f"{topic}-1" in e["message"] for e in warnings)


def test_unknown_topic_is_reported_not_hidden(stack: Stack, e2e_ns: str) -> None:
    apply_purge(
        stack,
        e2e_ns,
        "ghost",
        partitions=cuts("no-such-topic-anywhere", {0: 1}),
    )
    obj = purge_finished(stack, e2e_ns, "ghost")
    assert obj["status"]["phase"] == Phase.FAILED
    assert "UNKNOWN_TOPIC_OR_PARTITION" in obj["status"]["results"][0]["error"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"partitions": cuts("__consumer_offsets", {0: 1})},
            "internal topics",
        ),
        (
            {"topics": [{"name": "__transaction_state", "before": {"highWatermark": True}}]},
            "internal topics",
        ),
        (
            {"partitions": cuts("t", {0: -7})},
            "should be greater than or equal to -1",
        ),
        ({"partitions": [{"topic": "t", "partition": 0}]}, "Required value"),
        (
            {
                "topics": [
                    {
                        "name": "t",
                        "before": {"highWatermark": True, "timestamp": "2026-01-01T00:00:00Z"},
                    }
                ]
            },
            "exactly one of",
        ),
        ({"topics": [{"name": "t", "before": {"timestamp": "last tuesday"}}]}, "before.timestamp"),
        ({"topics": [{"name": "bad topic!", "before": {"highWatermark": True}}]}, "should match"),
        ({}, "at least one entry in partitions or topics"),
    ],
    ids=[
        "internal-partition",
        "internal-topic",
        "offset-below-minus-one",
        "missing-offset",
        "two-befores",
        "bad-timestamp",
        "bad-topic-name",
        "empty",
    ],
)
def test_malformed_purge_is_rejected_at_apply_time(
    stack: Stack, e2e_ns: str, spec: dict[str, Any], message: str
) -> None:
    body = resource("RecordPurge", "bad", e2e_ns, spec={"cluster": NOWHERE, **spec})
    assert message in apply_refused(stack, body)
    assert stack.kubectl("get", "recordpurge", "bad", "-n", e2e_ns, check=False).returncode != 0


def test_finished_purge_is_not_redone_when_the_operator_restarts(
    stack: Stack, kafka: Kafka, namespace: str, tmp_path: Any
) -> None:
    """A `-1` purge re-run after a restart would delete records produced since."""
    topic = kafka.topic({0: 30})
    first = OperatorProcess(stack, [namespace], tmp_path / "first.log").start()
    try:
        apply_purge(stack, namespace, "once", partitions=cuts(topic, {0: -1}))
        done = purge_finished(stack, namespace, "once")
    finally:
        first.stop()
    produce(kafka.bootstrap, topic, {0: 20})
    second = OperatorProcess(stack, [namespace], tmp_path / "second.log").start()
    try:
        time.sleep(5)  # time enough for the resumed operator to act, if it (wrongly) would
        again = get(stack, "recordpurge", namespace, "once")
    finally:
        second.stop()
    assert log_starts(kafka.admin, topic, 1) == [30]
    assert high_watermarks(kafka.admin, topic, 1) == [50]
    assert again["status"] == done["status"]


def test_purge_in_flight_completes_after_the_operator_is_killed(
    stack: Stack,
    isolated_cluster: KafkaCluster,
    isolated_kafka: Kafka,
    namespace: str,
    tmp_path: Any,
) -> None:
    """Brokers frozen mid-purge keep it retrying; the operator is SIGKILLed; a new one
    finishes the purge once Kafka answers again. On the isolated cluster: it freezes
    every broker."""
    kafka = isolated_kafka
    topic = kafka.topic({0: 40, 1: 40, 2: 40})
    first = OperatorProcess(stack, [namespace], tmp_path / "first.log").start()
    frozen = False
    try:
        isolated_cluster.freeze()
        frozen = True
        apply_purge(
            stack,
            namespace,
            "in-flight",
            cluster={"bootstrapServers": kafka.bootstrap},
            partitions=[{"topic": topic, "partition": p, "offset": 10 * (p + 1)} for p in range(3)],
        )
        wait_for(stack, "recordpurge", namespace, "in-flight", with_reason("KafkaUnavailable"), 90)
        first.kill()
    finally:
        if frozen:
            isolated_cluster.thaw()
    stuck = get(stack, "recordpurge", namespace, "in-flight")
    assert stuck["status"]["phase"] not in FINAL_PHASES
    assert log_starts(kafka.admin, topic, 3) == [0, 0, 0]
    obj = finished_by_a_new_operator(stack, namespace, "in-flight", tmp_path / "second.log", 180)
    assert obj["status"]["phase"] == Phase.SUCCEEDED
    assert log_starts(kafka.admin, topic, 3) == [10, 20, 30]
    assert obj["status"]["summary"]["recordsDeleted"] == 60


def test_missing_client_config_secret_waits_and_deletes_nothing_until_it_exists(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 20})
    cluster = {"bootstrapServers": kafka.bootstrap, "clientConfigSecret": "kafka-client"}
    apply_purge(stack, e2e_ns, "with-secret", cluster=cluster, partitions=cuts(topic, {0: 15}))
    secret_missing = with_reason("SecretUnavailable")
    waiting = wait_for(stack, "recordpurge", e2e_ns, "with-secret", secret_missing)
    assert "kafka-client" in condition(waiting, "Ready")["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]
    # librdkafka properties, as a SASL/TLS setup would carry; PLAINTEXT fits the local stack.
    stack.kubectl(
        "create",
        "secret",
        "generic",
        "kafka-client",
        "-n",
        e2e_ns,
        "--from-literal=security.protocol=PLAINTEXT",
        "--from-literal=client.id=kafka-retention-e2e",
    )
    obj = purge_finished(stack, e2e_ns, "with-secret", timeout=150)
    assert obj["status"]["phase"] == Phase.SUCCEEDED
    assert log_starts(kafka.admin, topic, 1) == [15]
