"""Java client properties files as Kafka's Java tools read them (`--command-config`):
SCRAM over the brokers' SASL listener, and JKS, PKCS12 and PEM stores made with keytool
for their SSL listener."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    load_pem_private_key,
    pkcs12,
)
from cryptography.x509 import load_pem_x509_certificate

from devstack.kafka import SASL_USER
from devstack.stack import Stack

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def scram_properties(path: Path, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM} required \\\n    username="{SASL_USER}" password="{password}";\n'
    )
    return path


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
