"""Java client properties files work as they do for kafka-delete-records.sh: SCRAM over
the brokers' SASL listener, and JKS, PKCS12 and PEM stores over their SSL listener
(which requires a client certificate). Each file is also given to Kafka's own
DeleteRecordsCommand, so the files are what Java users really have."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from devstack.kafka import SASL_PASSWORD
from devstack.stack import Stack
from kafka_retention.cli.purge import run_purge
from tests.helpers.java_properties import scram_properties, store_properties
from tests.helpers.offsets import log_starts
from tests.helpers.purge_cli import offset_json, ours, reference
from tests.helpers.records import produce
from tests.helpers.topics import TopicFactory


@pytest.mark.stack
def test_purge_with_java_scram_properties_deletes_records_over_sasl(
    stack: Stack, bootstrap: str, admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    mine, theirs = make_topic(partitions=2), make_topic(partitions=2)
    for topic in (mine, theirs):
        produce(bootstrap, topic, {0: 30, 1: 30})
    config = scram_properties(tmp_path / "client.properties", SASL_PASSWORD)
    sasl = stack.kafka.sasl_bootstrap_servers
    command_config = ("--command-config", str(config))
    done = ours(sasl, offset_json(tmp_path, mine, {0: 12, 1: -1}), *command_config)
    ref = reference(sasl, offset_json(tmp_path, theirs, {0: 12, 1: -1}), *command_config)
    assert done.returncode == 0, done.stderr
    assert ref.returncode == 0, ref.stdout + ref.stderr
    assert log_starts(admin, mine, 2) == log_starts(admin, theirs, 2) == [12, 30]


def refused(bootstrap: str, offsets: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """One attempt of `purge` that must fail, in this process (the command retries a
    cluster it cannot reach for minutes); its stderr."""
    code = run_purge(bootstrap, offsets, config, False, False, out=sys.stdout, attempts=1)
    assert code == 1
    return capsys.readouterr().err


@pytest.mark.stack
def test_a_wrong_scram_password_fails_and_deletes_nothing(
    stack: Stack,
    bootstrap: str,
    admin: AdminClient,
    make_topic: TopicFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = make_topic(partitions=1)
    produce(bootstrap, topic, {0: 20})
    config = scram_properties(tmp_path / "client.properties", "not-the-password")
    offsets = offset_json(tmp_path, topic, {0: -1})
    err = refused(stack.kafka.sasl_bootstrap_servers, offsets, config, capsys)
    assert log_starts(admin, topic, 1) == [0]
    assert "Authentication failed" in err, err


@pytest.mark.stack
@pytest.mark.parametrize("kind", ["JKS", "PKCS12", "PEM"])
def test_purge_with_java_stores_deletes_records_over_tls_with_a_client_certificate(
    stack: Stack,
    bootstrap: str,
    admin: AdminClient,
    make_topic: TopicFactory,
    tmp_path: Path,
    kind: str,
) -> None:
    mine, theirs = make_topic(partitions=1), make_topic(partitions=1)
    for topic in (mine, theirs):
        produce(bootstrap, topic, {0: 25})
    config = tmp_path / "client.properties"
    # Java's default endpoint identification (https) checks the brokers' 127.0.0.1 SAN.
    config.write_text("security.protocol=SSL\n" + store_properties(stack, tmp_path, kind))
    tls = stack.kafka.ssl_bootstrap_servers
    command_config = ("--command-config", str(config))
    done = ours(tls, offset_json(tmp_path, mine, {0: 7}), *command_config)
    ref = reference(tls, offset_json(tmp_path, theirs, {0: 7}), *command_config)
    assert done.returncode == 0, done.stderr
    assert ref.returncode == 0, ref.stdout + ref.stderr
    assert log_starts(admin, mine, 1) == log_starts(admin, theirs, 1) == [7]


@pytest.mark.stack
def test_without_the_client_certificate_the_tls_listener_refuses_and_nothing_is_deleted(
    stack: Stack,
    bootstrap: str,
    admin: AdminClient,
    make_topic: TopicFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The listener really requires the keystore: the tests above prove its conversion."""
    topic = make_topic(partitions=1)
    produce(bootstrap, topic, {0: 5})
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={stack.kafka.tls.ca}\n"
    )
    offsets = offset_json(tmp_path, topic, {0: -1})
    err = refused(stack.kafka.ssl_bootstrap_servers, offsets, config, capsys)
    assert log_starts(admin, topic, 1) == [0]
    assert "(connection: _" in err, err


@pytest.mark.stack
def test_plan_command_reads_records_over_sasl_with_java_properties(
    stack: Stack, bootstrap: str, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """`plan` hands the mapped properties to its Spark pipeline."""
    topic = make_topic(partitions=2)
    two_days_ago = int((time.time() - 2 * 86400) * 1000)
    produce(bootstrap, topic, {0: 10, 1: 10}, timestamps={p: [two_days_ago] * 10 for p in (0, 1)})
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"""
apiVersion: kafka-retention.io/v1alpha1
kind: RetentionPolicy
metadata: {{name: p}}
spec:
  cluster: {{bootstrapServers: "{stack.kafka.sasl_bootstrap_servers}"}}
  topics: {{names: [{topic}]}}
  maxRetention: 1d
""")
    config = scram_properties(tmp_path / "client.properties", SASL_PASSWORD)
    out = tmp_path / "plan.jsonl"
    exe = Path(sys.executable).with_name("kafka-retention")
    done = subprocess.run(
        [
            str(exe),
            "plan",
            "-f",
            str(policy),
            "--command-config",
            str(config),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["partition"], r["targetOffset"]) for r in rows) == [(0, 10), (1, 10)]
