"""RecordErasure with onDeleteTopics: cut on the real stack, under strict tenancy (issue
#48): on a delete-policy topic a dry run shows the collateral (other keys' records below
the last match) and deletes nothing; the accepted cut then moves each partition's log
start to just past its last match, keeps every later record, is verified by a scan and
ends KeyErased with a receipt `kafka-retention verify-receipt` accepts; a protected group
that has not read past a match holds its partition until it has.

The fixtures are test_record_erasure.py's (test modules never import each other): an
operator of its own (`--operator-namespace` holding the signing key), a watched tenant
namespace, a binding granting `erase` on the test's topic alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers import erasures, tenancy
from tests.helpers.cli import kafka_retention
from tests.helpers.commits import commit
from tests.helpers.conditions import condition
from tests.helpers.erasures import phase_in
from tests.helpers.kafka import Kafka
from tests.helpers.kube import events, wait_for
from tests.helpers.offsets import high_watermarks, log_starts
from tests.helpers.records import produce

pytestmark = pytest.mark.stack

# Not "erase": test_record_erasure.py's operator watches `erase<worker>-*`.
PREFIX = "erasecut" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
KIND = "RecordErasure"
# Retention far away: only the cut can remove the records while the test runs.
DELETE_TOPIC = {"cleanup.policy": "delete", "retention.ms": "604800000"}
RECORDS = 12  # per partition


@pytest.fixture(scope="module")
def signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def erasure_keys_ns(stack: Stack, signing_key: Ed25519PrivateKey) -> Iterator[str]:
    """The operator's own namespace, holding the signing key's Secret."""
    yield from erasures.keys_namespace(stack, PREFIX, signing_key)


@pytest.fixture(scope="module")
def erasure_operator(
    stack: Stack, erasure_keys_ns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("erasure-cut") / "operator.log"
    yield from tenancy.strict_operator(stack, log, PREFIX, "--operator-namespace", erasure_keys_ns)


@pytest.fixture
def tenant(stack: Stack, erasure_operator: OperatorProcess) -> Iterator[str]:
    names = (f"{PREFIX}-{uuid.uuid4().hex[:6]}",)
    for (ns,) in tenancy.watched_namespaces(stack, erasure_operator, names):
        yield ns


@pytest.fixture
def bindings(stack: Stack) -> Iterator[list[str]]:
    yield from tenancy.made_bindings(stack)


def bind_erase(stack: Stack, admin: AdminClient, made: list[str], ns: str, topic: str) -> str:
    """A binding letting `ns` erase on exactly this topic of the shared cluster, and cut it
    (a cut is DeleteRecords: it needs purge granted too)."""
    return erasures.bind_erase(stack, admin, made, PREFIX, ns, [topic], ("erase", "purge"))


def erasure(stack: Stack, ns: str, name: str, binding: str, topic: str, **spec: Any) -> None:
    erasures.erasure(stack, ns, name, binding, [topic], **spec)


def settled(obj: dict[str, Any]) -> bool:
    """KeyErased with its receipt, or Failed (which the test then shows)."""
    status = obj.get("status") or {}
    phase = status.get("phase")
    return phase == "Failed" or (phase == "KeyErased" and bool(status.get("receipt")))


def key_topic(kafka: Kafka, key: bytes, matches: dict[int, set[int]]) -> str:
    """A delete topic of RECORDS records per partition: `key` at the offsets `matches`
    gives, other keys (`other-<p>-<i>`) everywhere else."""
    topic = kafka.make_topic(partitions=len(matches), config=DELETE_TOPIC)
    produce(
        kafka.bootstrap,
        topic,
        dict.fromkeys(matches, RECORDS),
        key=lambda p, i: key if i in matches[p] else b"other-%d-%d" % (p, i),
    )
    assert high_watermarks(kafka.admin, topic, len(matches)) == [RECORDS] * len(matches)
    return topic


def records(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    """Every record left in the topic, per partition: (offset, key), read with a
    consumer of the test's own from the log start to the high watermark."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ends = high_watermarks(admin, topic, partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"erasure-cut-check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    done = {p for p in range(partitions) if ends[p] == 0}
    deadline = time.monotonic() + 60
    try:
        while len(done) < partitions:
            assert time.monotonic() < deadline, f"{topic} not read to its end in 60s"
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None
            assert offset is not None
            found[partition].append((offset, msg.key() or b""))
            if offset + 1 >= ends[partition]:
                done.add(partition)
    finally:
        consumer.close()
    return found


