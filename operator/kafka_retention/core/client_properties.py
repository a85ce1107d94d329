"""Which client properties the operator takes, from a `--command-config` file or a
`spec.cluster.clientConfigSecret`, and what each value may be: the allowlist, checked
before anything reaches librdkafka (core/client_config.py translates what passes).

Only the properties of ALLOWED_PROPERTIES are taken: those needed to connect with
PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, by PLAIN, SCRAM-SHA-256/512 or a client
certificate, and a few harmless timeouts and buffer sizes; never one that names a file,
URL, library or command. Anything else is refused naming the property, never quoting a
value (it may be a secret).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

# The Secret key holding a Java properties file.
PROPERTIES_KEY = "client.properties"

# librdkafka's global and topic properties settable as strings (its CONFIGURATION list
# less callbacks and pointers), from the library confluent-kafka ships; a unit test checks
# it against the installed library. Only to tell, when a property is refused, whether it
# is librdkafka's (and refused on purpose) or nobody's: most of these are not accepted.
_LIBRDKAFKA_NAMES = """
    acks allow.auto.create.topics api.version.fallback.ms api.version.request
    api.version.request.timeout.ms auto.commit.enable auto.commit.interval.ms
    auto.offset.reset batch.num.messages batch.size bootstrap.servers broker.address.family
    broker.address.ttl broker.version.fallback builtin.features check.crcs client.dns.lookup
    client.id client.rack compression.codec compression.level compression.type
    connections.max.idle.ms consume.callback.max.messages coordinator.query.interval.ms
    debug delivery.report.only.error delivery.timeout.ms enable.auto.commit
    enable.auto.offset.store enable.gapless.guarantee enable.idempotence
    enable.metrics.push enable.partition.eof enable.random.seed
    enable.sasl.oauthbearer.unsecure.jwt enable.ssl.certificate.verification
    enabled_events fetch.error.backoff.ms fetch.max.bytes fetch.message.max.bytes
    fetch.min.bytes fetch.queue.backoff.ms fetch.wait.max.ms group.id group.instance.id
    group.protocol group.protocol.type group.remote.assignor heartbeat.interval.ms
    https.ca.location https.ca.pem internal.termination.signal isolation.level linger.ms
    log.connection.close log.queue log.thread.name log_level max.in.flight
    max.in.flight.requests.per.connection max.partition.fetch.bytes max.poll.interval.ms
    max.poll.records message.copy.max.bytes message.max.bytes message.send.max.retries
    message.timeout.ms metadata.broker.list metadata.max.age.ms
    metadata.recovery.rebootstrap.trigger.ms metadata.recovery.strategy offset.store.method
    offset.store.path offset.store.sync.interval.ms partition.assignment.strategy
    partitioner plugin.library.paths produce.offset.report
    queue.buffering.backpressure.threshold queue.buffering.max.kbytes
    queue.buffering.max.messages queue.buffering.max.ms queued.max.messages.kbytes
    queued.min.messages queuing.strategy receive.message.max.bytes
    reconnect.backoff.jitter.ms reconnect.backoff.max.ms reconnect.backoff.ms
    request.required.acks request.timeout.ms retries retry.backoff.max.ms retry.backoff.ms
    sasl.kerberos.keytab sasl.kerberos.kinit.cmd sasl.kerberos.min.time.before.relogin
    sasl.kerberos.principal sasl.kerberos.service.name sasl.mechanism sasl.mechanisms
    sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include sasl.oauthbearer.assertion.claim.nbf.seconds
    sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.file
    sasl.oauthbearer.assertion.jwt.template.file sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.private.key.passphrase
    sasl.oauthbearer.assertion.private.key.pem sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.client.id
    sasl.oauthbearer.client.secret sasl.oauthbearer.config sasl.oauthbearer.extensions
    sasl.oauthbearer.grant.type sasl.oauthbearer.metadata.authentication.type
    sasl.oauthbearer.method sasl.oauthbearer.scope sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.password sasl.username security.protocol
    session.timeout.ms share.acknowledgement.mode socket.blocking.max.ms
    socket.connection.setup.timeout.ms socket.keepalive.enable socket.max.fails
    socket.nagle.disable socket.receive.buffer.bytes socket.send.buffer.bytes
    socket.timeout.ms ssl.ca.certificate.stores ssl.ca.location ssl.ca.pem
    ssl.certificate.location ssl.certificate.pem ssl.cipher.suites ssl.crl.location
    ssl.curves.list ssl.endpoint.identification.algorithm ssl.engine.id ssl.engine.location
    ssl.key.location ssl.key.password ssl.key.pem ssl.keystore.location
    ssl.keystore.password ssl.providers ssl.sigalgs.list statistics.interval.ms
    sticky.partitioning.linger.ms topic.blacklist topic.metadata.propagation.max.ms
    topic.metadata.refresh.fast.cnt topic.metadata.refresh.fast.interval.ms
    topic.metadata.refresh.interval.ms topic.metadata.refresh.sparse transaction.timeout.ms
    transactional.id
