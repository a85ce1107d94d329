"""Java's truststore and keystore properties (`ssl.truststore.*`, `ssl.keystore.*`,
`ssl.key.password`) as client_config reads them: a file or inline PEM each, checked for
the combinations Java accepts. Reading the stores themselves is the adapters' (a
`StoreReader`: adapters/keystores.py), so this stays pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafka_retention.core.client_properties import STORE_TYPES, ClientPropertyError


@dataclass(frozen=True)
class TrustStore:
    """Java's truststore properties: a file (`location`) or inline PEM certificates."""

    type: str  # JKS, PKCS12 or PEM
    location: str | None = None
    certificates: str | None = None
    password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class KeyStoreFile:
    """ssl.keystore.location: a JKS, JCEKS, PKCS12 or PEM file and the passwords that
    open it and its key."""

    location: str
    # Secrets stay out of the repr (log lines, tracebacks).
    password: str | None = field(repr=False)
    key_password: str | None = field(repr=False)


@dataclass(frozen=True)
class InlineKey:
    """ssl.keystore.key and ssl.keystore.certificate.chain: a PEM key (encrypted with
    ssl.key.password, if one is given) and its chain, inline."""

    certificate_chain: str
    key: str = field(repr=False)
    key_password: str | None = field(repr=False)


# Java's keystore properties name one or the other, never both.
KeyStore = KeyStoreFile | InlineKey


class StoreReader(Protocol):
    def trusted_certificates(self, store: TrustStore) -> str:
        """The store's certificates as PEM (librdkafka's ssl.ca.pem)."""
        ...

    def client_certificate(self, store: KeyStore) -> tuple[str, str]:
        """The certificate chain and the unencrypted private key, both PEM."""
        ...


def _store_type(props: Mapping[str, str], name: str, default: str) -> str:
    kind = props.get(name, default).strip().upper() or default
    if kind not in STORE_TYPES:
        raise ClientPropertyError(name, f"is {kind}: JKS, PKCS12 or PEM can be read")
    return kind


def truststore(props: Mapping[str, str]) -> TrustStore | None:
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


def has_keystore(props: Mapping[str, str]) -> bool:
    return any(
        props.get(name, "").strip()
        for name in ("ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain")
    )


def keystore(props: Mapping[str, str]) -> KeyStore | None:
    if not has_keystore(props):
        return None
    location = props.get("ssl.keystore.location", "").strip() or None
    chain = props.get("ssl.keystore.certificate.chain", "").strip() or None
    key = props.get("ssl.keystore.key", "").strip() or None
    if location and (chain or key):
        raise ClientPropertyError(
            "ssl.keystore.key" if key else "ssl.keystore.certificate.chain",
            "and ssl.keystore.location are both set",
        )
    key_password = props.get("ssl.key.password") or None
    if location is None:
        if chain is None or key is None:
            missing = "ssl.keystore.key" if chain else "ssl.keystore.certificate.chain"
            present = "ssl.keystore.certificate.chain" if chain else "ssl.keystore.key"
            raise ClientPropertyError(present, f"needs {missing} too")
        if _store_type(props, "ssl.keystore.type", "PEM") != "PEM":
            raise ClientPropertyError("ssl.keystore.key", "needs ssl.keystore.type PEM")
        return InlineKey(chain, key, key_password)
    _store_type(props, "ssl.keystore.type", "JKS")  # refuses a type no reader knows
    password = props.get("ssl.keystore.password") or None
    # Java decrypts a key with the store's password when no key password is given.
    return KeyStoreFile(location, password, key_password or password)