def test_a_dry_run_shows_the_collateral_then_the_accepted_cut_removes_it_and_is_verified(
    stack: Stack,
    tenant: str,
    bindings: list[str],
    kafka: Kafka,
    erasure_operator: OperatorProcess,
    signing_key: Ed25519PrivateKey,
    tmp_path: Path,
) -> None:
    key = f"erasure-cut-{uuid.uuid4().hex}@example.com".encode()
    digest = hashlib.sha256(key).hexdigest()
    # Last match 5 on partition 0 (cut at 6), 7 on partition 1 (cut at 8): 4 + 6 records
    # of other keys below them.
    topic = key_topic(kafka, key, {0: {1, 5}, 1: {3, 7}})
    # A reader that has not read past the match on partition 0 (its id sorts first among
    # the cluster's groups, which are read 200 at a time).
    reader = f"0-{PREFIX}-reader-{uuid.uuid4().hex[:6]}"
    commit(kafka.bootstrap, reader, topic, {0: 1, 1: RECORDS})
    binding = bind_erase(stack, kafka.admin, bindings, tenant, topic)
    since = erasure_operator.log_size()

    erasure(
        stack,
        tenant,
        "cut-dry",
        binding,
        topic,
        keys=[{"sha256": digest}],
        onDeleteTopics="cut",
        dryRun=True,
    )
    dry = wait_for(stack, "recorderasure", tenant, "cut-dry", phase_in("DryRun", "Failed"), 120)
    status = dry["status"]
    assert status["phase"] == "DryRun", json.dumps(status, indent=1)
    assert status["summary"]["collateralRecords"] == 10
    assert status["summary"]["collateralBytes"] > 10 * 100  # values of 100 bytes each
    message = condition(dry, "Erased")["message"]
    assert "would remove 10 records" in message
    assert f"passing groups {reader}" in message
    assert status["topics"][0]["unreadBy"] == [reader]
    # Nothing written or deleted.
    assert log_starts(kafka.admin, topic, 2) == [0, 0]
    assert high_watermarks(kafka.admin, topic, 2) == [RECORDS, RECORDS]

    erasure(
        stack,
        tenant,
        "cut",
        binding,
        topic,
        keys=[{"sha256": digest}],
        onDeleteTopics="cut",
        acceptCollateral=True,
    )
    done = wait_for(stack, "recorderasure", tenant, "cut", settled, timeout=180)
    status = done["status"]
    assert status["phase"] == "KeyErased", json.dumps(status, indent=1)
    assert condition(done, "ReceiptSigned")["status"] == "True"

    # Kafka itself, read by the test: the log starts just past the last matches, and
    # every later record (other keys only) is still there.
    assert log_starts(kafka.admin, topic, 2) == [6, 8]
    left = records(kafka.bootstrap, topic, 2)
    assert left == {
        p: [(i, b"other-%d-%d" % (p, i)) for i in range(start, RECORDS)]
        for p, start in ((0, 6), (1, 8))
    }
    # The collateral the dry run showed is what the cut removed.
    summary = status["summary"]
    assert summary["collateralRecords"] == 10
    assert summary["collateralBytes"] == dry["status"]["summary"]["collateralBytes"]
    assert summary["recordsCut"] == 6 + 8
    assert summary["matchesRemaining"] == 0
    cuts = {e["partition"]: e["cuts"] for e in status["evidence"] if e.get("digest")}
    assert {p: [(c["offset"], c["lowWatermark"]) for c in cs] for p, cs in cuts.items()} == {
        0: [(6, 6)],
        1: [(8, 8)],
    }

    # The receipt, as an auditor gets and checks it.
    receipt = tmp_path / "receipt.json"
    public = tmp_path / "signing.pub.pem"
    public.write_bytes(
        signing_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    kubeconfig = str(stack.kube.kubeconfig)
    got = kafka_retention(
        "evidence", "cut", "-n", tenant, "--kubeconfig", kubeconfig, "-o", str(receipt), timeout=60
    )
    assert got.returncode == 0, got.stderr
    checked = kafka_retention(
        "verify-receipt", str(receipt), "--public-key", str(public), timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    signed = json.loads(receipt.read_text())
    assert "Cut" in signed["receipt"]["phases"]

    posted = events(stack, tenant, "cut")
    assert "RecordsCut" in {e["reason"] for e in posted}
    log = erasure_operator.log.read_bytes()[since:].decode(errors="replace")
    for where, text in {
        "status": json.dumps(status),
        "events": json.dumps(posted),
        "log": log,
    }.items():
        assert key.decode() not in text, where


def test_a_protected_group_below_a_match_holds_its_partition_until_it_reads_past(
    stack: Stack, tenant: str, bindings: list[str], kafka: Kafka
) -> None:
    key = f"erasure-held-{uuid.uuid4().hex}".encode()
    digest = hashlib.sha256(key).hexdigest()
    topic = key_topic(kafka, key, {0: {2}, 1: {4}})
    guard = f"{PREFIX}-guard-{uuid.uuid4().hex[:6]}"
    # Past the match on partition 0, below it on partition 1.
    commit(kafka.bootstrap, guard, topic, {0: 5, 1: 3})
    binding = bind_erase(stack, kafka.admin, bindings, tenant, topic)

    erasure(
        stack,
        tenant,
        "held",
        binding,
        topic,
        keys=[{"sha256": digest}],
        onDeleteTopics="cut",
        acceptCollateral=True,
        protectGroups=[guard],
    )
    held = wait_for(stack, "recorderasure", tenant, "held", phase_in("CutHeld", "Failed"), 120)
    assert held["status"]["phase"] == "CutHeld", json.dumps(held["status"], indent=1)
    erased = condition(held, "Erased")
    assert erased["reason"] == "CutHeld"
    assert f"protected group {guard} committed 3 on {topic}-1" in erased["message"]
    # Partition 0 is cut; nothing is deleted on the held partition 1.
    assert log_starts(kafka.admin, topic, 2) == [3, 0]

    # The group reads past the match: the operator cuts there too and verifies.
    commit(kafka.bootstrap, guard, topic, {0: 5, 1: 6})
    done = wait_for(stack, "recorderasure", tenant, "held", settled, timeout=180)
    assert done["status"]["phase"] == "KeyErased", json.dumps(done["status"], indent=1)
    assert log_starts(kafka.admin, topic, 2) == [3, 5]
