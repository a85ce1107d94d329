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
from kafka_retention.core import java_stores
from kafka_retention.core.client_config import (
    parse_jaas,
    parse_properties,
    secret_file,
    secret_properties,
    to_librdkafka,
)
from kafka_retention.core.client_properties import (
    ALLOWED_PROPERTIES,
    CONSUMED,
    JAVA_DEFAULTS,
    LIBRDKAFKA_PROPERTIES,
    LOCATIONS,
    PROPERTIES_KEY,
    REACHES_LIBRDKAFKA,
    RENAMED,
    ClientPropertyError,
    refuse_local_resources,
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
            "sasl.mechanism",
            "is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
        ),
        (
            {
                "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                "OAuthBearerLoginModule required;",
            },
            "sasl.jaas.config",
            "OAUTHBEARER is not accepted",
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
        (
            {"ssl.keystore.location": "k.jks", "ssl.keystore.key": "-----BEGIN"},
            "ssl.keystore.key",
            "and ssl.keystore.location are both set",
        ),
        (
            {
                "ssl.keystore.key": "-----BEGIN",
                "ssl.keystore.certificate.chain": "-----BEGIN",
                "ssl.keystore.type": "JKS",
            },
            "ssl.keystore.key",
            "needs ssl.keystore.type PEM",
        ),
        (
            {"ssl.keystore.location": "k.jks", "ssl.keystore.type": "BCFKS"},
            "ssl.keystore.type",
            "JKS, PKCS12 or PEM can be read",
        ),
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
        "ssl.ca.pem": "-----BEGIN CERTIFICATE-----",
        "sasl.username": "u",
        "sasl.password": "p",
        "sasl.mechanisms": "PLAIN",
        "enable.ssl.certificate.verification": "false",
        "ssl.key.password": "kept",
        "metadata.max.age.ms": "1000",
    }
    assert mapped(own) == own
    assert mapped(
        {
            "request.timeout.ms": "20000",
            "send.buffer.bytes": "-1",
            "receive.buffer.bytes": "65536",
            "ssl.endpoint.identification.algorithm": "",
            "ssl.keymanager.algorithm": "SunX509",
        }
    ) == {
        "socket.timeout.ms": "20000",
        "socket.send.buffer.bytes": "0",
        "socket.receive.buffer.bytes": "65536",
        "ssl.endpoint.identification.algorithm": "none",
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


# --- the allowlist ---------------------------------------------------------------------


def samples(m: Material) -> dict[str, dict[str, str]]:
    """For each accepted property, a working set of properties that holds it."""
    jks = {
        "ssl.truststore.location": str(m.dir / "trust.jks"),
        "ssl.truststore.password": "trust-pass",
    }
    p12 = {
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(m.dir / "trust.pkcs12"),
        "ssl.truststore.password": "trust-pass",
    }
    keystore = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(m.dir / "client.p12"),
        "ssl.keystore.password": "store-pass",
    }
    pem_keystore = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": m.client_pem,
        "ssl.keystore.key": m.client_key_pem,
    }
    tuning = dict.fromkeys(
        (
            "request.timeout.ms",
            "socket.timeout.ms",
            "socket.connection.setup.timeout.ms",
            "metadata.max.age.ms",
            "connections.max.idle.ms",
            "reconnect.backoff.ms",
            "reconnect.backoff.max.ms",
            "retry.backoff.ms",
            "retry.backoff.max.ms",
        ),
        "2000",
    )
    buffers = {
        "send.buffer.bytes": "-1",
        "receive.buffer.bytes": "131072",
        "socket.send.buffer.bytes": "0",
        "socket.receive.buffer.bytes": "131072",
    }
    return {
        "security.protocol": {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "p",
        },
        "sasl.mechanism": {"sasl.mechanism": "SCRAM-SHA-256"},
        "sasl.mechanisms": {"sasl.mechanisms": "SCRAM-SHA-512"},
        "sasl.jaas.config": {
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": f'{SCRAM} required username="u" password="p";',
        },
        "sasl.username": {"sasl.mechanism": "PLAIN", "sasl.username": "u"},
        "sasl.password": {"sasl.mechanism": "PLAIN", "sasl.password": "p"},
        "ssl.truststore.location": jks,
        "ssl.truststore.password": jks,
        "ssl.truststore.type": p12,
        "ssl.truststore.certificates": {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": m.ca_pem,
        },
        "ssl.keystore.location": keystore,
        "ssl.keystore.password": keystore,
        "ssl.keystore.type": keystore,
        "ssl.keystore.certificate.chain": pem_keystore,
        "ssl.keystore.key": pem_keystore,
        "ssl.ca.pem": {"ssl.ca.pem": m.ca_pem},
        "ssl.certificate.pem": {
            "ssl.certificate.pem": m.client_pem,
            "ssl.key.pem": m.client_key_pem,
        },
        "ssl.key.pem": {"ssl.certificate.pem": m.client_pem, "ssl.key.pem": m.client_key_pem},
        "ssl.key.password": {"ssl.key.password": "key-pass"},
        "ssl.endpoint.identification.algorithm": {"ssl.endpoint.identification.algorithm": "https"},
        "enable.ssl.certificate.verification": {"enable.ssl.certificate.verification": "true"},
        "ssl.protocol": {"ssl.protocol": "TLSv1.3"},
        "ssl.enabled.protocols": {"ssl.enabled.protocols": "TLSv1.2,TLSv1.3"},
        "ssl.keymanager.algorithm": {"ssl.keymanager.algorithm": "SunX509"},
        "ssl.trustmanager.algorithm": {"ssl.trustmanager.algorithm": "PKIX"},
        "client.id": {"client.id": "ops-tool"},
        **{name: {name: value} for name, value in tuning.items()},
        **{name: {name: value} for name, value in buffers.items()},
        "socket.keepalive.enable": {"socket.keepalive.enable": "true"},
    }


