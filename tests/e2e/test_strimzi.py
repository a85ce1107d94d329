"""spec.cluster.strimzi on the real stack: the operator finds the brokers, CA and
credentials in Strimzi's objects and deletes through them.

Strimzi's operator does not run here. The test installs a minimal stand-in of its Kafka
and KafkaUser CRDs (tests/fixtures/strimzi-crds.yaml: open schema, v1beta2 only, so the
operator's v1-then-v1beta2 read is exercised too) and writes the objects and Secrets the
way Strimzi lays them out, pointing at the local brokers' PLAINTEXT, SASL_PLAINTEXT
(SCRAM-SHA-512) and SSL (client certificate) listeners.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from devstack.kafka import SASL_PASSWORD, SASL_USER
from devstack.stack import Stack
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.kube import wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.policies import ran
from tests.helpers.purges import purge_finished
from tests.helpers.records import HOUR, hours_ago_on_the_hour, utc
from tests.helpers.topics import NO_RETENTION

pytestmark = pytest.mark.stack

CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "strimzi-crds.yaml"
KAFKA = "local"


@pytest.fixture(scope="module")
def strimzi_crds(stack: Stack) -> None:
    stack.kubectl("apply", "--server-side", "-f", str(CRDS))
    for crd in ("kafkas.kafka.strimzi.io", "kafkausers.kafka.strimzi.io"):
        stack.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd}")


def listeners(stack: Stack) -> list[tuple[dict[str, Any], str]]:
    """(spec.kafka.listeners[] entry, the bootstrap servers Strimzi would publish)."""
    kafka = stack.kafka
    return [
        (
            {"name": "plain", "port": 9092, "type": "internal", "tls": False},
            kafka.bootstrap_servers,
        ),
        (
            {
                "name": "scram",
                "port": 9094,
                "type": "internal",
                "tls": False,
                "authentication": {"type": "scram-sha-512"},
            },
            kafka.sasl_bootstrap_servers,
        ),
        (
            {
                "name": "mtls",
                "port": 9093,
                "type": "internal",
                "tls": True,
                "authentication": {"type": "tls"},
            },
            kafka.ssl_bootstrap_servers,
        ),
    ]


def apply(stack: Stack, obj: dict[str, Any], status: dict[str, Any] | None = None) -> None:
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(obj))
    if status is not None:
        # Strimzi's operators write status; here the test does, through the subresource.
        meta = obj["metadata"]
        stack.kubectl(
            "patch",
            obj["kind"].lower() + ".kafka.strimzi.io",
            meta["name"],
            "-n",
            meta["namespace"],
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": status}),
        )


# Strimzi's Secrets hold PKCS12 copies beside the PEM: binary, and never read here.
PKCS12 = bytes.fromhex("308209a8020103308209") + bytes(range(128, 256))


def secret(stack: Stack, ns: str, name: str, data: dict[str, str | bytes]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": {
            k: base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode()
            for k, v in data.items()
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def make_kafka(stack: Stack, ns: str) -> None:
    """The Kafka resource, Ready, with its listeners published, and its cluster CA."""
    spec_listeners = [entry for entry, _ in listeners(stack)]
    apply(
        stack,
        {
            "apiVersion": "kafka.strimzi.io/v1beta2",
            "kind": "Kafka",
            "metadata": {"name": KAFKA, "namespace": ns},
            "spec": {"kafka": {"listeners": spec_listeners}},
        },
        {
            "conditions": [{"type": "Ready", "status": "True"}],
            "listeners": [
                {"name": entry["name"], "bootstrapServers": servers}
                for entry, servers in listeners(stack)
            ],
        },
    )
    secret(
        stack,
        ns,
        f"{KAFKA}-cluster-ca-cert",
        {"ca.crt": stack.kafka.tls.ca.read_text(), "ca.p12": PKCS12, "ca.password": "p12pw"},
    )


def make_user(stack: Stack, ns: str, name: str, kind: str) -> None:
    """A KafkaUser and the Secret Strimzi's User Operator writes for it."""
    apply(
        stack,
        {
            "apiVersion": "kafka.strimzi.io/v1beta2",
            "kind": "KafkaUser",
            "metadata": {"name": name, "namespace": ns, "labels": {"strimzi.io/cluster": KAFKA}},
            "spec": {"authentication": {"type": kind}},
        },
        {"username": SASL_USER if kind == "scram-sha-512" else f"CN={SASL_USER}", "secret": name},
    )
    tls = stack.kafka.tls
    data: dict[str, str | bytes] = (
        {"password": SASL_PASSWORD, "sasl.jaas.config": "(not read by the operator)"}
        if kind == "scram-sha-512"
        else {
            "ca.crt": tls.ca.read_text(),
            "user.crt": tls.client_cert.read_text(),
            "user.key": tls.client_key.read_text(),
            "user.p12": PKCS12,
            "user.password": "p12pw",
        }
    )
    secret(stack, ns, name, data)


