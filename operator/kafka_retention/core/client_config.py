"""Client properties as Kafka's Java tools take them, turned into librdkafka's.

confluent-kafka (librdkafka) is the client here, while users of kafka-delete-records.sh
already have Java client properties. Both kinds are accepted, in a `--command-config`
file and in a `spec.cluster.clientConfigSecret`, and mixed freely:

- librdkafka's own names for those settings pass through;
- Java names with the same meaning in librdkafka pass too (`client.id`,
  `security.protocol`, `sasl.mechanism`, `metadata.max.age.ms`, ...), and a few are
  renamed (`request.timeout.ms` is librdkafka's `socket.timeout.ms`, `send.buffer.bytes`
  its `socket.send.buffer.bytes`);
- `sasl.jaas.config` with PlainLoginModule or ScramLoginModule gives `sasl.username` and
  `sasl.password`;
- truststores and keystores (`ssl.truststore.*`, `ssl.keystore.*`, `ssl.key.password`:
  JKS, PKCS12 or PEM, in a file or inline) become the inline PEM properties `ssl.ca.pem`,
  `ssl.certificate.pem` and `ssl.key.pem` (the key unencrypted, in memory only), so no pod
  needs the files. `ssl.keystore.location` is taken in Java's sense, whatever its format
  (librdkafka's own reads PKCS12 only, which this covers);
- an empty `ssl.endpoint.identification.algorithm` (Java's "off") is librdkafka's `none`.

Only the properties of ALLOWED_PROPERTIES are taken, whatever their source: those needed
to connect with PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, by PLAIN, SCRAM-SHA-256/512
or a client certificate, and a few harmless timeouts and buffer sizes. librdkafka has
many more, and some reach beyond the cluster: they read files (`ssl.ca.location`), load
code (`plugin.library.paths`, `ssl.engine.location`, `ssl.providers`), run commands
(`sasl.kerberos.kinit.cmd`) or send requests elsewhere (`sasl.oauthbearer.*`), all inside
the operator's pod, with its service-account token at hand. Anything else is refused
naming the property ("client property sasl.login.callback.handler.class has no
librdkafka equivalent", "client property ssl.providers is not accepted ..."): a setting
silently dropped would connect differently from what its author tested with the Java
tools. Names are matched exactly, as librdkafka matches them.

In a Secret, each key is one property, as before, and a key `client.properties` may hold
a Java properties file besides. `ssl.truststore.location` and `ssl.keystore.location`, in
either place, name another key of the same Secret by its base name, so that

    kubectl create secret generic kafka-client \\
        --from-file=client.properties --from-file=truststore.jks

works with `ssl.truststore.location=/etc/kafka/truststore.jks` in client.properties,
unchanged from the file the Java tools use. For the CLI, locations are file paths, as in
Java.

Pure: stores are read and converted through a `StoreReader` the adapters provide.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from jproperties import Properties  # type: ignore[import-untyped]

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
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
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
        "socket.timeout.ms",
        "socket.connection.setup.timeout.ms",
        "metadata.max.age.ms",
        "connections.max.idle.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "send.buffer.bytes",
        "receive.buffer.bytes",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
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
_INTEGERS = frozenset(
    {
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
    }
)
_INTEGER = re.compile(r"[0-9]{1,10}")


class ClientPropertyError(ValueError):
    """A client property this tool cannot honour; the message names it."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"client property {name} {problem}")
        self.name = name


@dataclass(frozen=True)
class TrustStore:
    """Java's truststore properties: a file (`location`) or inline PEM certificates."""

    type: str  # JKS, PKCS12 or PEM
    location: str | None = None
    certificates: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class KeyStore:
    """Java's keystore properties: a file (`location`) or an inline PEM key and chain."""

    type: str
    location: str | None = None
    certificate_chain: str | None = None
    key: str | None = None
    password: str | None = None
    key_password: str | None = None


