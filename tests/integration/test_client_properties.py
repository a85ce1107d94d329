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
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    load_pem_private_key,
    pkcs12,
)
from cryptography.x509 import load_pem_x509_certificate

from devstack import paths
from devstack.kafka import SASL_PASSWORD, SASL_USER
from devstack.stack import Stack
from kafka_retention.cli.purge import run_purge
from tests.conftest import TopicFactory
from tests.integration.test_cli_purge import offset_json, ours
from tests.support import log_starts, produce

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def reference(bootstrap: str, offsets: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{paths.kafka_libs()}/*",
            "org.apache.kafka.tools.DeleteRecordsCommand",
            "--bootstrap-server",
            bootstrap,
            "--offset-json-file",
            str(offsets),
            "--command-config",
            str(config),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def scram_properties(path: Path, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM} required \\\n    username="{SASL_USER}" password="{password}";\n'
    )
    return path


@pytest.mark.stack
def test_purge_with_java_scram_properties_deletes_records_over_sasl(
    stack: Stack, bootstrap: str, admin: AdminClient, make_topic: TopicFactory, tmp_path: Path
) -> None:
    mine, theirs = make_topic(partitions=2), make_topic(partitions=2)
    for topic in (mine, theirs):
        produce(bootstrap, topic, {0: 30, 1: 30})
    config = scram_properties(tmp_path / "client.properties", SASL_PASSWORD)
    sasl = stack.kafka.sasl_bootstrap_servers
    done = ours(sasl, offset_json(tmp_path, mine, {0: 12, 1: -1}), "--command-config", str(config))
    ref = reference(sasl, offset_json(tmp_path, theirs, {0: 12, 1: -1}), config)
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


def store_properties(stack: Stack, d: Path, kind: str) -> str:
    """Client properties for the SSL listener with the stack's CA and client certificate
    in stores of `kind`, made the way Java users make them (keytool)."""
    tls = stack.kafka.tls
    if kind == "PEM":

        def inline(path: Path) -> str:
            return " \\\n    ".join(path.read_text().strip().splitlines())

        return (
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={tls.ca}\n"
            "ssl.keystore.type=PEM\n"
            f"ssl.keystore.certificate.chain={inline(tls.client_cert)}\n"
            f"ssl.keystore.key={inline(tls.client_key)}\n"
        )
    ext = kind.lower()
    keytool = ["keytool", "-noprompt", "-storetype", kind]
    subprocess.run(
        [*keytool, "-importcert", "-alias", "ca", "-file", str(tls.ca),
         "-keystore", str(d / f"trust.{ext}"), "-storepass", "trust-pass"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    key = load_pem_private_key(tls.client_key.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    cert = load_pem_x509_certificate(tls.client_cert.read_bytes())
    ca = load_pem_x509_certificate(tls.ca.read_bytes())
    (d / "client.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"client",
            key,
            cert,
            [ca],
            BestAvailableEncryption(b"key-pass"),
        )
    )
    subprocess.run(
        [*keytool, "-importkeystore", "-srckeystore", str(d / "client.p12"),
         "-srcstoretype", "PKCS12", "-srcstorepass", "key-pass",
         "-destkeystore", str(d / f"client.{ext}"), "-deststorepass", "key-pass"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return (
        f"ssl.truststore.type={kind}\n"
        f"ssl.truststore.location={d / f'trust.{ext}'}\n"
        "ssl.truststore.password=trust-pass\n"
        f"ssl.keystore.type={kind}\n"
        f"ssl.keystore.location={d / f'client.{ext}'}\n"
        "ssl.keystore.password=key-pass\n"
        "ssl.key.password=key-pass\n"
    )


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
    done = ours(tls, offset_json(tmp_path, mine, {0: 7}), "--command-config", str(config))
    ref = reference(tls, offset_json(tmp_path, theirs, {0: 7}), config)
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
