"""The operator's librdkafka client properties as Kafka's Java client takes them: for
Spark's Kafka source (spark-jobs' kafka_source) and the group reader (adapters/
group_reader), both of which run Kafka's Java client."""

from __future__ import annotations

from collections.abc import Mapping

# librdkafka properties that reach the Java client unchanged (same name, same meaning).
_SAME = ("security.protocol", "client.id", "ssl.key.password", "isolation.level")

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class Unmappable(ValueError):
    """A librdkafka property with no equivalent in Kafka's Java client here."""


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _pkcs8(key_pem: str, password: str | None) -> str:
    """Kafka's Java PEM keystore reads PKCS#8 keys only; Strimzi and openssl often write
    PKCS#1 ("BEGIN RSA PRIVATE KEY") or SEC1 ("BEGIN EC PRIVATE KEY")."""
    if "BEGIN PRIVATE KEY" in key_pem or "BEGIN ENCRYPTED PRIVATE KEY" in key_pem:
        return key_pem
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(
        key_pem.encode(), password.encode() if password else None
    )
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption(),
    ).decode()


def java_properties(bootstrap_servers: str, client_config: Mapping[str, str]) -> dict[str, str]:
    """The Java client's properties for a connection given as librdkafka properties (what
    the operator resolves from spec.cluster). Raises Unmappable naming the first property
    with no Java equivalent."""
    rd = dict(client_config)
    out = {"bootstrap.servers": bootstrap_servers}
    for key in _SAME:
        if key in rd:
            out[key] = rd.pop(key)
    mechanism = rd.pop("sasl.mechanism", None) or rd.pop("sasl.mechanisms", None)
    user, password = rd.pop("sasl.username", None), rd.pop("sasl.password", None)
    if mechanism is not None:
        out["sasl.mechanism"] = mechanism
    if (user is None) != (password is None):
        raise Unmappable("sasl.username without sasl.password, or the reverse")
    if user is not None and password is not None:
        module = _LOGIN_MODULES.get((mechanism or "PLAIN").upper())
        if module is None:
            raise Unmappable(f"sasl.mechanism {mechanism}")
        out["sasl.jaas.config"] = (
            f"{module} required username={_jaas_quote(user)} password={_jaas_quote(password)};"
        )
    if "ssl.ca.pem" in rd:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.certificates"] = rd.pop("ssl.ca.pem")
    if "ssl.certificate.pem" in rd or "ssl.key.pem" in rd:
        if "ssl.certificate.pem" not in rd or "ssl.key.pem" not in rd:
            raise Unmappable("ssl.certificate.pem without ssl.key.pem, or the reverse")
        out["ssl.keystore.type"] = "PEM"
        out["ssl.keystore.certificate.chain"] = rd.pop("ssl.certificate.pem")
        out["ssl.keystore.key"] = _pkcs8(rd.pop("ssl.key.pem"), out.get("ssl.key.password"))
    algorithm = rd.pop("ssl.endpoint.identification.algorithm", None)
    if algorithm is not None:
        out["ssl.endpoint.identification.algorithm"] = (
            "" if algorithm.lower() == "none" else algorithm
        )
    timeout = rd.pop("socket.timeout.ms", None)
    if timeout is not None:
        out["request.timeout.ms"] = timeout
    if rd:
        raise Unmappable(sorted(rd)[0])
    return out
