"""Java client properties files work as they do for kafka-delete-records.sh: SCRAM over
the brokers' SASL listener, and JKS, PKCS12 and PEM stores over their SSL listener
(which requires a client certificate). Each file is also given to Kafka's own
DeleteRecordsCommand, so the files are what Java users really have."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from devstack.kafka import SASL_PASSWORD
from devstack.stack import Stack
from kafka_retention.cli.purge import run_purge
from tests.helpers.cli import kafka_retention, policy_file
from tests.helpers.java_properties import scram_properties, store_properties
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.purge_cli import offset_json, ours_and_reference
from tests.helpers.records import produce


@pytest.mark.stack
def test_purge_with_java_scram_properties_deletes_records_over_sasl(
    stack: Stack, kafka: Kafka, tmp_path: Path
) -> None:
    config = scram_properties(tmp_path / "client.properties", SASL_PASSWORD)
    (mine, done), (theirs, ref) = ours_and_reference(
        kafka,
        stack.kafka.sasl_bootstrap_servers,
        tmp_path,
        {0: 30, 1: 30},
        {0: 12, 1: -1},
        "--command-config",
        str(config),
    )
    assert done.returncode == 0, done.stderr
    assert ref.returncode == 0, ref.stdout + ref.stderr
    assert log_starts(kafka.admin, mine, 2) == log_starts(kafka.admin, theirs, 2) == [12, 30]


def refused(bootstrap: str, offsets: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """One attempt of `purge` that must fail, in this process (the command retries a
    cluster it cannot reach for minutes); its stderr."""
    code = run_purge(bootstrap, offsets, config, False, False, out=sys.stdout, attempts=1)
    assert code == 1
    return capsys.readouterr().err


@pytest.mark.stack
def test_a_wrong_scram_password_fails_and_deletes_nothing(
    stack: Stack, kafka: Kafka, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = kafka.topic({0: 20})
    config = scram_properties(tmp_path / "client.properties", "not-the-password")
    offsets = offset_json(tmp_path, topic, {0: -1})
    err = refused(stack.kafka.sasl_bootstrap_servers, offsets, config, capsys)
    assert log_starts(kafka.admin, topic, 1) == [0]
    assert "Authentication failed" in err, err


@pytest.mark.stack
@pytest.mark.parametrize("kind", ["JKS", "PKCS12", "PEM"])
def test_purge_with_java_stores_deletes_records_over_tls_with_a_client_certificate(
    stack: Stack, kafka: Kafka, tmp_path: Path, kind: str
) -> None:
    config = tmp_path / "client.properties"
    # Java's default endpoint identification (https) checks the brokers' 127.0.0.1 SAN.
    config.write_text("security.protocol=SSL\n" + store_properties(stack, tmp_path, kind))
    (mine, done), (theirs, ref) = ours_and_reference(
        kafka,
        stack.kafka.ssl_bootstrap_servers,
        tmp_path,
        {0: 25},
        {0: 7},
        "--command-config",
        str(config),
    )
    assert done.returncode == 0, done.stderr
    assert ref.returncode == 0, ref.stdout + ref.stderr
    assert log_starts(kafka.admin, mine, 1) == log_starts(kafka.admin, theirs, 1) == [7]


@pytest.mark.stack
def test_without_the_client_certificate_the_tls_listener_refuses_and_nothing_is_deleted(
    stack: Stack, kafka: Kafka, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The listener really requires the keystore: the tests above prove its conversion."""
    topic = kafka.topic({0: 5})
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={stack.kafka.tls.ca}\n"
    )
    offsets = offset_json(tmp_path, topic, {0: -1})
    err = refused(stack.kafka.ssl_bootstrap_servers, offsets, config, capsys)
    assert log_starts(kafka.admin, topic, 1) == [0]
    assert "(connection: _" in err, err


@pytest.mark.stack
def test_plan_command_reads_records_over_sasl_with_java_properties(
    stack: Stack, kafka: Kafka, tmp_path: Path
) -> None:
    """`plan` hands the mapped properties to its Spark pipeline."""
    topic = kafka.make_topic(partitions=2)
    two_days_ago = int((time.time() - 2 * 86400) * 1000)
    produce(
        kafka.bootstrap, topic, {0: 10, 1: 10}, timestamps={p: [two_days_ago] * 10 for p in (0, 1)}
    )
    sasl = stack.kafka.sasl_bootstrap_servers
    policy = policy_file(tmp_path / "policy.yaml", sasl, topic, "maxRetention: 1d")
    config = scram_properties(tmp_path / "client.properties", SASL_PASSWORD)
    out = tmp_path / "plan.jsonl"
    args = ("-f", str(policy), "--command-config", str(config), "--output", str(out))
    done = kafka_retention("plan", *args, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["partition"], r["targetOffset"]) for r in rows) == [(0, 10), (1, 10)]
