"""RecordErasure on the real stack, under strict tenancy (issue #48): a key erased from a
compacted topic where it sits in two partitions, down to the signed receipt; a key on a
delete-policy topic reported and verified gone after retention; and the refusals, each
naming its field with nothing written (the high watermarks do not move).

The spec names keys by SHA-256 only, so the key never enters the object, its annotations
or the operator's --verbose log: the test checks it appears in no status, event or log
line, and that the digest does.

Runs only once packages A (CRD, parser, tenancy, receipts) and B (the Kafka adapter) are
merged with C, and the handler is registered in handlers/__init__.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.cli import main as cli_main
from kafka_retention.core.receipts import verify
from kafka_retention.kube_objects.chunks import assemble, parts_selector, set_base
from tests.helpers import erasures, tenancy
from tests.helpers.conditions import condition
from tests.helpers.erasures import Filler, erasure, phase_in
from tests.helpers.kafka import Kafka
from tests.helpers.kube import (
    apply,
    apply_refused,
    events,
    get,
    resource,
    wait_for,
)
from tests.helpers.offsets import high_watermarks
from tests.helpers.records import produce
from tests.helpers.topics import FAST_COMPACTION

pytestmark = pytest.mark.stack

PREFIX = "erase" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
KIND = "RecordErasure"
# A delete topic whose records retention removes within seconds on the stack (its
# brokers check retention every 3 s; segments roll on the next append after 1 s).
FAST_RETENTION = {"cleanup.policy": "delete", "retention.ms": "5000", "segment.ms": "1000"}


@pytest.fixture(scope="module")
def signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


@pytest.fixture(scope="module")
def erasure_keys_ns(stack: Stack, signing_key: Ed25519PrivateKey) -> Iterator[str]:
    """The operator's own namespace for this file, holding the signing key's Secret."""
    yield from erasures.keys_namespace(stack, PREFIX, signing_key)


@pytest.fixture(scope="module")
def erasure_operator(
    stack: Stack, erasure_keys_ns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("erasure") / "operator.log"
    yield from tenancy.strict_operator(stack, log, PREFIX, "--operator-namespace", erasure_keys_ns)


@pytest.fixture
def tenant(stack: Stack, erasure_operator: OperatorProcess) -> Iterator[str]:
    names = (f"{PREFIX}-{uuid.uuid4().hex[:6]}",)
    for (ns,) in tenancy.watched_namespaces(stack, erasure_operator, names):
        yield ns
        # The erasures first, while the operator runs (the helper then deletes the
        # namespace; it knows only purges and policies).
        stack.kubectl("delete", "recorderasures", "--all", "-n", ns, check=False)


@pytest.fixture
def bindings(stack: Stack) -> Iterator[list[str]]:
    yield from tenancy.made_bindings(stack)


def bind_erase(stack: Stack, admin: AdminClient, made: list[str], ns: str, *topics: str) -> str:
    """A binding letting `ns` erase on exactly these topics of the shared cluster."""
    return erasures.bind_erase(stack, admin, made, PREFIX, ns, topics)


def signed(obj: dict[str, Any]) -> bool:
    """Settled: KeyErased with its receipt, or Failed (which the test then shows)."""
    status = obj.get("status") or {}
    phase = status.get("phase")
    return phase == "Failed" or (phase == "KeyErased" and bool(status.get("receipt")))


def records_with_key(bootstrap: str, topic: str, partitions: int, key: bytes) -> list[str]:
    """Every record of the topic read from the log start to the high watermark
    (uncommitted ones too), as `partition@offset` where its key is `key`."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"erasure-check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    ends = high_watermarks(admin, topic, partitions)
    consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: list[str] = []
    done = {p for p in range(partitions) if ends[p] == 0}
    deadline = time.monotonic() + 60
    while len(done) < partitions:
        assert time.monotonic() < deadline, f"{topic} not read to its end in 60s"
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        partition, offset = msg.partition(), msg.offset()
        assert partition is not None
        assert offset is not None
        if msg.key() == key:
            found.append(f"{partition}@{offset}")
        if offset + 1 >= ends[partition]:
            done.add(partition)
    consumer.close()
    return found