def as_secret(props: Mapping[str, str]) -> dict[str, bytes]:
    """The Secret a user would make of `props`: one key per property, and each store a
    location names as a key of its own, by base name."""
    data = {name: value.encode() for name, value in props.items()}
    for name in LOCATIONS:
        if name in props:
            data[Path(props[name]).name] = Path(props[name]).read_bytes()
    return data


def test_every_accepted_property_has_a_sample(material: Material) -> None:
    assert set(samples(material)) == ALLOWED_PROPERTIES


@pytest.mark.parametrize("name", sorted(ALLOWED_PROPERTIES))
def test_every_accepted_property_is_taken_from_a_file_and_from_a_secret(
    material: Material, name: str
) -> None:
    props = samples(material)[name]
    for out in (mapped(props), from_secret(as_secret(props))):
        assert set(out) <= REACHES_LIBRDKAFKA
        refuse_local_resources(out)
        # librdkafka takes them as they are (it builds a TLS context from PEM at once).
        AdminClient({**out, "bootstrap.servers": "127.0.0.1:1", "log_level": 0})


def test_the_allowlist_hands_librdkafka_no_path_url_library_engine_or_command() -> None:
    reaching = REACHES_LIBRDKAFKA
    risky: tuple[str, ...] = (".location", ".url", ".path", ".paths", ".library", ".engine")
    risky += (".providers", ".file", ".cmd", ".stores", ".keytab")
    assert not {name for name in reaching if name.endswith(risky)}
    words = ("oauthbearer", "kerberos", "engine", "plugin", "provider", "https.", "debug")
    assert not {name for name in reaching if any(word in name for word in words)}
    assert reaching <= LIBRDKAFKA_PROPERTIES
    # The only accepted paths are Java's store locations, which this module reads itself.
    assert {name for name in ALLOWED_PROPERTIES if name.endswith(risky)} == set(LOCATIONS)
    assert set(LOCATIONS) <= CONSUMED
    assert CONSUMED | RENAMED.keys() | JAVA_DEFAULTS.keys() <= ALLOWED_PROPERTIES
    assert {target for target, _ in RENAMED.values()} <= ALLOWED_PROPERTIES


