"""Java client properties become librdkafka's: names, SASL JAAS, and key/trust stores
made by keytool, checked against the librdkafka that confluent-kafka ships."""

from __future__ import annotations

import ctypes
import datetime as dt
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
    pkcs12,
)
from cryptography.x509.oid import NameOID

from kafka_retention.adapters.keystores import Stores, read_file
from kafka_retention.cli.common import UsageError, read_properties
from kafka_retention.core.client_config import (
    LIBRDKAFKA_PROPERTIES,
    PROPERTIES_KEY,
    ClientPropertyError,
    parse_jaas,
    refuse_local_resources,
    secret_file,
    secret_properties,
    to_librdkafka,
)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def mapped(props: Mapping[str, str]) -> dict[str, str]:
    return to_librdkafka(props, Stores(read_file))


def test_scram_jaas_config_gives_librdkafka_username_and_password() -> None:
    assert mapped(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="ops" password="s3cr=t;\\"x";',
            "client.id": "ops-tool",
        }
    ) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "ops",
        "sasl.password": 's3cr=t;"x',
        "client.id": "ops-tool",
    }


def test_plain_login_module_implies_the_plain_mechanism() -> None:
    out = mapped({"sasl.jaas.config": f'{PLAIN} required username=ops password="x";'})
    assert out == {"sasl.mechanism": "PLAIN", "sasl.username": "ops", "sasl.password": "x"}


def test_jaas_reads_comments_flags_and_escapes_as_java_does() -> None:
    module, options = parse_jaas(
        f'/* client */ {SCRAM} optional // the user\n username="a\\\\b" password="p\\tq" ;'
    )
    assert module == SCRAM
    assert options == {"username": "a\\b", "password": "p\tq"}


@pytest.mark.parametrize(
    ("props", "named", "says"),
    [
        (
            {"sasl.login.callback.handler.class": "com.example.Handler"},
            "sasl.login.callback.handler.class",
            "has no librdkafka equivalent",
        ),
        ({"default.api.timeout.ms": "60000"}, "default.api.timeout.ms", "no librdkafka"),
        ({"ssl.protocol": "TLSv1.1"}, "ssl.protocol", "accepted only as TLS, TLSv1.2"),
        (
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'{SCRAM} required username="a";'},
            "sasl.mechanism",
            "ScramLoginModule needs SCRAM-SHA-256 or SCRAM-SHA-512",
        ),
        (
            {"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": f'{SCRAM} required user="a";'},
            "sasl.jaas.config",
            "lacks the option username",
        ),
        (
            {
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": f'{SCRAM} required username="a" password="b" tokenauth=true;',
            },
            "sasl.jaas.config",
            "tokenauth",
        ),
        (
            {
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                "OAuthBearerLoginModule required;",
            },
            "sasl.jaas.config",
            "sasl.oauthbearer",
        ),
        (
            {"sasl.jaas.config": f'{PLAIN} required username="a" password="b"; {PLAIN} required;'},
            "sasl.jaas.config",
            "more than one login module",
        ),
        ({"sasl.jaas.config": f'{PLAIN} required username="a"'}, "sasl.jaas.config", "';'"),
        ({"request.timeout.ms": "9000", "socket.timeout.ms": "5000"}, "socket.timeout.ms", ""),
        ({"ssl.endpoint.identification.algorithm": "ldaps"}, "ssl.", "only https or empty"),
        (
            {"ssl.truststore.type": "BCFKS", "ssl.truststore.location": "x"},
            "ssl.truststore.type",
            "",
        ),
        ({"ssl.keystore.key": "-----BEGIN"}, "ssl.keystore.key", "needs ssl.keystore.certificate"),
    ],
)
def test_what_cannot_be_mapped_is_refused_naming_the_property(
    props: dict[str, str], named: str, says: str
) -> None:
    with pytest.raises(ClientPropertyError, match=r"client property \S+") as err:
        mapped(props)
    assert err.value.name.startswith(named), str(err.value)
    assert says in str(err.value)