class StoreReader(Protocol):
    def trusted_certificates(self, store: TrustStore) -> str:
        """The store's certificates as PEM (librdkafka's ssl.ca.pem)."""
        ...

    def client_certificate(self, store: KeyStore) -> tuple[str, str]:
        """The certificate chain and the unencrypted private key, both PEM."""
        ...


def parse_properties(data: bytes, where: str) -> dict[str, str]:
    """A Java .properties file, parsed by Java's rules: `=`, `:` or whitespace
    separators, `#`/`!` comments, escapes and continued lines."""
    props = Properties()
    try:
        props.load(io.BytesIO(data), "utf-8")
    except Exception as exc:  # jproperties raises its own parse errors
        raise ClientPropertyError(where, f"is not a properties file: {exc}") from None
    return {str(key): str(value.data) for key, value in props.items()}


def to_librdkafka(props: Mapping[str, str], stores: StoreReader) -> dict[str, str]:
    """librdkafka properties meaning what `props` (Java's names, librdkafka's, or both)
    mean; raises ClientPropertyError naming the first property it cannot map."""
    for name in sorted(props):
        if name not in ALLOWED_PROPERTIES:
            raise ClientPropertyError(name, _refusal(name))
    out = _Config()
    for name in sorted(props):
        value = props[name]
        if name in CONSUMED:
            continue  # read below, as a whole
        if name == "ssl.key.password" and _has_keystore(props):
            continue  # the keystore's key is decrypted with it
        if name in RENAMED:
            target, convert = RENAMED[name]
            out.put(target, _checked(target, convert(value), name), name)
        elif name in JAVA_DEFAULTS:
            if value.strip() not in JAVA_DEFAULTS[name]:
                allowed = ", ".join(sorted(JAVA_DEFAULTS[name]))
                raise ClientPropertyError(
                    name, f"has no librdkafka equivalent (accepted only as {allowed})"
                )
        elif name == "ssl.endpoint.identification.algorithm":
            out.put(name, _endpoint_identification(value), name)
        else:
            out.put(name, _checked(name, value, name), name)
    if "sasl.jaas.config" in props:
        for key, value in _sasl(props).items():
            out.put(key, value, "sasl.jaas.config")
    protocol = out.values.get("security.protocol", "")
    if protocol.startswith("SASL_") and not (
        {"sasl.mechanism", "sasl.mechanisms"} & out.values.keys()
    ):
        # librdkafka's default (and Java's) is GSSAPI, which runs kinit in the pod.
        raise ClientPropertyError(
            "security.protocol",
            f"is {protocol} without sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
        )
    trust = _truststore(props)
    if trust is not None:
        source = "ssl.truststore.location" if trust.location else "ssl.truststore.certificates"
        out.put("ssl.ca.pem", stores.trusted_certificates(trust), source)
    keys = _keystore(props)
    if keys is not None:
        chain, key = stores.client_certificate(keys)
        source = "ssl.keystore.location" if keys.location else "ssl.keystore.key"
        out.put("ssl.certificate.pem", chain, source)
        out.put("ssl.key.pem", key, source)
    return out.values


def refuse_local_resources(config: Mapping[str, str]) -> None:
    """Raise naming the first property of a converted, Secret-born config that
    to_librdkafka cannot have produced: the last look before it reaches librdkafka in
    the operator's (or a Spark driver's) pod, where a file path, library, engine or URL
    would act with the pod's service-account token at hand."""
    for name in sorted(config):
        if name not in REACHES_LIBRDKAFKA:
            raise ClientPropertyError(name, _refusal(name))


def _refusal(name: str) -> str:
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
            'see README, "Connecting to Kafka"'
        )
    return f"{shown}has no librdkafka equivalent"


def _checked(name: str, value: str, source: str) -> str:
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