HOSTILE = [
    # Reach out of the cluster: token endpoints, cloud metadata services.
    "sasl.oauthbearer.metadata.authentication.type",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.method",
    "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.config",
    "enable.sasl.oauthbearer.unsecure.jwt",
    "https.ca.location",
    "https.ca.pem",
    # Read files of the pod.
    "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.jwt.template.file",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.crl.location",
    "ssl.ca.certificate.stores",
    "sasl.kerberos.keytab",
    "offset.store.path",
    # Load code or run commands.
    "plugin.library.paths",
    "ssl.engine.location",
    "ssl.engine.id",
    "ssl.providers",
    "sasl.kerberos.kinit.cmd",
    # Not needed to connect, or the operator's own to set.
    "bootstrap.servers",
    "metadata.broker.list",
    "debug",
    "log_level",
    "group.id",
    "isolation.level",
    "client.rack",
    "ssl.cipher.suites",
    "topic.metadata.refresh.interval.ms",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_properties_that_reach_beyond_kafka_are_refused_by_name(name: str) -> None:
    value = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    with pytest.raises(ClientPropertyError, match="is not accepted") as err:
        mapped({name: value, "security.protocol": "SSL"})
    assert err.value.name == name
    assert str(err.value).startswith(f"client property {name} is not accepted")
    assert value not in str(err.value)
    with pytest.raises(ClientPropertyError) as err:
        from_secret({name: value.encode(), "client.id": b"c"})
    assert err.value.name == name
    with pytest.raises(ClientPropertyError) as err:
        refuse_local_resources({"client.id": "c", name: value})
    assert err.value.name == name


@pytest.mark.parametrize("name", sorted(LIBRDKAFKA_PROPERTIES - ALLOWED_PROPERTIES))
def test_every_other_librdkafka_property_is_refused(name: str) -> None:
    with pytest.raises(ClientPropertyError, match="is not accepted") as err:
        mapped({name: "x"})
    assert err.value.name == name


def test_a_file_property_says_what_to_use_instead() -> None:
    with pytest.raises(ClientPropertyError, match=r"use ssl\.truststore\.location") as err:
        mapped({"ssl.ca.location": "/etc/ssl/ca.pem"})
    assert err.value.name == "ssl.ca.location"
    with pytest.raises(ClientPropertyError, match=r"spec\.cluster\.bootstrapServers"):
        mapped({"bootstrap.servers": "elsewhere:9092"})


@pytest.mark.parametrize(
    "name",
    [
        " SSL.Providers",
        "ssl.providers ",
        "SSL.PROVIDERS",
        "Plugin.Library.Paths",
        "ssl.ca.location\t",
        "Ssl.Ca.Location",
        "ssl.engine.location\n",
        "SASL.OAUTHBEARER.TOKEN.ENDPOINT.URL",
        # Accepted names, spelled otherwise: refused too, never normalised into them.
        "client.id ",
        " security.protocol",
        "Security.Protocol",
        "SSL.CA.PEM",
        "ssl.ca.pem\x00",
        "ssl.ca.pem\u200b",
        "ssl.\u0441a.pem",  # Cyrillic es
        "ssl..ca.pem",
        "",
    ],
)
def test_case_and_whitespace_tricks_are_refused_as_spelled(name: str) -> None:
    with pytest.raises(ClientPropertyError, match="client property") as err:
        mapped({name: "x"})
    assert err.value.name == name
    assert "accepted" in str(err.value) or "no librdkafka equivalent" in str(err.value)
    if name.strip() != name:
        assert repr(name) in str(err.value)  # the condition shows where the space is
    with pytest.raises(ClientPropertyError) as err:
        refuse_local_resources({name: "x"})
    assert err.value.name == name


def test_a_properties_file_key_with_an_escaped_space_is_refused() -> None:
    """Java's properties syntax can end a key with a space (`key\\ =value`)."""
    props = parse_properties(b"client.id\\ =ops\nssl.providers\\ = legacy\n", "client.properties")
    assert set(props) == {"client.id ", "ssl.providers "}
    with pytest.raises(ClientPropertyError) as err:
        mapped(props)
    assert err.value.name == "client.id "
    data = {PROPERTIES_KEY: b"security.protocol=SSL\nssl.providers\\ = legacy\n"}
    with pytest.raises(ClientPropertyError) as err:
        from_secret(data)
    assert err.value.name == "ssl.providers "


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({"security.protocol": "SASL_OAUTHBEARER"}, "security.protocol"),
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism"),  # librdkafka would run kinit
        ({"sasl.mechanisms": "OAUTHBEARER"}, "sasl.mechanisms"),
        ({"sasl.mechanism": "plain"}, "sasl.mechanism"),
        ({"request.timeout.ms": "1e9"}, "request.timeout.ms"),
        ({"socket.timeout.ms": "-5"}, "socket.timeout.ms"),
        ({"send.buffer.bytes": "lots"}, "send.buffer.bytes"),
        ({"enable.ssl.certificate.verification": "hunter2"}, "enable.ssl.certificate.verification"),
    ],
)
def test_an_accepted_property_with_a_value_it_does_not_take_is_refused_without_quoting_it(
    props: dict[str, str], named: str
) -> None:
    with pytest.raises(ClientPropertyError) as err:
        mapped(props)
    assert err.value.name == named
    assert next(iter(props.values())) not in str(err.value)