"""
LIBRDKAFKA_PROPERTIES = frozenset(_LIBRDKAFKA_NAMES.split())

# Java's trust and key store properties.
TRUSTSTORE = (
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "ssl.truststore.certificates",
)
KEYSTORE = (
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
)
# Connection tuning whose value is an integer, under the same name in Java and librdkafka
# (Java's request.timeout.ms and *.buffer.bytes are renamed, see RENAMED).
TUNING_INTEGERS = (
    "socket.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "metadata.max.age.ms",
    "connections.max.idle.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
)

# Every client property accepted, in Java's names or librdkafka's, from a Secret or a
# --command-config file alike. Nothing here names a file, URL, library, engine, provider
# or command that librdkafka would use: the Java `*.location` properties are read by this
# module (a Secret's key, or the CLI user's own file) and reach librdkafka as inline PEM.
ALLOWED_PROPERTIES = frozenset(
    {
        # How to connect: the protocol and the SASL mechanism (both Java's and
        # librdkafka's names; `sasl.mechanisms` is librdkafka's alias). Their values are
        # checked too: PLAINTEXT/SSL/SASL_*, and PLAIN or SCRAM only (GSSAPI runs kinit,
        # OAUTHBEARER fetches tokens from URLs).
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        # SASL PLAIN/SCRAM credentials: Java's JAAS line (read here, never passed on) or
        # librdkafka's username and password.
        "sasl.jaas.config",
        "sasl.username",
        "sasl.password",
        # Java's trust and key stores, read here (from a key of the Secret that the
        # location names by base name, or the CLI user's own file) and handed to
        # librdkafka as ssl.ca.pem, ssl.certificate.pem and ssl.key.pem.
        *TRUSTSTORE,
        *KEYSTORE,
        # librdkafka's inline PEM forms of the same (never its *.location file paths), and
        # the password of an encrypted key, in both names' sense.
        "ssl.ca.pem",
        "ssl.certificate.pem",
        "ssl.key.pem",
        "ssl.key.password",
        # Whether and how the brokers' certificates are verified: only the tenant's own
        # connection is weakened by turning it off.
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
        # Java TLS settings that restate what librdkafka does anyway, accepted only at
        # those values (JAVA_DEFAULTS) and not passed on: Java users' files carry them.
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        # Harmless tuning of the connection to the cluster: a name the brokers log and
        # quota by, timeouts, back-offs and socket buffers (integers; Java's
        # request.timeout.ms and *.buffer.bytes are renamed, see RENAMED).
        "client.id",
        "request.timeout.ms",
        "send.buffer.bytes",
        "receive.buffer.bytes",
        *TUNING_INTEGERS,
        "socket.keepalive.enable",
    }
)

# Refused properties that an accepted one replaces: the refusal names it.
_INSTEAD: Mapping[str, str] = {
    "ssl.ca.location": "ssl.truststore.location (with ssl.truststore.type=PEM) or ssl.ca.pem",
    "ssl.certificate.location": "ssl.keystore.location or ssl.certificate.pem",
    "ssl.key.location": "ssl.keystore.location or ssl.key.pem",
    "bootstrap.servers": "spec.cluster.bootstrapServers or --bootstrap-server",
    "metadata.broker.list": "spec.cluster.bootstrapServers or --bootstrap-server",
}


def _socket_buffer(value: str) -> str:
    # Java's -1 is "the OS default", librdkafka's 0.
    return "0" if value.strip() == "-1" else value


# Java names librdkafka spells differently (or means differently under the same name:
# its request.timeout.ms is the producer's ack timeout; Java's is every request's).
RENAMED: Mapping[str, tuple[str, Callable[[str], str]]] = {
    "request.timeout.ms": ("socket.timeout.ms", str.strip),
    "send.buffer.bytes": ("socket.send.buffer.bytes", _socket_buffer),
    "receive.buffer.bytes": ("socket.receive.buffer.bytes", _socket_buffer),
}

# Java settings that only restate what librdkafka does anyway, accepted at these values.
JAVA_DEFAULTS: Mapping[str, frozenset[str]] = {
    "ssl.protocol": frozenset({"TLS", "TLSv1.2", "TLSv1.3"}),
    "ssl.enabled.protocols": frozenset({"TLSv1.2,TLSv1.3", "TLSv1.3,TLSv1.2"}),
    "ssl.keymanager.algorithm": frozenset({"SunX509"}),
    "ssl.trustmanager.algorithm": frozenset({"PKIX"}),
}

CONSUMED = frozenset({*TRUSTSTORE, *KEYSTORE, "sasl.jaas.config"})
LOCATIONS = ("ssl.truststore.location", "ssl.keystore.location")
STORE_TYPES = frozenset({"JKS", "PKCS12", "PEM"})

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SCRAM_MECHANISMS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})
SASL_MECHANISMS = frozenset({"PLAIN", *SCRAM_MECHANISMS})
SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})

# What to_librdkafka can hand to librdkafka: the accepted properties less those read here
# (stores, JAAS), renamed or dropped (Java's defaults), plus the renamed ones' targets.
REACHES_LIBRDKAFKA = frozenset(
    (ALLOWED_PROPERTIES - CONSUMED - RENAMED.keys() - JAVA_DEFAULTS.keys())
    | {target for target, _ in RENAMED.values()}
)
_BOOLEANS = frozenset({"enable.ssl.certificate.verification", "socket.keepalive.enable"})
_INTEGERS = frozenset(TUNING_INTEGERS)
_INTEGER = re.compile(r"[0-9]{1,10}")


class ClientPropertyError(ValueError):
    """A client property this tool cannot honour; the message names it."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"client property {name} {problem}")
        self.name = name


