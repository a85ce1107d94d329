"""spec.cluster.strimzi: the reference parses, and Strimzi's objects become a connection."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.purge import parse_spec
from kafka_retention.core.purge_ledger import purge_done
from kafka_retention.core.specs import SpecError, parse_cluster
from kafka_retention.core.strimzi import (
    ALLOWED_NAMESPACES,
    StrimziError,
    StrimziObjects,
    StrimziRef,
    connection,
)

CA = "-----BEGIN CERTIFICATE-----\nMIIcluster\n-----END CERTIFICATE-----\n"
USER_CRT = "-----BEGIN CERTIFICATE-----\nMIIuser\n-----END CERTIFICATE-----\n"
USER_KEY = "-----BEGIN PRIVATE KEY-----\nMIIkey\n-----END PRIVATE KEY-----\n"


def kafka(*listeners: dict[str, Any], published: list[str] | None = None) -> dict[str, Any]:
    """A Kafka resource as Strimzi writes it: listeners declared in spec.kafka, their
    addresses published in status once the cluster is Ready."""
    names = [str(item["name"]) for item in listeners] if published is None else published
    return {
        "apiVersion": "kafka.strimzi.io/v1",
        "kind": "Kafka",
        "metadata": {"name": "events", "namespace": "kafka"},
        "spec": {"kafka": {"listeners": list(listeners)}},
        "status": {
            "listeners": [
                {
                    "name": name,
                    "addresses": [{"host": "events-kafka-bootstrap.kafka.svc", "port": 9092}],
                    "bootstrapServers": f"events-kafka-bootstrap.kafka.svc:{9092 + i}",
                }
                for i, name in enumerate(names)
            ]
        },
    }


def listener(name: str, port: int, tls: bool, **fields: Any) -> dict[str, Any]:
    """An internal entry of spec.kafka.listeners."""
    return {"name": name, "port": port, "type": "internal", "tls": tls, **fields}


PLAIN = listener("plain", 9092, tls=False)
TLS = listener("tls", 9093, tls=True)
SCRAM = listener("scram", 9094, tls=True, authentication={"type": "scram-sha-512"})
MTLS = listener("mtls", 9095, tls=True, authentication={"type": "tls"})


def user(kind: str, secret: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"username": "retention" if kind != "tls" else "CN=retention"}
    if secret:
        status["secret"] = secret
    return {
        "kind": "KafkaUser",
        "metadata": {"name": "retention"},
        "spec": {"authentication": {"type": kind}},
        "status": status,
    }


def objects(
    the_kafka: dict[str, Any],
    the_user: dict[str, Any] | None = None,
    user_secret: dict[str, str] | None = None,
) -> StrimziObjects:
    return StrimziObjects(the_kafka, {"ca.crt": CA, "ca.p12": "binary"}, the_user, user_secret)


def test_a_plain_listener_needs_no_credentials() -> None:
    ref = StrimziRef("events", "kafka", "plain")
    bootstrap, config = connection(ref, objects(kafka(PLAIN, TLS)), "apps")
    assert bootstrap == "events-kafka-bootstrap.kafka.svc:9092"
    assert config == {"security.protocol": "PLAINTEXT"}


def test_a_tls_listener_trusts_the_cluster_ca() -> None:
    ref = StrimziRef("events", "kafka", "tls")
    bootstrap, config = connection(ref, objects(kafka(PLAIN, TLS)), "apps")
    assert bootstrap == "events-kafka-bootstrap.kafka.svc:9093"
    assert config == {"security.protocol": "SSL", "ssl.ca.pem": CA}


def test_a_scram_user_connects_with_its_status_username_and_secret_password() -> None:
    ref = StrimziRef("events", "kafka", "scram", "retention")
    _, config = connection(
        ref,
        objects(kafka(PLAIN, SCRAM), user("scram-sha-512"), {"password": "s3cret"}),
        "kafka",
    )
    assert config == {
        "security.protocol": "SASL_SSL",
        "ssl.ca.pem": CA,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "retention",
        "sasl.password": "s3cret",
    }


def test_scram_on_a_plaintext_listener_is_sasl_plaintext() -> None:
    listener = {**SCRAM, "tls": False}
    _, config = connection(
        StrimziRef("events", None, "scram", "retention"),
        objects(kafka(listener), user("scram-sha-512"), {"password": "pw"}),
        "kafka",
    )
    assert config["security.protocol"] == "SASL_PLAINTEXT"
    assert "ssl.ca.pem" not in config


def test_a_tls_user_presents_its_certificate_and_key() -> None:
    _, config = connection(
        StrimziRef("events", "kafka", "mtls", "retention"),
        objects(kafka(MTLS), user("tls"), {"user.crt": USER_CRT, "user.key": USER_KEY}),
        "kafka",
    )
    assert config == {
        "security.protocol": "SSL",
        "ssl.ca.pem": CA,
        "ssl.certificate.pem": USER_CRT,
        "ssl.key.pem": USER_KEY,
    }


def test_the_only_listener_is_used_when_none_is_named() -> None:
    bootstrap, _ = connection(StrimziRef("events"), objects(kafka(TLS)), "kafka")
    assert bootstrap == "events-kafka-bootstrap.kafka.svc:9092"


@pytest.mark.parametrize(
    ("ref", "found", "field", "words"),
    [
        (
            StrimziRef("events"),
            objects(kafka(PLAIN, TLS)),
            "spec.cluster.strimzi.listener",
            "has listeners plain, tls: name one",
        ),
        (
            StrimziRef("events", listener="external"),
            objects(kafka(PLAIN, TLS)),
            "spec.cluster.strimzi.listener",
            "no listener external",
        ),
        (
            StrimziRef("events", listener="plain"),
            objects(kafka(PLAIN, published=[])),
            "spec.cluster.strimzi",
            "is it Ready?",
        ),
        (
            StrimziRef("events", listener="scram"),
            objects(kafka(SCRAM)),
            "spec.cluster.strimzi.kafkaUser",
            "name the KafkaUser",
        ),
        (
            StrimziRef("events", listener="scram", kafka_user="retention"),
            objects(kafka(SCRAM), user("tls"), {"user.crt": USER_CRT, "user.key": USER_KEY}),
            "spec.cluster.strimzi.kafkaUser",
            "authenticates with tls, but listener scram asks for scram-sha-512",
        ),
        (
            StrimziRef("events", listener="scram", kafka_user="retention"),
            objects(kafka(SCRAM), user("scram-sha-512"), {}),
            "spec.cluster.strimzi.kafkaUser",
            "has no password",
        ),
        (
            StrimziRef("events", listener="plain", kafka_user="retention"),
            objects(kafka(PLAIN), user("scram-sha-512"), {"password": "pw"}),
            "spec.cluster.strimzi.kafkaUser",
            "asks for no authentication",
        ),
        (
            StrimziRef("events", listener="oauth", kafka_user="retention"),
            objects(
                kafka({**PLAIN, "name": "oauth", "authentication": {"type": "oauth"}}),
                user("scram-sha-512"),
                {"password": "pw"},
            ),
            "spec.cluster.strimzi.listener",
            "uses oauth authentication",
        ),
        (
            StrimziRef("events", listener="tls"),
            StrimziObjects(kafka(TLS), None, None, None),
            "spec.cluster.strimzi",
            "events-cluster-ca-cert has no ca.crt",
        ),
    ],
)
def test_a_reference_that_cannot_connect_names_the_field(
    ref: StrimziRef, found: StrimziObjects, field: str, words: str
) -> None:
    with pytest.raises(StrimziError) as caught:
        connection(ref, found, "kafka")
    assert caught.value.field == field
    assert words in str(caught.value)


def test_errors_never_carry_the_password() -> None:
    with pytest.raises(StrimziError) as caught:
        connection(
            StrimziRef("events", listener="plain", kafka_user="retention"),
            objects(kafka(PLAIN), user("scram-sha-512"), {"password": "hunter2"}),
            "kafka",
        )
    assert "hunter2" not in str(caught.value)


def test_the_spec_takes_a_reference_instead_of_bootstrap_servers() -> None:
    cluster = parse_cluster(
        {"cluster": {"strimzi": {"kafka": "events", "namespace": "kafka", "kafkaUser": "r"}}}
    )
    assert cluster.bootstrap_servers == ""
    assert cluster.strimzi == StrimziRef("events", "kafka", None, "r")


@pytest.mark.parametrize(
    ("cluster", "field"),
    [
        ({"bootstrapServers": "k:9092", "strimzi": {"kafka": "events"}}, "spec.cluster"),
        ({"strimzi": {"namespace": "kafka"}}, "spec.cluster.strimzi.kafka"),
        ({"strimzi": {"kafka": ""}}, "spec.cluster.strimzi.kafka"),
        ({"strimzi": {"kafka": "events", "listener": 9092}}, "spec.cluster.strimzi.listener"),
        (
            {"strimzi": {"kafka": "events", "kafkaUser": "r"}, "clientConfigSecret": "s"},
            "spec.cluster.clientConfigSecret",
        ),
        ({"strimzi": {"kafka": "events", "user": "r"}}, "spec.cluster.strimzi.user"),
        ({}, "spec.cluster.bootstrapServers"),
    ],
)
def test_a_wrong_cluster_is_refused_naming_the_field(cluster: dict[str, Any], field: str) -> None:
    spec = {"cluster": cluster, "partitions": [{"topic": "t", "partition": 0, "offset": 1}]}
    with pytest.raises(SpecError) as caught:
        parse_spec(spec)
    assert caught.value.field == field


def test_strimzi_broker_pods_are_found_by_strimzi_labels_when_no_selector_is_given() -> None:
    policy = parse_policy_spec(
        {
            "cluster": {
                "strimzi": {"kafka": "events", "namespace": "kafka"},
                "brokers": {"access": "exec"},
            },
            "orphanPartitions": {"enabled": True},
        }
    )
    assert policy.orphans is not None
    brokers = policy.orphans.brokers
    assert dict(brokers.match_labels) == {
        "strimzi.io/cluster": "events",
        "strimzi.io/broker-role": "true",
    }
    assert (brokers.namespace, brokers.container) == ("kafka", "kafka")


def test_without_strimzi_an_exec_broker_selector_is_still_required() -> None:
    with pytest.raises(SpecError) as caught:
        parse_policy_spec(
            {
                "cluster": {"bootstrapServers": "k:9092", "brokers": {"access": "exec"}},
                "orphanPartitions": {"enabled": True},
            }
        )
    assert caught.value.field == "spec.cluster.brokers.podSelector"


def test_one_strimzi_cluster_is_one_cluster_whatever_the_listener_or_namespace_spelling() -> None:
    """Overlap between policies and the purges a loss is blamed on compare clusters."""
    a = parse_cluster({"cluster": {"strimzi": {"kafka": "events", "listener": "plain"}}})
    b = parse_cluster(
        {"cluster": {"strimzi": {"kafka": "events", "namespace": "kafka", "listener": "tls"}}}
    )
    c = parse_cluster({"cluster": {"strimzi": {"kafka": "events"}}})
    assert a.identity("kafka") == b.identity("apps") == c.identity("kafka")
    assert c.identity("apps") != c.identity("kafka")


def test_a_purge_through_strimzi_is_remembered_by_its_cluster() -> None:
    body = {
        "metadata": {"namespace": "kafka", "name": "p"},
        "spec": {"cluster": {"strimzi": {"kafka": "events"}}},
        "status": {
            "results": [{"state": "Purged", "topic": "t", "partition": 0, "lowWatermark": 5}]
        },
    }
    done = purge_done(body)
    assert done is not None
    assert done.cluster.identity("kafka") == "strimzi:kafka/events"


def test_a_kafkauser_of_another_namespace_needs_its_consent() -> None:
    """The operator reads the user's Secret with its own rights: a purge in namespace
    apps may act as a KafkaUser of namespace kafka only when that user says so."""
    ref = StrimziRef("events", "kafka", "scram", "retention")
    found = objects(kafka(SCRAM), user("scram-sha-512"), {"password": "pw"})
    with pytest.raises(StrimziError) as caught:
        connection(ref, found, "apps")
    assert caught.value.field == "spec.cluster.strimzi.kafkaUser"
    assert "kafka-retention.io/allowed-namespaces" in str(caught.value)
    # The same reference from the user's own namespace needs nothing.
    assert connection(ref, found, "kafka")[1]["sasl.username"] == "retention"
    for allowed in ("apps", "billing, apps", "*"):
        consenting = user("scram-sha-512")
        consenting["metadata"]["annotations"] = {ALLOWED_NAMESPACES: allowed}
        granted = objects(kafka(SCRAM), consenting, {"password": "pw"})
        assert connection(ref, granted, "apps")[1]["sasl.password"] == "pw"
    refusing = user("scram-sha-512")
    refusing["metadata"]["annotations"] = {ALLOWED_NAMESPACES: "billing,apps-2"}
    with pytest.raises(StrimziError):
        connection(ref, objects(kafka(SCRAM), refusing, {"password": "pw"}), "apps")
