"""librdkafka properties (what the operator resolves spec.cluster to) as the Java client
options of Spark's Kafka source."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kafka_retention.core.java_client import Unmappable
from kafka_retention.core.plan_request import Connection
from retention_jobs.kafka_source import (
    MIN_TASK_RECORDS,
    java_options,
    long,
    matches,
    source_missing,
    task_records,
)


def test_plaintext_reads_committed_records_like_librdkafka() -> None:
    assert java_options(Connection("a:9092,b:9092")) == {
        "kafka.bootstrap.servers": "a:9092,b:9092",
        "kafka.isolation.level": "read_committed",
    }


def test_an_erasure_scan_reads_uncommitted_records_whatever_the_client_properties_say() -> None:
    """Aborted transactions' records hold keys until cleaned: a client property must not
    make the erasure scan skip them."""
    conn = Connection("a:9092", {"isolation.level": "read_committed"})
    assert java_options(conn, uncommitted=True)["kafka.isolation.level"] == "read_uncommitted"


def test_scram_credentials_become_a_quoted_jaas_line() -> None:
    options = java_options(
        Connection(
            "a:9093",
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": "ops",
                "sasl.password": 'p"w\\d',
                "ssl.endpoint.identification.algorithm": "none",
                "socket.timeout.ms": "20000",
            },
        )
    )
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="ops" password="p\\"w\\\\d";'
    )
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert options["kafka.request.timeout.ms"] == "20000"


def test_plain_is_the_mechanism_when_none_is_named() -> None:
    options = java_options(Connection("a:1", {"sasl.username": "u", "sasl.password": "p"}))
    assert options["kafka.sasl.jaas.config"].startswith(
        "org.apache.kafka.common.security.plain.PlainLoginModule required"
    )


@pytest.mark.parametrize(
    ("key", "header"),
    [
        (rsa.generate_private_key(65537, 2048), "BEGIN RSA PRIVATE KEY"),
        (ec.generate_private_key(ec.SECP256R1()), "BEGIN EC PRIVATE KEY"),
    ],
)
def test_pem_stores_are_inline_and_keys_are_given_as_pkcs8(key: object, header: str) -> None:
    traditional = key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    assert header in traditional  # Java's PEM keystore refuses this form
    options = java_options(
        Connection(
            "a:9093",
            {
                "security.protocol": "SSL",
                "ssl.ca.pem": "CA",
                "ssl.certificate.pem": "CERT",
                "ssl.key.pem": traditional,
            },
        )
    )
    assert options["kafka.ssl.truststore.type"] == "PEM"
    assert options["kafka.ssl.truststore.certificates"] == "CA"
    assert options["kafka.ssl.keystore.certificate.chain"] == "CERT"
    pkcs8 = options["kafka.ssl.keystore.key"]
    assert pkcs8.startswith("-----BEGIN PRIVATE KEY-----")
    same = serialization.load_pem_private_key(pkcs8.encode(), None).private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    assert same == key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"ssl.ca.location": "/etc/ca.pem"}, "ssl.ca.location"),
        (
            {"sasl.mechanism": "OAUTHBEARER", "sasl.username": "u", "sasl.password": "p"},
            "OAUTHBEARER",
        ),
        ({"ssl.certificate.pem": "CERT"}, "ssl.key.pem"),
        ({"enable.ssl.certificate.verification": "false"}, "enable.ssl.certificate.verification"),
    ],
)
def test_a_property_without_a_java_equivalent_is_named(config: dict[str, str], named: str) -> None:
    with pytest.raises(Unmappable, match=named):
        java_options(Connection("a:1", config))


def test_only_long_ranges_go_to_the_kafka_source() -> None:
    # A task and a consumer per partition: worth it only where there is much to read.
    assert long([("t", 0, 0, 50_000), ("t", 1, 0, 0)])
    assert not long([("t", p, 100, 120) for p in range(1000)])
    assert not long([])


def test_the_connector_serves_only_the_spark_it_was_built_for() -> None:
    assert matches("4.0.5", "4.0.0")
    assert not matches("4.3.0", "4.0.0")  # its log lines throw NoClassDefFoundError there
    assert not matches("3.5.1", "4.0.0")


class _Lookup:
    """A session whose data source lookup raises what the JVM said (py4j carries the
    Java exception's text in the Python error)."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    def lookupDataSource(self, name: str, conf: object) -> object:
        if self.error is not None:
            raise self.error
        return object()


def _session(error: Exception | None) -> Any:
    jvm = SimpleNamespace(
        org=SimpleNamespace(
            apache=SimpleNamespace(
                spark=SimpleNamespace(
                    sql=SimpleNamespace(
                        execution=SimpleNamespace(
                            datasources=SimpleNamespace(DataSource=_Lookup(error))
                        )
                    )
                )
            )
        )
    )
    state = SimpleNamespace(conf=lambda: None)
    return SimpleNamespace(
        sparkContext=SimpleNamespace(_jvm=jvm),
        _jsparkSession=SimpleNamespace(sessionState=lambda: state),
    )


def test_a_source_spark_cannot_find_is_not_installed() -> None:
    error = RuntimeError(
        "An error occurred while calling z:...lookupDataSource.\n"
        ": org.apache.spark.sql.AnalysisException: [DATA_SOURCE_NOT_FOUND] Failed to find "
        "the data source: kafka."
    )
    assert source_missing(_session(error)) == "Spark's Kafka source is not installed"


def test_a_source_that_fails_to_load_says_why_rather_than_not_installed() -> None:
    error = RuntimeError(
        "\nAn error occurred while calling z:...lookupDataSource.\n"
        ": java.lang.NoClassDefFoundError: org/apache/kafka/common/serialization/Deserializer\n"
        "\tat org.apache.spark.sql.execution.datasources.DataSource$.lookupDataSource"
    )
    missing = source_missing(_session(error))
    assert missing is not None
    assert "not installed" not in missing
    assert missing.endswith(
        "java.lang.NoClassDefFoundError: org/apache/kafka/common/serialization/Deserializer"
    )
    assert source_missing(_session(None)) is None


def _tasks(sizes: list[int], most: int | None) -> list[int]:
    """The records of each task the source makes of `sizes` with maxRecordsPerPartition
    `most`: a range splits into ceil(size / most) equal parts."""
    out = []
    for size in sizes:
        parts = 1 if most is None else -(-size // most)
        out += [size // parts + (1 if i < size % parts else 0) for i in range(parts)]
    return out


def test_three_long_partitions_on_two_cores_split_into_a_whole_number_of_tasks_per_core() -> None:
    """One task a partition would run the third alone while a core idles."""
    sizes = [333_334, 333_333, 333_333]
    tasks = _tasks(sizes, task_records(sizes, 2))
    assert len(tasks) == 6
    assert sum(tasks) == sum(sizes)
    assert max(tasks) - min(tasks) <= 1
    four = _tasks(sizes, task_records(sizes, 4))
    assert len(four) % 4 == 0
    assert sum(four) == sum(sizes)


def test_one_long_partition_is_read_by_every_core() -> None:
    assert _tasks([1_000_000], task_records([1_000_000], 2)) == [500_000, 500_000]


def test_short_ranges_are_not_split_as_a_task_costs_a_consumer() -> None:
    assert task_records([MIN_TASK_RECORDS], 2) is None
    assert task_records([50_000] * 3, 2) is None
    assert task_records([], 2) is None


def test_no_task_is_made_smaller_than_the_least_a_task_should_read() -> None:
    for sizes in ([250_000, 10_000, 10_000], [400_000, 400_000, 400_000], [2_000_000, 7]):
        most = task_records(sizes, 2)
        assert most is None or most >= MIN_TASK_RECORDS
        if most is not None:
            assert len(_tasks(sizes, most)) % 2 == 0