def secret_properties(data: Mapping[str, bytes]) -> dict[str, str]:
    """The properties a clientConfigSecret holds: one per key, and those of the Java
    properties file in key `client.properties`. Keys that a store location names are
    files, not properties."""
    nested = (
        parse_properties(data[PROPERTIES_KEY], PROPERTIES_KEY) if PROPERTIES_KEY in data else {}
    )
    texts: dict[str, str] = {}
    binaries: set[str] = set()
    for key, raw in data.items():
        if key == PROPERTIES_KEY:
            continue
        try:
            texts[key] = raw.decode()
        except UnicodeDecodeError:
            binaries.add(key)
    files = {
        _basename(props[name]) for props in (texts, nested) for name in LOCATIONS if name in props
    }
    for key in sorted(binaries - files):
        raise ClientPropertyError(
            key,
            "is a binary key of the Secret that no ssl.truststore.location or "
            "ssl.keystore.location names",
        )
    merged = dict(nested)
    for key, value in texts.items():
        if key in files:
            continue
        if key in merged and merged[key] != value:
            raise ClientPropertyError(
                key, f"is set both as a key of the Secret and in {PROPERTIES_KEY}, differently"
            )
        merged[key] = value
    return merged


def secret_file(data: Mapping[str, bytes], prop: str, location: str) -> bytes:
    """The Secret key a store location names (by base name, so that a Java tool's path
    like /etc/kafka/truststore.jks works unchanged)."""
    key = _basename(location)
    if key not in data:
        raise ClientPropertyError(
            prop, f"names {key}, which is not a key of the Secret (add it with --from-file)"
        )
    return data[key]