@pytest.mark.parametrize(
    "props",
    [
        {"security.protocol": "SASL_SSL"},
        {"security.protocol": "sasl_plaintext", "sasl.username": "u", "sasl.password": "p"},
    ],
)
def test_sasl_without_a_mechanism_is_refused_as_librdkafka_would_use_gssapi(
    props: dict[str, str],
) -> None:
    """GSSAPI, librdkafka's (and Java's) default mechanism, runs kinit in the pod."""
    with pytest.raises(ClientPropertyError, match=r"without sasl\.mechanism") as err:
        mapped(props)
    assert err.value.name == "security.protocol"


def test_values_are_given_to_librdkafka_in_the_form_it_documents() -> None:
    assert mapped(
        {
            "security.protocol": " sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512 ",
            "enable.ssl.certificate.verification": "FALSE",
            "socket.timeout.ms": " 9000",
        }
    ) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "enable.ssl.certificate.verification": "false",
        "socket.timeout.ms": "9000",
    }


def test_a_store_location_in_a_secret_never_reads_the_pods_files(material: Material) -> None:
    """Java's location names a key of the Secret, by base name: a real path of the pod
    (here a readable CA file) is not opened."""
    data = {
        "ssl.truststore.type": b"PEM",
        "ssl.truststore.location": str(material.dir / "ca.pem").encode(),
    }
    with pytest.raises(
        ClientPropertyError, match=r"ca\.pem, which is not a key of the Secret"
    ) as err:
        from_secret(data)
    assert err.value.name == "ssl.truststore.location"
    out = from_secret({**data, "ca.pem": material.ca_pem.encode()})
    assert out == {"ssl.ca.pem": material.ca_pem}


def test_store_passwords_and_keys_stay_out_of_a_log_line_or_traceback() -> None:
    """A store object formatted with %r (logging, a traceback's locals) shows where the
    store is, never its secrets."""
    secret = "hunter2-s3cret"
    stores = [
        java_stores.keystore({"ssl.keystore.location": "k.p12", "ssl.keystore.password": secret}),
        java_stores.keystore(
            {
                "ssl.keystore.key": f"-----BEGIN {secret}",
                "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE",
                "ssl.key.password": secret,
            }
        ),
        java_stores.truststore(
            {"ssl.truststore.location": "t.jks", "ssl.truststore.password": secret}
        ),
    ]
    shown = [f"{store!r}" for store in stores]
    assert [secret in line for line in shown] == [False, False, False], shown
    assert "k.p12" in shown[0]
    assert "t.jks" in shown[2]