def refuse_local_resources(config: Mapping[str, str]) -> None:
    """Raise naming the first property of a converted, Secret-born config that
    to_librdkafka cannot have produced: the last look before it reaches librdkafka in
    the operator's (or a Spark driver's) pod, where a file path, library, engine or URL
    would act with the pod's service-account token at hand."""
    for name in sorted(config):
        if name not in REACHES_LIBRDKAFKA:
            raise ClientPropertyError(name, refusal(name))


def refusal(name: str) -> str:
    """Why a property outside ALLOWED_PROPERTIES is refused (its name only: never a value)."""
    spelled = name.strip().lower()
    odd = not name or name != name.strip() or not name.isprintable()
    shown = f"(spelled {name!r}) " if odd else ""
    if spelled != name and spelled in ALLOWED_PROPERTIES:
        return f"{shown}is not accepted: names are matched exactly, as in {spelled}"
    if spelled in _INSTEAD:
        return f"{shown}is not accepted: use {_INSTEAD[spelled]}"
    if spelled in LIBRDKAFKA_PROPERTIES:
        return (
            f"{shown}is not accepted: only properties needed to connect to Kafka are "
            "(security.protocol, PLAIN or SCRAM credentials, trust and key stores or inline "
            "PEM, a few timeouts), and none that names a file, URL, library or command; "
            "see docs/connecting.md"
        )
    return f"{shown}has no librdkafka equivalent"


def checked(name: str, value: str, source: str) -> str:
    """The value librdkafka gets for accepted property `name`; raises naming `source`
    unless it is one this module accepts (never quoting it: it may be a secret)."""
    text = value.strip()
    if name == "security.protocol":
        if text.upper() not in SECURITY_PROTOCOLS:
            raise ClientPropertyError(source, "is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
        return text.upper()
    if name in ("sasl.mechanism", "sasl.mechanisms"):
        if text not in SASL_MECHANISMS:
            raise ClientPropertyError(source, "is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
        return text
    if name in _BOOLEANS:
        if text.lower() not in ("true", "false"):
            raise ClientPropertyError(source, "is not true or false")
        return text.lower()
    if name in _INTEGERS:
        if not _INTEGER.fullmatch(text):
            raise ClientPropertyError(source, "is not a whole number")
        return text
    return value
