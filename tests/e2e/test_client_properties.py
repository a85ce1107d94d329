"""A clientConfigSecret made from the files Java users have: `client.properties` and the
stores its `*.location` properties name, as `kubectl create secret --from-file` makes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.kafka import SASL_PASSWORD, SASL_USER
from devstack.stack import Stack
from kafka_retention.core.purge_states import Phase
from tests.helpers.conditions import condition
from tests.helpers.java_properties import SCRAM, store_properties
from tests.helpers.kafka import Kafka
from tests.helpers.kube import wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on, ran
from tests.helpers.purges import apply_purge, cuts, purge_finished
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack


def put_secret(stack: Stack, ns: str, name: str, *files: Path) -> None:
    """Create or replace a Secret with one key per file, named after the file."""
    made = stack.kubectl(
        "create", "secret", "generic", name, "-n", ns, "--dry-run=client", "-o", "yaml",
        *(f"--from-file={f}" for f in files),
    )  # fmt: skip
    stack.kubectl("apply", "-f", "-", stdin=made.stdout)


def test_a_purge_connects_over_tls_with_the_jks_stores_its_secret_holds(
    stack: Stack, e2e_ns: str, kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 20, 1: 20})
    # The paths a Java tool's file has; the Secret has the stores under their base names.
    stores = store_properties(stack, tmp_path, "JKS")
    props = tmp_path / "client.properties"
    # First a property librdkafka has no equivalent for: refused by name, nothing deleted.
    props.write_text(
        "security.protocol=SSL\n" + stores + "sasl.login.callback.handler.class=com.example.H\n"
    )
    secret = (props, tmp_path / "trust.jks", tmp_path / "client.jks")
    put_secret(stack, e2e_ns, "kafka-client", *secret)
    apply_purge(
        stack,
        e2e_ns,
        "over-tls",
        cluster={
            "bootstrapServers": stack.kafka.ssl_bootstrap_servers,
            "clientConfigSecret": "kafka-client",
        },
        partitions=cuts(topic, {0: 12, 1: -1}),
    )
    waiting = wait_for(
        stack,
        "recordpurge",
        e2e_ns,
        "over-tls",
        lambda o: any(
            c["reason"] == "SecretUnavailable" for c in o.get("status", {}).get("conditions", [])
        ),
    )
    assert (
        "client property sasl.login.callback.handler.class has no librdkafka equivalent"
        in condition(waiting, "Ready")["message"]
    )
    assert log_starts(kafka.admin, topic, 2) == [0, 0]
    props.write_text("security.protocol=SSL\n" + stores)
    put_secret(stack, e2e_ns, "kafka-client", *secret)
    obj = purge_finished(stack, e2e_ns, "over-tls", timeout=150)
    assert obj["status"]["phase"] == Phase.SUCCEEDED, obj["status"]
    assert log_starts(kafka.admin, topic, 2) == [12, 20]


def test_a_policy_runs_over_sasl_with_scram_from_client_properties(
    stack: Stack, e2e_ns: str, kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 30, 1: 30})
    group = kafka.group_at(topic, "reader", {0: 18, 1: 25})
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM} required username="{SASL_USER}" password="{SASL_PASSWORD}";\n'
    )
    put_secret(stack, e2e_ns, "kafka-client", props)
    apply_policy_on(
        stack,
        e2e_ns,
        "over-sasl",
        topic,
        cluster={
            "bootstrapServers": stack.kafka.sasl_bootstrap_servers,
            "clientConfigSecret": "kafka-client",
        },
        deleteConsumed={"groups": [group]},
    )
    eventually(lambda: log_starts(kafka.admin, topic, 2) == [18, 25], what="cut over SASL")
    obj = ran(stack, e2e_ns, "over-sasl")
    assert condition(obj, "Ready")["status"] == "True", obj["status"]