def test_librdkafka_names_pass_unchanged_and_java_ones_are_renamed() -> None:
    own = {
        "ssl.ca.location": "/etc/ssl/ca.pem",
        "sasl.username": "u",
        "sasl.password": "p",
        "sasl.mechanisms": "PLAIN",
        "enable.ssl.certificate.verification": "false",
        "ssl.key.password": "kept",
        "topic.metadata.refresh.interval.ms": "1000",
    }
    assert mapped(own) == own
    assert mapped(
        {
            "request.timeout.ms": "20000",
            "send.buffer.bytes": "-1",
            "receive.buffer.bytes": "65536",
            "ssl.endpoint.identification.algorithm": "",
            "ssl.keymanager.algorithm": "SunX509",
            "bootstrap.servers": "ignored:9092",
        }
    ) == {
        "socket.timeout.ms": "20000",
        "socket.send.buffer.bytes": "0",
        "socket.receive.buffer.bytes": "65536",
        "ssl.endpoint.identification.algorithm": "none",
        "bootstrap.servers": "ignored:9092",
    }


def _installed_librdkafka_properties() -> set[str]:
    """librdkafka's CONFIGURATION table, printed by the library confluent-kafka loaded."""
    libs = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so*"))
    assert found, f"no librdkafka in {libs}"
    lib, libc = ctypes.CDLL(str(found[0])), ctypes.CDLL(None)
    libc.tmpfile.restype = ctypes.c_void_p
    libc.fflush.argtypes = libc.rewind.argtypes = libc.fclose.argtypes = [ctypes.c_void_p]
    libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
    libc.fgets.restype = ctypes.c_char_p
    lib.rd_kafka_conf_properties_show.argtypes = [ctypes.c_void_p]
    out = libc.tmpfile()
    lib.rd_kafka_conf_properties_show(out)
    libc.fflush(out)
    libc.rewind(out)
    names, line = set(), ctypes.create_string_buffer(1 << 16)
    while libc.fgets(line, len(line), out):
        cells = line.value.decode().split("|")
        if len(cells) > 3 and "Type: see dedicated API" not in line.value.decode():
            names.add(cells[0].strip())
    libc.fclose(out)
    return names - {"Property", ""} - {n for n in names if n.startswith("---")}


def test_the_librdkafka_names_are_those_of_the_installed_librdkafka() -> None:
    installed = {n for n in _installed_librdkafka_properties() if not n.endswith("_cb")}
    pointers = {"opaque", "default_topic_conf", "ssl_key", "ssl_certificate", "ssl_ca"}
    pointers |= {"ssl_engine_callback_data", "interceptors", "msg_order_cmp"}
    assert installed - pointers == LIBRDKAFKA_PROPERTIES


# --- stores ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Material:
    ca_pem: str
    client_pem: str
    client_key_pem: str
    dir: Path


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_name = (
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer[0])]) if issuer else name
    )
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
        .sign(issuer[1] if issuer else key, hashes.SHA256())
    )


def keytool(*args: str) -> None:
    subprocess.run(["keytool", *args, "-noprompt"], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> Material:
    """A CA and a client certificate, and the stores keytool makes of them: a JKS and a
    PKCS12 truststore, a JKS keystore with its own key password."""
    d = tmp_path_factory.mktemp("stores")
    ca_key, client_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = _cert("test-ca", ca_key, None)
    client = _cert("client", client_key, ("test-ca", ca_key))
    ca_pem = ca.public_bytes(Encoding.PEM).decode()
    (d / "ca.pem").write_text(ca_pem)
    for kind in ("JKS", "PKCS12"):
        keytool(
            "-importcert", "-alias", "ca", "-file", str(d / "ca.pem"), "-storetype", kind,
            "-keystore", str(d / f"trust.{kind.lower()}"), "-storepass", "trust-pass",
        )  # fmt: skip
    p12 = pkcs12.serialize_key_and_certificates(
        b"client", client_key, client, [ca], BestAvailableEncryption(b"store-pass")
    )
    (d / "client.p12").write_bytes(p12)
    keytool(
        "-importkeystore", "-srckeystore", str(d / "client.p12"), "-srcstoretype", "PKCS12",
        "-srcstorepass", "store-pass", "-destkeystore", str(d / "client.jks"),
        "-deststoretype", "JKS", "-deststorepass", "store-pass",
    )  # fmt: skip
    keytool(
        "-keypasswd", "-alias", "client", "-keystore", str(d / "client.jks"),
        "-storepass", "store-pass", "-keypass", "store-pass", "-new", "key-pass",
    )  # fmt: skip
    key_pem = client_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    return Material(ca_pem, client.public_bytes(Encoding.PEM).decode(), key_pem, d)


@pytest.mark.parametrize("kind", ["JKS", "PKCS12"])
def test_a_keytool_truststore_gives_the_same_certificate_as_the_pem(
    material: Material, kind: str
) -> None:
    out = mapped(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(material.dir / f"trust.{kind.lower()}"),
            "ssl.truststore.password": "trust-pass",
            "ssl.truststore.type": kind,
        }
    )
    assert out == {"security.protocol": "SSL", "ssl.ca.pem": material.ca_pem}


