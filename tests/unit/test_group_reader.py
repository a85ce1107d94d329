"""The group reader's line protocol as the Python side writes and reads it, the status
summary of the groups a plan read, and the Java client properties the reader connects
with. The reader process itself is exercised on the real stack
(tests/integration/test_group_positions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kafka_retention.adapters import group_reader
from kafka_retention.adapters.group_reader import (
    GroupReaderError,
    parse_answer,
    parse_tiers,
    request_lines,
    tier_request_lines,
)
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.java_client import Unmappable, java_properties
from kafka_retention.core.plan_row import GroupImpactRow, PlanRow
from kafka_retention.core.tiers import TierOffsets
from kafka_retention.services.policy.report import group_summary, groups_line

PEM = "-----BEGIN CERTIFICATE-----\r\nMIIB\tx%41\n-----END CERTIFICATE-----\n"
ODD = "team\tA%20\nlegacy\r"  # a tab, a percent that looks encoded, LF, CR


def test_request_lines_encode_separators_and_percent_in_ids_and_values() -> None:
    tp = TopicPartition("orders", 3)
    lines = request_lines({"ssl.truststore.certificates": PEM}, {ODD: [tp], "plain": []}, chunk=7)
    *body, end = lines
    assert body == [
        "config\tssl.truststore.certificates\t-----BEGIN CERTIFICATE-----%0D%0AMIIB%09x%2541"
        "%0A-----END CERTIFICATE-----%0A",
        "chunk\t7",
        "ask\tteam%09A%2520%0Alegacy%0D",
        "ask\tteam%09A%2520%0Alegacy%0D\torders\t3",
        "ask\tplain",
    ]
    assert end.split("\t")[0] == "end"  # the request closes (with its id, where one is sent)
    # Every line stays one line of exactly its fields: nothing raw reaches the reader.
    assert all("\n" not in line and "\r" not in line for line in lines)


def test_an_answer_naming_encoded_ids_is_read_back_as_the_ids_asked() -> None:
    tps = [TopicPartition("t\tx", 0), TopicPartition("t\tx", 1)]
    asked = {ODD: tps, "plain": tps[:1]}
    # The reader echoes what it was sent: take the encoded id from the request itself.
    encoded = request_lines({}, {ODD: []})[1].split("\t")[1]
    answer = [
        f"type\t{encoded}\tshare",
        f"offset\t{encoded}\tt%09x\t0\t300",
        f"offset\t{encoded}\tt%09x\t1\t-",
        "type\tplain\tnone",
        "offset\tplain\tt%09x\t0\t-",
    ]
    assert parse_answer(answer, asked) == {
        ODD: GroupRead(GroupType.SHARE, {tps[0]: 300, tps[1]: None}),
        "plain": GroupRead(GroupType.NONE, {tps[0]: None}),
    }


@pytest.mark.parametrize("kind", list(GroupType))
def test_every_type_the_reader_names_is_read(kind: GroupType) -> None:
    tp = TopicPartition("t", 0)
    read = parse_answer([f"type\tg\t{kind}", "offset\tg\tt\t0\t12"], {"g": [tp]})
    assert read == {"g": GroupRead(kind, {tp: 12})}


@pytest.mark.parametrize(("flag", "retriable"), [("retriable", True), ("fatal", False)])
def test_an_error_line_raises_with_the_readers_message_and_retriable_flag(
    flag: str, retriable: bool
) -> None:
    with pytest.raises(GroupReaderError, match="SaslAuthenticationException: bad\tcreds") as err:
        parse_answer([f"error\t{flag}\tSaslAuthenticationException: bad%09creds"], {"g": []})
    assert err.value.retriable is retriable


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(["type\ta\tconsumer", "offset\ta\tt\t0\t5"], id="a-group-left-out"),
        pytest.param(
            ["type\ta\tconsumer", "offset\ta\tt\t0\t5", "type\tb\tstreams"],
            id="a-partition-left-out",
        ),
        pytest.param(["offset\ta\tt\t0\t5", "offset\tb\tt\t0\t5"], id="no-type-lines"),
    ],
)
def test_an_answer_that_leaves_out_something_asked_is_an_error_not_no_position(
    answer: list[str],
) -> None:
    tp = TopicPartition("t", 0)
    with pytest.raises(GroupReaderError, match="no answer for group") as err:
        parse_answer(answer, {"a": [tp], "b": [tp]})
    assert err.value.retriable


@pytest.mark.parametrize(
    "line",
    [
        "offset\tg\tt\t0",  # a field short
        "type\tother\tconsumer",  # a group not asked
        "offset\tother\tt\t0\t5",
        "hello",
        "type\tg\tconsumer\textra",
    ],
)
def test_an_unknown_answer_line_is_an_error(line: str) -> None:
    with pytest.raises(GroupReaderError, match="unexpected answer line"):
        parse_answer(
            ["type\tg\tconsumer", "offset\tg\tt\t0\t5", line], {"g": [TopicPartition("t", 0)]}
        )


@pytest.mark.parametrize(
    "answer",
    [
        ["type\tg\tunknown", "offset\tg\tt\t0\t5"],  # a type the protocol does not name
        ["type\tg\tshare", "offset\tg\tt\t0\tlots"],  # an offset that is not a number
        ["type\tg\tshare", "offset\tg\tt\tzero\t5"],  # nor a partition
    ],
)
def test_a_malformed_value_in_a_known_line_is_a_reader_error(answer: list[str]) -> None:
    with pytest.raises(GroupReaderError, match="unexpected answer line"):
        parse_answer(answer, {"g": [TopicPartition("t", 0)]})


def _row(topic: str, partition: int, hw: int | None, **positions: int | None) -> PlanRow:
    groups = tuple(GroupImpactRow(g, p, 0) for g, p in positions.items())
    return PlanRow(topic, partition, high_watermark=hw, groups=groups)


def test_group_summary_counts_partitions_positions_and_records_behind_per_group() -> None:
    rows = [
        _row("a", 0, 100, orders=40, audit=90),
        _row("a", 1, 50, orders=None, audit=60),  # a position past the watermark: 0 behind
        _row("b", 0, 10, orders=3),
        _row("b", 1, None, orders=1),  # an error row: no watermark, no position counted
        PlanRow("c", 0, high_watermark=5),  # no group read here
    ]
    summary = group_summary(rows, {"orders": "share", "audit": "streams", "ghost": "none"})
    assert [g.to_status() for g in summary] == [
        {
            "name": "audit",
            "type": "streams",
            "partitions": 2,
            "withPosition": 2,
            "recordsBehind": 10,
        },
        {"name": "ghost", "type": "none", "partitions": 0, "withPosition": 0, "recordsBehind": 0},
        {
            "name": "orders",
            "type": "share",
            "partitions": 4,
            "withPosition": 2,
            "recordsBehind": 67,
        },
    ]


def test_group_summary_ignores_groups_the_plan_did_not_read_as_typed() -> None:
    assert group_summary([_row("a", 0, 9, stray=1)], {}) == []


def test_groups_line_names_each_type_and_counts_the_rest() -> None:
    summary = group_summary([], {f"g{i}": "consumer" for i in range(7)} | {"a": "share"})
    assert groups_line(summary, limit=3) == "a (share), g0 (consumer), g1 (consumer), +5 more"
    assert groups_line(summary[:3], limit=3) == "a (share), g0 (consumer), g1 (consumer)"
    assert groups_line([]) == ""


def test_java_properties_pass_shared_names_through_and_accept_either_mechanism_key() -> None:
    config = {
        "client.id": "ops",
        "isolation.level": "read_committed",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "u",
        "sasl.password": "p",
        "ssl.endpoint.identification.algorithm": "https",
    }
    before = dict(config)
    assert java_properties("k:9092", config) == {
        "bootstrap.servers": "k:9092",
        "client.id": "ops",
        "isolation.level": "read_committed",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="u" password="p";',
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert config == before  # the caller's mapping is not consumed


def test_an_encrypted_traditional_key_becomes_pkcs8_under_the_same_password() -> None:
    key = rsa.generate_private_key(65537, 2048)
    traditional = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(b"s3cret"),
    ).decode()
    assert "BEGIN RSA PRIVATE KEY" in traditional
    assert "ENCRYPTED" in traditional
    props = java_properties(
        "k:9093",
        {
            "security.protocol": "SSL",
            "ssl.certificate.pem": "CERT",
            "ssl.key.pem": traditional,
            "ssl.key.password": "s3cret",
        },
    )
    assert props["ssl.key.password"] == "s3cret"
    pkcs8 = props["ssl.keystore.key"]
    assert pkcs8.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    with pytest.raises(TypeError):
        serialization.load_pem_private_key(pkcs8.encode(), None)
    same = serialization.load_pem_private_key(pkcs8.encode(), b"s3cret")
    assert isinstance(same, rsa.RSAPrivateKey)
    assert same.private_numbers() == key.private_numbers()


def test_a_pkcs8_key_is_passed_as_given() -> None:
    pkcs8 = (
        rsa.generate_private_key(65537, 2048)
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    props = java_properties("k:9093", {"ssl.certificate.pem": "CERT", "ssl.key.pem": pkcs8})
    assert props["ssl.keystore.key"] == pkcs8
    assert props["ssl.keystore.type"] == "PEM"


def test_a_reader_that_answers_nobody_is_killed_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wedged reader (alive, reading its requests, answering none) must not time out
    every later read: the read that waited in vain kills it, and the next starts anew."""
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    java = java_home / "bin" / "java"
    # Reads every request, answers none, and keeps its stdout open (a wedged JVM).
    java.write_text("#!/bin/sh\nwhile read -r line; do :; done\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    reader = group_reader.GroupReader(tmp_path)
    reader.startup_allowance = 0.5
    asked = {"g": [TopicPartition("t", 0)]}
    with pytest.raises(group_reader.GroupReaderError, match="no answer within"):
        reader.read({"bootstrap.servers": "k:1"}, asked, timeout=0.1)
    assert reader._proc is None  # killed, not kept for the next caller to wait on
    with pytest.raises(group_reader.GroupReaderError, match="no answer within"):
        reader.read({"bootstrap.servers": "k:1"}, asked, timeout=0.1)
    reader.stop()


@pytest.mark.parametrize("half", [{"sasl.username": "u"}, {"sasl.password": "p"}])
def test_half_a_sasl_login_has_no_java_equivalent(half: dict[str, str]) -> None:
    with pytest.raises(Unmappable, match=r"sasl\.username without sasl\.password"):
        java_properties("k:1", {"security.protocol": "SASL_SSL", **half})


def test_a_tier_request_names_each_partition_and_topic_encoded() -> None:
    lines = tier_request_lines({}, [TopicPartition(ODD, 3)], ["a\tb"], request_id=9)
    assert lines == [
        "chunk\t2000",
        "tier\tteam%09A%2520%0Alegacy%0D\t3",
        "size\ta%09b",
        "end\t9",
    ]


def test_a_tier_answer_gives_each_partitions_offsets_and_each_brokers_bytes() -> None:
    tp = TopicPartition("t", 0)
    offsets, sizes = parse_tiers(["tier\tt\t0\t200\t199\t-", "bytes\t2\tt\t0\t4096"], [tp])
    assert offsets == {tp: TierOffsets(200, 199, None)}
    assert sizes == {(2, tp): 4096}


@pytest.mark.parametrize(
    "answer",
    [[], ["tier\tt\t1\t0\t-\t-"], ["tier\tt\t0\tx\t-\t-"], ["tier\tt\t0\t1\t2"]],
    ids=["nothing", "another-partition", "not-a-number", "too-few-fields"],
)
def test_a_tier_answer_that_leaves_a_partition_out_or_is_malformed_is_an_error(
    answer: list[str],
) -> None:
    with pytest.raises(GroupReaderError):
        parse_tiers(answer, [TopicPartition("t", 0)])
