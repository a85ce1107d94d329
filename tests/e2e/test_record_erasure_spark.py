"""RecordErasure scans on Spark, end to end: an operator started with
--erasure-spark-min-records 1 scans every erasure on its local Spark session
(adapters.spark_erasure), and the erasure ends as one scanned in process does: a dry
run's evidence equals the in-process scan of the same partitions, and a key in two
partitions of a compacted topic reaches KeyErased with both tombstones written."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from tests.helpers import erasures, tenancy
from tests.helpers.erasures import Filler
from tests.helpers.kafka import Kafka
from tests.helpers.kube import wait_for
from tests.helpers.records import produce
from tests.helpers.topics import FAST_COMPACTION

pytestmark = pytest.mark.stack

PREFIX = "erasesp" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
KIND = "RecordErasure"
# The line the adapter logs for each scan it runs on Spark (adapters/spark_erasure.py).
ON_SPARK = "erasure scan on Spark:"


@pytest.fixture(scope="module")
def keys_ns(stack: Stack) -> Iterator[str]:
    """The operator's namespace, with a signing key (receipts are signed at KeyErased)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    yield from erasures.keys_namespace(stack, PREFIX, Ed25519PrivateKey.generate())


@pytest.fixture(scope="module")
def spark_operator(
    stack: Stack, keys_ns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("erasure-spark") / "operator.log"
    yield from tenancy.strict_operator(
        stack,
        log,
        PREFIX,
        "--operator-namespace",
        keys_ns,
        "--erasure-spark-min-records",
        "1",
    )


@pytest.fixture
def tenant(stack: Stack, spark_operator: OperatorProcess) -> Iterator[str]:
    names = (f"{PREFIX}-{uuid.uuid4().hex[:6]}",)
    for (ns,) in tenancy.watched_namespaces(stack, spark_operator, names):
        yield ns


@pytest.fixture
def bindings(stack: Stack) -> Iterator[list[str]]:
    yield from tenancy.made_bindings(stack)


def bind_erase(stack: Stack, admin: AdminClient, made: list[str], ns: str, topic: str) -> str:
    return erasures.bind_erase(stack, admin, made, PREFIX, ns, [topic])


def erasure(stack: Stack, ns: str, name: str, binding: str, topic: str, **spec: Any) -> None:
    erasures.erasure(stack, ns, name, binding, [topic], **spec)


def settled(obj: dict[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in ("DryRun", "KeyErased", "Failed")


def test_a_dry_run_scanned_on_spark_shows_what_the_in_process_scan_finds(
    stack: Stack,
    tenant: str,
    bindings: list[str],
    kafka: Kafka,
    spark_operator: OperatorProcess,
) -> None:
    key = f"spark-e2e-{uuid.uuid4().hex}".encode()
    digest = hashlib.sha256(key).hexdigest()
    topic = kafka.topic({0: 30, 1: 30, 2: 30}, {}, key=lambda p, i: b"other-%d-%d" % (p, i))
    produce(kafka.bootstrap, topic, {0: 2, 2: 1}, key=lambda p, i: key)
    tomb = Producer({"bootstrap.servers": kafka.bootstrap, "acks": "all"})
    tomb.produce(topic, key=key, value=None, partition=2)
    assert tomb.flush(30) == 0
    produce(kafka.bootstrap, topic, {0: 4, 1: 4, 2: 4}, key=lambda p, i: b"after-%d" % i)
    binding = bind_erase(stack, kafka.admin, bindings, tenant, topic)
    since = spark_operator.log_size()

    erasure(stack, tenant, "look", binding, topic, keys=[{"sha256": digest}], dryRun=True)
    done = wait_for(stack, "recorderasure", tenant, "look", settled, timeout=180)
    status = done["status"]
    assert status["phase"] != "Failed", json.dumps(status, indent=1)
    log = spark_operator.log.read_bytes()[since:].decode(errors="replace")
    assert ON_SPARK in log

    assert status["phase"] == "DryRun"
    # The same partitions scanned in process (nothing was written since).
    admin = ErasureAdmin(kafka.bootstrap)
    tps = [TopicPartition(topic, p) for p in range(3)]
    starts, ends = admin.log_bounds(tps)
    ranges: dict[TopicPartition, tuple[int, int]] = {}
    for tp in tps:
        start, end = starts[tp], ends[tp]
        assert isinstance(start, int)
        assert isinstance(end, int)
        ranges[tp] = (start, end)
    by_process = admin.scan_keys(ranges, {digest})
    expected = {}
    for tp, found in by_process.items():
        assert isinstance(found, PartitionScan)
        hits = found.hits.get(digest)
        if hits is not None:
            expected[tp.partition] = (found.examined, hits.records, hits.last_offset)
    shown = {
        e["partition"]: (
            e["scans"][0]["recordsExamined"],
            e["scans"][0]["matches"],
            e["scans"][0].get("lastMatchOffset"),
        )
        for e in status["evidence"]
        if e.get("digest") == digest
    }
    assert shown == expected == {0: (36, 2, 31), 2: (36, 2, 31)}


def test_an_erasure_scanned_on_spark_reaches_key_erased(
    stack: Stack,
    tenant: str,
    bindings: list[str],
    kafka: Kafka,
    spark_operator: OperatorProcess,
) -> None:
    key = f"spark-e2e-{uuid.uuid4().hex}@example.com".encode()
    digest = hashlib.sha256(key).hexdigest()
    topic = kafka.make_topic(partitions=3, config=FAST_COMPACTION)
    produce(kafka.bootstrap, topic, {0: 20, 1: 20, 2: 20}, key=lambda p, i: b"other-%d" % i)
    produce(kafka.bootstrap, topic, {0: 2, 1: 1}, key=lambda p, i: key)
    binding = bind_erase(stack, kafka.admin, bindings, tenant, topic)
    since = spark_operator.log_size()

    with Filler(kafka.bootstrap, topic, 3):
        erasure(stack, tenant, "forget", binding, topic, keys=[{"sha256": digest}])
        done = wait_for(stack, "recorderasure", tenant, "forget", settled, timeout=180)
    status = done["status"]
    assert status["phase"] == "KeyErased", json.dumps(status, indent=1)
    assert status["summary"]["tombstonesWritten"] == 2
    assert status["summary"]["matchesRemaining"] == 0
    log = spark_operator.log.read_bytes()[since:].decode(errors="replace")
    # Every scan of it (the first, and the ones that verified each phase) ran on Spark.
    assert log.count(ON_SPARK) >= 2
    assert key.decode() not in log