def test_a_truststore_type_that_disagrees_with_the_file_is_read_by_content(
    material: Material,
) -> None:
    out = mapped(
        {
            "ssl.truststore.type": "JKS",
            "ssl.truststore.location": str(material.dir / "trust.pkcs12"),
            "ssl.truststore.password": "trust-pass",
        }
    )
    assert out["ssl.ca.pem"] == material.ca_pem


@pytest.mark.parametrize(
    ("store", "password", "named"),
    [
        ("trust.jks", "wrong", "ssl.truststore.password"),
        ("trust.pkcs12", "wrong", "ssl.truststore.password"),
    ],
)
def test_a_wrong_store_password_is_refused_naming_it(
    material: Material, store: str, password: str, named: str
) -> None:
    with pytest.raises(ClientPropertyError, match="does not open") as err:
        mapped(
            {
                "ssl.truststore.location": str(material.dir / store),
                "ssl.truststore.password": password,
            }
        )
    assert err.value.name == named


def _same_key(pem: str, expected: str) -> bool:
    def numbers(text: str) -> object:
        return load_pem_private_key(text.encode(), None).private_numbers()  # type: ignore[union-attr]

    return numbers(pem) == numbers(expected)


def test_a_jks_keystore_with_its_own_key_password_gives_key_and_chain(material: Material) -> None:
    out = mapped(
        {
            "ssl.keystore.location": str(material.dir / "client.jks"),
            "ssl.keystore.password": "store-pass",
            "ssl.key.password": "key-pass",
        }
    )
    assert out["ssl.certificate.pem"] == material.client_pem + material.ca_pem
    assert _same_key(out["ssl.key.pem"], material.client_key_pem)
    assert "ssl.key.password" not in out  # the key is handed over decrypted
    with pytest.raises(ClientPropertyError, match="does not decrypt") as err:
        mapped(
            {
                "ssl.keystore.location": str(material.dir / "client.jks"),
                "ssl.keystore.password": "store-pass",
            }
        )
    assert err.value.name == "ssl.key.password"


def test_a_pkcs12_keystore_gives_key_and_chain(material: Material) -> None:
    out = mapped(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(material.dir / "client.p12"),
            "ssl.keystore.password": "store-pass",
        }
    )
    assert out["ssl.certificate.pem"] == material.client_pem + material.ca_pem
    assert _same_key(out["ssl.key.pem"], material.client_key_pem)


def test_inline_pem_continued_over_lines_in_a_properties_file_is_rejoined(
    material: Material, tmp_path: Path
) -> None:
    def continued(pem: str) -> str:
        return " \\\n  ".join(pem.strip().splitlines())

    encrypted = load_pem_private_key(material.client_key_pem.encode(), None).private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"key-pass")
    )
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.certificates={continued(material.ca_pem)}\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.certificate.chain={continued(material.client_pem)}\n"
        f"ssl.keystore.key={continued(encrypted.decode())}\n"
        "ssl.key.password=key-pass\n"
    )
    out = read_properties(path)
    assert out["ssl.ca.pem"] == material.ca_pem
    assert out["ssl.certificate.pem"] == material.client_pem
    assert _same_key(out["ssl.key.pem"], material.client_key_pem)
    # librdkafka itself takes them: it builds its TLS context from them at once.
    AdminClient({**out, "bootstrap.servers": "127.0.0.1:1", "log_level": 0})