def stored_receipt(stack: Stack, ns: str, name: str, config_map: str) -> dict[str, Any]:
    """The receipt back from the erasure's ConfigMap set, checked against its manifest."""
    manifest = get(stack, "configmap", ns, config_map)
    selector = parts_selector(set_base(KIND, name), "receipt")
    listed = stack.kubectl("get", "configmaps", "-n", ns, "-l", selector, "-o", "json")
    parts = json.loads(listed.stdout)["items"]
    loaded: dict[str, Any] = json.loads(assemble(manifest, parts))
    return loaded


def test_a_key_in_two_partitions_of_a_compacted_topic_is_erased_with_a_signed_receipt(
    stack: Stack,
    tenant: str,
    bindings: list[str],
    kafka: Kafka,
    erasure_operator: OperatorProcess,
    signing_key: Ed25519PrivateKey,
    erasure_keys_ns: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    key = f"erasure-e2e-{uuid.uuid4().hex}@example.com".encode()
    digest = hashlib.sha256(key).hexdigest()
    topic = kafka.make_topic(partitions=3, config=FAST_COMPACTION)
    # The key by the default partitioner's choice nowhere: to partitions 0 and 1 by
    # explicit partition=, twice in 0, among other keys.
    produce(kafka.bootstrap, topic, {0: 20, 1: 20, 2: 20}, key=lambda p, i: b"other-%d" % i)
    produce(kafka.bootstrap, topic, {0: 2, 1: 1}, key=lambda p, i: key)
    produce(kafka.bootstrap, topic, {0: 5, 1: 5, 2: 5}, key=lambda p, i: b"after-%d" % i)
    binding = bind_erase(stack, kafka.admin, bindings, tenant, topic)
    since = erasure_operator.log_size()

    with Filler(kafka.bootstrap, topic, 3):
        erasure(stack, tenant, "forget", binding, [topic], keys=[{"sha256": digest}])
        done = wait_for(stack, "recorderasure", tenant, "forget", signed, timeout=180)
    status = done["status"]
    assert status["phase"] == "KeyErased", json.dumps(status, indent=1)
    assert condition(done, "Erased")["status"] == "True"
    assert condition(done, "ReceiptSigned")["status"] == "True"
    evidence = status["evidence"]
    assert {(e["partition"], e["digest"]) for e in evidence if "digest" in e} == {
        (0, digest),
        (1, digest),
    }
    # The final scan that granted KeyErased read every partition, 2 (where the key never
    # was) too: an entry of each partition without a digest.
    assert {e["partition"] for e in evidence if "digest" not in e} == {0, 1, 2}
    assert status["summary"]["tombstonesWritten"] == 2
    assert status["summary"]["matchesRemaining"] == 0

    # Kafka itself: no record with the key is left anywhere in the topic.
    assert records_with_key(kafka.bootstrap, topic, 3, key) == []

    # The receipt verifies against the key the operator was given, and names the digest.
    receipt = stored_receipt(stack, tenant, "forget", status["receipt"]["configMap"])
    assert verify(receipt, signing_key.public_key()) is None
    assert receipt["sha256"] == status["receipt"]["sha256"]
    in_receipt = receipt["receipt"]["evidence"]
    assert {e["digest"] for e in in_receipt if e.get("digest")} == {digest}
    assert {e["partition"] for e in in_receipt if not e.get("digest")} == {0, 1, 2}

    # The operator recorded the digest in the binding's ledger, in its own namespace, with
    # this receipt: `kafka-retention ledger list` as an administrator runs it.
    capsys.readouterr()
    listing = [
        "ledger", "list", "--cluster", binding, "--operator-namespace", erasure_keys_ns,
        "--kubeconfig", str(stack.kube.kubeconfig), "-o", "json",
    ]  # fmt: skip
    assert cli_main(listing) == 0
    recorded = [e for e in json.loads(capsys.readouterr().out)["entries"] if e["digest"] == digest]
    assert [e["receipt"]["sha256"] for e in recorded] == [receipt["sha256"]]
    assert recorded[0]["topics"] == [topic]

    # Digests, never the key: in status, events and the operator's log.
    posted = events(stack, tenant, "forget")
    reasons = {e["reason"] for e in posted}
    assert {"ErasureStarted", "TombstonesWritten", "KeyErased", "ErasureReceipt"} <= reasons
    # Waiting on the cleaner is the normal course: no Warning event for it (kopf's
    # "failed temporarily" lines are made quiet by handlers/erasure.py).
    assert [e["message"] for e in posted if e["type"] != "Normal"] == []
    log = erasure_operator.log.read_bytes()[since:].decode(errors="replace")
    texts = {"status": json.dumps(status), "events": json.dumps(posted), "log": log}
    for where, text in texts.items():
        assert digest in text, where
        assert key.decode() not in text, where
        assert key.hex() not in text, where


def test_a_delete_topic_is_reported_and_verified_after_retention_without_a_tombstone(
    stack: Stack, tenant: str, bindings: list[str], kafka: Kafka
) -> None:
    key = f"erasure-e2e-{uuid.uuid4().hex}".encode()
    digest = hashlib.sha256(key).hexdigest()
    topic = kafka.make_topic(partitions=2, config=FAST_RETENTION)
    produce(kafka.bootstrap, topic, {0: 3, 1: 3}, key=lambda p, i: key if i == 1 else b"o")
    binding = bind_erase(stack, kafka.admin, bindings, tenant, topic)

    with Filler(kafka.bootstrap, topic, 2):
        erasure(stack, tenant, "expire", binding, [topic], keys=[{"sha256": digest}])
        waiting = wait_for(
            stack, "recorderasure", tenant, "expire", phase_in("AwaitingRetention", "KeyErased")
        )
        if waiting["status"]["phase"] == "AwaitingRetention":
            assert waiting["status"]["topics"][0]["kind"] == "delete"
            assert waiting["status"]["topics"][0]["expectedBy"]
        done = wait_for(stack, "recorderasure", tenant, "expire", signed, timeout=180)
    assert done["status"]["phase"] == "KeyErased", json.dumps(done["status"], indent=1)
    # No tombstone was written: a null value on a delete topic would only copy the key.
    assert done["status"]["summary"]["tombstonesWritten"] == 0
    assert records_with_key(kafka.bootstrap, topic, 2, key) == []


@pytest.mark.parametrize(
    ("case", "reason", "field"),
    [
        ("outside the binding", "NotPermitted", "spec.topics.names[0]"),
        ("bad digest", "InvalidSpec", "spec.keys[0].sha256"),
        # The CRD's own rule refuses this one at apply time, naming the field (the
        # operator's parser would too, for an object stored before the rule).
        ("cut without acceptCollateral", "Refused at apply", "spec.acceptCollateral"),
    ],
)
def test_a_refused_erasure_names_the_field_and_writes_nothing(
    stack: Stack,
    tenant: str,
    bindings: list[str],
    kafka: Kafka,
    case: str,
    reason: str,
    field: str,
) -> None:
    key = b"refused-" + uuid.uuid4().hex.encode()
    topic = kafka.topic({0: 5, 1: 5}, FAST_COMPACTION, key=lambda p, i: key)
    other = kafka.topic({0: 5, 1: 5}, FAST_COMPACTION, key=lambda p, i: key)
    binding = bind_erase(stack, kafka.admin, bindings, tenant, other)
    digest = hashlib.sha256(key).hexdigest()
    before = {t: high_watermarks(kafka.admin, t, 2) for t in (topic, other)}

    keys = [{"sha256": digest}]
    names = [topic] if case == "outside the binding" else [other]
    if case == "bad digest":
        keys = [{"sha256": "abc"}]
    body = {"cluster": {"clusterRef": binding}, "topics": {"names": names}, "keys": keys}
    if case == "cut without acceptCollateral":
        body["onDeleteTopics"] = "cut"
        refusal = apply_refused(stack, resource(KIND, "refused", tenant, spec=body))
        assert field in refusal
    else:
        apply(stack, resource(KIND, "refused", tenant, spec=body))
        done = wait_for(stack, "recorderasure", tenant, "refused", phase_in("Failed"), timeout=90)
        ready = condition(done, "Ready")
        assert (ready["status"], ready["reason"]) == ("False", reason), ready
        assert field in ready["message"]
        if case == "bad digest":
            assert '"abc"' not in json.dumps(done["status"])  # never echoed
        time.sleep(2)  # anything written by mistake would have landed by now
    assert {t: high_watermarks(kafka.admin, t, 2) for t in (topic, other)} == before