def purge_via(
    stack: Stack, ns: str, name: str, strimzi: dict[str, Any], topic: str, offset: int
) -> None:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "cluster": {"strimzi": strimzi},
            "partitions": [{"topic": topic, "partition": 0, "offset": offset}],
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def unresolved(obj: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["reason"] == "ClusterUnresolved"
        for c in obj.get("status", {}).get("conditions", [])
    )


def test_a_purge_by_strimzi_reference_waits_for_the_kafka_and_then_deletes(
    stack: Stack, strimzi_crds: None, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 20})
    purge_via(stack, e2e_ns, "early", {"kafka": KAFKA, "listener": "plain"}, topic, 12)
    waiting = wait_for(stack, "recordpurge", e2e_ns, "early", unresolved)
    assert "spec.cluster.strimzi.kafka" in condition(waiting, "Ready")["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]

    make_kafka(stack, e2e_ns)
    done = purge_finished(stack, e2e_ns, "early", timeout=150)
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert log_starts(kafka.admin, topic, 1) == [12]


@pytest.mark.parametrize(
    ("listener", "kind"), [("scram", "scram-sha-512"), ("mtls", "tls")], ids=["scram", "mtls"]
)
def test_a_kafkauser_connects_through_the_listener_that_asks_for_its_credentials(
    stack: Stack, strimzi_crds: None, e2e_ns: str, kafka: Kafka, listener: str, kind: str
) -> None:
    topic = kafka.topic({0: 20})
    make_kafka(stack, e2e_ns)
    make_user(stack, e2e_ns, "retention", kind)
    ref = {"kafka": KAFKA, "namespace": e2e_ns, "listener": listener, "kafkaUser": "retention"}
    purge_via(stack, e2e_ns, f"via-{listener}", ref, topic, 7)
    done = purge_finished(stack, e2e_ns, f"via-{listener}", timeout=90)
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert log_starts(kafka.admin, topic, 1) == [7]


def test_a_kafkauser_of_the_wrong_kind_is_named_and_nothing_is_deleted(
    stack: Stack, strimzi_crds: None, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 20})
    make_kafka(stack, e2e_ns)
    make_user(stack, e2e_ns, "certified", "tls")
    ref = {"kafka": KAFKA, "listener": "scram", "kafkaUser": "certified"}
    purge_via(stack, e2e_ns, "mismatch", ref, topic, 7)
    waiting = wait_for(stack, "recordpurge", e2e_ns, "mismatch", unresolved)
    message = condition(waiting, "Ready")["message"]
    assert "spec.cluster.strimzi.kafkaUser" in message
    assert "authenticates with tls" in message
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_a_retention_policy_by_strimzi_reference_cuts_through_scram(
    stack: Stack, strimzi_crds: None, e2e_ns: str, kafka: Kafka
) -> None:
    base = hours_ago_on_the_hour(48)
    cut = utc(base + 6 * HOUR)
    topic = kafka.topic({0: 10}, NO_RETENTION, timestamps={0: [base + h * HOUR for h in range(10)]})
    make_kafka(stack, e2e_ns)
    make_user(stack, e2e_ns, "retention", "scram-sha-512")
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "by-ref", "namespace": e2e_ns},
        "spec": {
            "cluster": {"strimzi": {"kafka": KAFKA, "listener": "scram", "kafkaUser": "retention"}},
            "topics": {"names": [topic]},
            "deleteBefore": cut,
            "interval": "10s",
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    obj = ran(stack, e2e_ns, "by-ref")
    assert condition(obj, "Ready")["status"] == "True", obj["status"]
    assert log_starts(kafka.admin, topic, 1) == [6]