def test_the_cli_names_the_file_and_the_property_it_cannot_map(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text("sasl.login.class=com.example.Login\n")
    with pytest.raises(UsageError, match=r"client\.properties: client property sasl\.login\.class"):
        read_properties(path)
    path.write_text("ssl.truststore.location=/nonexistent/trust.jks\n")
    with pytest.raises(UsageError, match=r"ssl\.truststore\.location names /nonexistent"):
        read_properties(path)


# --- the clientConfigSecret layout -----------------------------------------------------


def from_secret(data: Mapping[str, bytes]) -> dict[str, str]:
    return to_librdkafka(secret_properties(data), Stores(lambda p, loc: secret_file(data, p, loc)))


def test_a_secret_holds_client_properties_and_the_stores_it_names(material: Material) -> None:
    data = {
        PROPERTIES_KEY: (
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            f'sasl.jaas.config={SCRAM} required username="ops" password="pw";\n'
            "ssl.truststore.location=/etc/kafka/secrets/trust.jks\n"
            "ssl.truststore.password=trust-pass\n"
        ).encode(),
        "trust.jks": (material.dir / "trust.jks").read_bytes(),
        "client.id": b"from-a-key",
    }
    assert from_secret(data) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "ops",
        "sasl.password": "pw",
        "ssl.ca.pem": material.ca_pem,
        "client.id": "from-a-key",
    }


def test_a_secret_of_librdkafka_keys_reads_as_before() -> None:
    data = {"security.protocol": b"SASL_PLAINTEXT", "sasl.mechanisms": b"PLAIN"}
    assert from_secret(data) == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}


@pytest.mark.parametrize(
    ("data", "named", "says"),
    [
        ({"ssl.truststore.location": b"trust.jks"}, "ssl.truststore.location", "not a key"),
        ({"trust.jks": b"\xfe\xed\xfe\xed\x00"}, "trust.jks", "no ssl.truststore.location"),
        (
            {PROPERTIES_KEY: b"client.id=a\n", "client.id": b"b"},
            "client.id",
            "both as a key of the Secret and in client.properties",
        ),
    ],
)
def test_a_secret_that_cannot_work_is_refused_naming_the_key(
    data: dict[str, bytes], named: str, says: str
) -> None:
    with pytest.raises(ClientPropertyError, match=says) as err:
        from_secret(data)
    assert err.value.name == named


@pytest.mark.parametrize(
    "jaas",
    [
        f"{SCRAM} required username='u' password=p@ssw0rd!;",
        f'{SCRAM} required "hunter2";',
        f'{SCRAM} hunter2 username="u" password="x";',
    ],
)
def test_a_jaas_config_that_cannot_be_read_is_refused_without_quoting_it(jaas: str) -> None:
    """The refusal lands in a condition anyone who may read the resource sees."""
    with pytest.raises(ClientPropertyError) as err:
        parse_jaas(jaas)
    for secret in ("p@ssw0rd", "ssw0rd", "hunter2"):
        assert secret not in str(err.value)


@pytest.mark.parametrize(
    "name",
    [
        "sasl.oauthbearer.assertion.file",
        "sasl.kerberos.kinit.cmd",
        "plugin.library.paths",
        "ssl.ca.location",
        "ssl.engine.location",
    ],
)
def test_a_secret_may_not_make_the_client_read_files_or_run_commands_in_the_pod(
    name: str,
) -> None:
    """An OIDC assertion file is POSTed to a token endpoint the same Secret names: from a
    Secret it would send the operator's service-account token anywhere."""
    config = secret_properties({name: b"/var/run/secrets/kubernetes.io/serviceaccount/token"})
    converted = to_librdkafka(config, Stores(read_file))
    with pytest.raises(ClientPropertyError) as err:
        refuse_local_resources(converted)
    assert err.value.name == name
    refuse_local_resources(to_librdkafka({"ssl.ca.pem": "x", "client.id": "c"}, Stores(read_file)))
