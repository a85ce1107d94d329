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

Pure: stores are read and converted through a `StoreReader` the adapters provide
(java_stores.py holds what the store properties say).
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from jproperties import Properties  # type: ignore[import-untyped]

from kafka_retention.core import java_stores
from kafka_retention.core.client_properties import (
    ALLOWED_PROPERTIES,
    CONSUMED,
    JAVA_DEFAULTS,
    LOCATIONS,
    PLAIN_MODULE,
    PROPERTIES_KEY,
    RENAMED,
    SCRAM_MECHANISMS,
    SCRAM_MODULE,
    ClientPropertyError,
    checked,
    refusal,
)


def parse_properties(data: bytes, where: str) -> dict[str, str]:
    """A Java .properties file, parsed by Java's rules: `=`, `:` or whitespace
    separators, `#`/`!` comments, escapes and continued lines."""
    props = Properties()
    try:
        props.load(io.BytesIO(data), "utf-8")
    except Exception as exc:  # jproperties raises its own parse errors
        raise ClientPropertyError(where, f"is not a properties file: {exc}") from None
    return {str(key): str(value.data) for key, value in props.items()}


def to_librdkafka(props: Mapping[str, str], stores: java_stores.StoreReader) -> dict[str, str]:
    """librdkafka properties meaning what `props` (Java's names, librdkafka's, or both)
    mean; raises ClientPropertyError naming the first property it cannot map."""
    for name in sorted(props):
        if name not in ALLOWED_PROPERTIES:
            raise ClientPropertyError(name, refusal(name))
    out = _Config()
    for name in sorted(props):
        value = props[name]
        if name in CONSUMED:
            continue  # read below, as a whole
        if name == "ssl.key.password" and java_stores.has_keystore(props):
            continue  # the keystore's key is decrypted with it
        if name in RENAMED:
            target, convert = RENAMED[name]
            out.put(target, checked(target, convert(value), name), name)
        elif name in JAVA_DEFAULTS:
            if value.strip() not in JAVA_DEFAULTS[name]:
                allowed = ", ".join(sorted(JAVA_DEFAULTS[name]))
                raise ClientPropertyError(
                    name, f"has no librdkafka equivalent (accepted only as {allowed})"
                )
        elif name == "ssl.endpoint.identification.algorithm":
            out.put(name, _endpoint_identification(value), name)
        else:
            out.put(name, checked(name, value, name), name)
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
    trust = java_stores.truststore(props)
    if trust is not None:
        source = "ssl.truststore.location" if trust.location else "ssl.truststore.certificates"
        out.put("ssl.ca.pem", stores.trusted_certificates(trust), source)
    keys = java_stores.keystore(props)
    if keys is not None:
        chain, key = stores.client_certificate(keys)
        source = (
            "ssl.keystore.location"
            if isinstance(keys, java_stores.KeyStoreFile)
            else "ssl.keystore.key"
        )
        out.put("ssl.certificate.pem", chain, source)
        out.put("ssl.key.pem", key, source)
    return out.values


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
