"""RecordPurge past what status can hold: 20,000 partitions on the real cluster, a restart
between the stored plan and the delete, and state the API server refuses to store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.core.purge_states import Phase
from tests.helpers.kafka import Kafka
from tests.helpers.kube import get, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.purges import apply_purge, cuts, finished_by_a_new_operator, purge_finished
from tests.helpers.records import produce_to_each

# Serial (make test runs it alone): it runs 20,000 partitions, which slows the brokers for
# every other test.
pytestmark = [pytest.mark.stack, pytest.mark.serial]

TOPICS, PER_TOPIC = 100, 200  # 20,000 partitions, replication factor 1


def all_log_starts(admin: AdminClient, topics: list[str]) -> list[int]:
    """Every partition's log start, read in requests of 1,000 partitions; a request that
    gets no answer in time is asked again (once) rather than failing the test on a slow
    reply from a busy 2-core machine."""
    out = []
    for i in range(0, len(topics), 5):
        chunk = topics[i : i + 5]
        found = _log_starts(admin, chunk)
        out += [found[(t, p)] for t in chunk for p in range(PER_TOPIC)]
    return out


def _log_starts(admin: AdminClient, topics: list[str]) -> dict[tuple[str, int], int]:
    earliest: Any = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    request = {KTP(t, p): earliest for t in topics for p in range(PER_TOPIC)}
    for attempt in range(2):
        futures = admin.list_offsets(request, request_timeout=30)
        try:
            return {(k.topic, k.partition): f.result(timeout=45).offset for k, f in futures.items()}
        except Exception:
            if attempt:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def one_record_each(bootstrap: str, topics: list[str]) -> None:
    produce_to_each(bootstrap, [(t, p) for t in topics for p in range(PER_TOPIC)])


@pytest.fixture(scope="module")
def big_topics(stack: Stack, admin: AdminClient) -> Iterator[list[str]]:
    names = [f"scale-{os.getpid()}-{i:03d}" for i in range(TOPICS)]
    # KRaft refuses one request that creates too many partition records: a few at a time.
    for i in range(0, len(names), 5):
        futures = admin.create_topics([NewTopic(n, PER_TOPIC, 1) for n in names[i : i + 5]])
        for f in futures.values():
            f.result(timeout=120)
    deadline = time.monotonic() + 180
    while True:
        meta = admin.list_topics(timeout=30).topics
        if all(
            n in meta
            and len(meta[n].partitions) == PER_TOPIC
            and all(p.leader >= 0 for p in meta[n].partitions.values())
            for n in names
        ):
            break
        assert time.monotonic() < deadline, "the big topics were not served in time"
        time.sleep(1)
    yield names
    for f in admin.delete_topics(names, request_timeout=120).values():
        f.result(timeout=120)


def purge_all(stack: Stack, ns: str, name: str, topics: list[str]) -> None:
    apply_purge(
        stack, ns, name, topics=[{"name": t, "before": {"highWatermark": True}} for t in topics]
    )


def test_twenty_thousand_partitions_are_purged_with_a_small_status(
    stack: Stack, e2e_ns: str, kafka: Kafka, big_topics: list[str]
) -> None:
    one_record_each(kafka.bootstrap, big_topics)
    started = time.monotonic()
    purge_all(stack, e2e_ns, "everything", big_topics)
    obj = purge_finished(stack, e2e_ns, "everything", timeout=300)
    took = time.monotonic() - started
    status = obj["status"]
    assert status["phase"] == Phase.SUCCEEDED, status.get("conditions")
    assert status["summary"]["partitions"] == TOPICS * PER_TOPIC
    assert status["summary"]["recordsDeleted"] == TOPICS * PER_TOPIC
    assert len(json.dumps(status)) < 256 * 1024, len(json.dumps(status))
    assert set(all_log_starts(kafka.admin, big_topics)) == {1}
    # Every partition's outcome is kept beside the folded status, owned by the purge.
    ref = status["resultsRef"]["configMap"]
    cm = json.loads(stack.kubectl("get", "configmap", ref, "-n", e2e_ns, "-o", "json").stdout)
    assert cm["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
    print(f"20,000-partition purge: apply -> Succeeded in {took:.1f}s")


def test_a_restart_between_the_stored_plan_and_the_delete_deletes_exactly_the_plan(
    stack: Stack, namespace: str, kafka: Kafka, big_topics: list[str], tmp_path: Path
) -> None:
    before = all_log_starts(kafka.admin, big_topics)
    one_record_each(kafka.bootstrap, big_topics)  # the plan's -1 is the high watermark now
    planned = [start + 1 for start in before]
    first = OperatorProcess(stack, [namespace], tmp_path / "first.log").start()
    # Planning 20,000 partitions takes seconds: the watch starts well before the plan.
    purge_all(stack, namespace, "restarted", big_topics)
    watch = subprocess.Popen(
        [
            "kubectl",
            "get",
            "recordpurge",
            "restarted",
            "-n",
            namespace,
            "-w",
            "-o",
            "jsonpath={.status.phase}{'\\n'}",
        ],
        env={**os.environ, **stack.env()},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout is not None
        for line in watch.stdout:
            if line.strip() == Phase.PURGING:
                # Stop it in its tracks the moment the plan is stored, then kill it.
                os.kill(first.pid, signal.SIGSTOP)
                break
    finally:
        watch.kill()
    assert all_log_starts(kafka.admin, big_topics) == before, "deleted before the kill"
    first.kill()
    stored = get(stack, "recordpurge", namespace, "restarted")["status"]
    assert stored["phase"] == Phase.PURGING
    assert stored["planRef"]["partitions"] == TOPICS * PER_TOPIC
    one_record_each(kafka.bootstrap, big_topics)  # more records: a new plan would cut further
    obj = finished_by_a_new_operator(stack, namespace, "restarted", tmp_path / "second.log", 300)
    assert obj["status"]["phase"] == Phase.SUCCEEDED
    assert all_log_starts(kafka.admin, big_topics) == planned
    assert obj["status"]["summary"]["recordsDeleted"] == TOPICS * PER_TOPIC


def test_a_plan_the_api_server_will_not_store_fails_the_purge_naming_why(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 10})
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-configmaps", "namespace": e2e_ns},
        "spec": {"hard": {"count/configmaps": "0"}},
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(quota))
    # The quota admits nothing until the controller-manager has computed its usage.
    wait_for(
        stack,
        "resourcequota",
        e2e_ns,
        "no-configmaps",
        lambda o: "count/configmaps" in o.get("status", {}).get("used", {}),
        timeout=60,
    )
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": "unstorable", "namespace": e2e_ns},
        "spec": {
            "cluster": {"bootstrapServers": kafka.bootstrap},
            "partitions": cuts(topic, {0: 5}),
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    obj = purge_finished(stack, e2e_ns, "unstorable", timeout=60)
    ready = {c["type"]: c for c in obj["status"]["conditions"]}["Ready"]
    assert obj["status"]["phase"] == Phase.FAILED
    assert ready["reason"] == "StateNotPersisted"
    assert "exceeded quota" in ready["message"], ready["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]