class _Config:
    """librdkafka properties with the source of each, so that two settings of one
    property that disagree are refused naming both."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self._sources: dict[str, str] = {}

    def put(self, key: str, value: str, source: str) -> None:
        if key in self.values and self.values[key] != value:
            first = self._sources[key]
            what = key if first == key else f"{first} (as {key})"
            raise ClientPropertyError(source, f"disagrees with {what}")
        self.values[key] = value
        self._sources.setdefault(key, source)


def _basename(location: str) -> str:
    return PurePosixPath(location.strip()).name


def _endpoint_identification(value: str) -> str:
    algorithm = value.strip().lower()
    if algorithm in ("", "none"):
        return "none"
    if algorithm == "https":
        return "https"
    raise ClientPropertyError(
        "ssl.endpoint.identification.algorithm", f"is {value!r}: only https or empty (off)"
    )


def _store_type(props: Mapping[str, str], name: str, default: str) -> str:
    kind = props.get(name, default).strip().upper() or default
    if kind not in STORE_TYPES:
        raise ClientPropertyError(name, f"is {kind}: JKS, PKCS12 or PEM can be read")
    return kind


def _truststore(props: Mapping[str, str]) -> TrustStore | None:
    location = props.get("ssl.truststore.location", "").strip() or None
    certificates = props.get("ssl.truststore.certificates", "").strip() or None
    if location and certificates:
        raise ClientPropertyError(
            "ssl.truststore.certificates", "and ssl.truststore.location are both set"
        )
    if not location and not certificates:
        return None
    kind = _store_type(props, "ssl.truststore.type", "PEM" if certificates else "JKS")
    if certificates and kind != "PEM":
        raise ClientPropertyError("ssl.truststore.certificates", "needs ssl.truststore.type PEM")
    return TrustStore(kind, location, certificates, props.get("ssl.truststore.password") or None)


def _has_keystore(props: Mapping[str, str]) -> bool:
    return any(
        props.get(name, "").strip()
        for name in ("ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain")
    )


def _keystore(props: Mapping[str, str]) -> KeyStore | None:
    if not _has_keystore(props):
        return None
    location = props.get("ssl.keystore.location", "").strip() or None
    chain = props.get("ssl.keystore.certificate.chain", "").strip() or None
    key = props.get("ssl.keystore.key", "").strip() or None
    if location and (chain or key):
        raise ClientPropertyError(
            "ssl.keystore.key" if key else "ssl.keystore.certificate.chain",
            "and ssl.keystore.location are both set",
        )
    if not location and not (chain and key):
        missing = "ssl.keystore.key" if chain else "ssl.keystore.certificate.chain"
        present = "ssl.keystore.certificate.chain" if chain else "ssl.keystore.key"
        raise ClientPropertyError(present, f"needs {missing} too")
    kind = _store_type(props, "ssl.keystore.type", "JKS" if location else "PEM")
    if not location and kind != "PEM":
        raise ClientPropertyError("ssl.keystore.key", "needs ssl.keystore.type PEM")
    password = props.get("ssl.keystore.password") or None
    # Java decrypts a key with the store's password when no key password is given.
    key_password = props.get("ssl.key.password") or (password if location else None)
    return KeyStore(kind, location, chain, key, password, key_password)


def _sasl(props: Mapping[str, str]) -> dict[str, str]:
    module, options = parse_jaas(props["sasl.jaas.config"])
    mechanism = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "").strip()
    out: dict[str, str] = {}
    if module == PLAIN_MODULE:
        if not mechanism:
            out["sasl.mechanism"] = "PLAIN"  # the only mechanism this module serves
        elif mechanism != "PLAIN":
            raise ClientPropertyError(
                "sasl.mechanism", f"is {mechanism}; PlainLoginModule is PLAIN"
            )
    elif module == SCRAM_MODULE:
        if mechanism not in SCRAM_MECHANISMS:
            raise ClientPropertyError(
                "sasl.mechanism",
                f"is {mechanism or 'not set'}; ScramLoginModule needs SCRAM-SHA-256 or "
                "SCRAM-SHA-512",
            )
        if options.pop("tokenauth", "false").lower() == "true":
            raise ClientPropertyError(
                "sasl.jaas.config",
                "option tokenauth (delegation tokens) has no librdkafka equivalent",
            )
    else:
        hint = (
            "; OAUTHBEARER is not accepted: its token endpoints would be fetched from the "
            "operator's pod"
            if module.endswith("OAuthBearerLoginModule")
            else ""
        )
        raise ClientPropertyError(
            "sasl.jaas.config",
            f"login module {module} has no librdkafka equivalent (PlainLoginModule and "
            f"ScramLoginModule have){hint}",
        )
    for option in ("username", "password"):
        if option not in options:
            raise ClientPropertyError("sasl.jaas.config", f"lacks the option {option}")
        out[f"sasl.{option}"] = options.pop(option)
    if options:
        raise ClientPropertyError(
            "sasl.jaas.config", f"option {sorted(options)[0]} has no librdkafka equivalent"
        )
    return out


_JAAS_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[\w.$\-{}]+)|(?P<sym>[=;])""",
    re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """One JAAS login module entry, `Module flag key=value ...;`, read as Kafka's
    JaasConfig reads it (Java's StreamTokenizer: quoted values with backslash escapes,
    // and /* */ comments)."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _JAAS_TOKEN.match(text, pos)
        if match is None:
            # Never quote the text: it holds the password.
            raise ClientPropertyError("sasl.jaas.config", f"cannot be read at character {pos}")
        pos = match.end()
        if match.group("quoted") is not None:
            body = match.group("quoted")[1:-1]
            unescaped = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), body)
            tokens.append(("value", unescaped))
        elif match.group("word") is not None:
            tokens.append(("word", match.group("word")))
        elif match.group("sym") is not None:
            tokens.append((match.group("sym"), match.group("sym")))

    def fail(problem: str) -> ClientPropertyError:
        return ClientPropertyError("sasl.jaas.config", problem)

    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise fail("needs 'LoginModule flag options;'")
    module, flag = tokens[0][1], tokens[1][1]
    if flag not in ("required", "requisite", "sufficient", "optional"):
        raise fail("needs a flag after the module: required, requisite, sufficient or optional")
    options: dict[str, str] = {}
    rest = tokens[2:]
    while rest and rest[0][0] != ";":
        if len(rest) < 3 or rest[0][0] != "word" or rest[1][0] != "=" or rest[2][0] == ";":
            raise fail(f"has a malformed option (option {len(options) + 1}; expected key=value)")
        options[rest[0][1]] = rest[2][1]
        rest = rest[3:]
    if not rest:
        raise fail("does not end with ';'")
    if len(rest) > 1:
        raise fail("holds more than one login module; a client takes one")
    return module, options
