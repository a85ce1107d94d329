"""Java truststores and keystores (JKS, PKCS12, PEM) as the PEM text librdkafka takes
inline (`ssl.ca.pem`, `ssl.certificate.pem`, `ssl.key.pem`).

JKS is read here (its format is small and its key protection is SHA-1 based; the PyPI
JKS readers pull in C extensions without wheels). PKCS12 and encrypted PEM keys go
through `cryptography`. A store's format is taken from its content, as Java 9+ does for
JKS and PKCS12 (keystore.type.compat), so a `.jks` that keytool wrote as PKCS12 works
whatever `ssl.*.type` says. Keys leave here unencrypted: they stay in memory, handed to
librdkafka, never written to a file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import struct
from collections.abc import Callable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_der_private_key,
    load_pem_private_key,
    pkcs12,
)

from kafka_retention.core.client_properties import ClientPropertyError
from kafka_retention.core.java_stores import InlineKey, KeyStore, TrustStore

JKS_MAGIC = 0xFEEDFEED
JCEKS_MAGIC = 0xCECECECE
# sun.security.provider.KeyProtector's algorithm (JKS private keys).
JKS_KEY_PROTECTOR = "1.3.6.1.4.1.42.2.17.1.1"
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)

Read = Callable[[str, str], bytes]


def read_file(prop: str, location: str) -> bytes:
    """A store named by a file path, as the Java tools take it (the CLI)."""
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise ClientPropertyError(prop, f"names {location}: {exc.strerror}") from None


class Stores:
    """Reads stores through `read(property, location)`: files for the CLI, keys of the
    clientConfigSecret in the operator and the Spark driver."""

    def __init__(self, read: Read) -> None:
        self._read = read

    def trusted_certificates(self, store: TrustStore) -> str:
        if store.certificates is not None:
            return _certificates_pem(_pem_blocks(store.certificates, "ssl.truststore.certificates"))
        assert store.location is not None
        prop = "ssl.truststore.location"
        data = self._read(prop, store.location)
        certs = _load(data, prop, "ssl.truststore.password", store.password).trusted
        if not certs:
            raise ClientPropertyError(prop, f"names {store.location}, which holds no certificate")
        return "".join(_cert_pem(der) for der in certs)

    def client_certificate(self, store: KeyStore) -> tuple[str, str]:
        if isinstance(store, InlineKey):
            blocks = _pem_blocks(store.certificate_chain, "ssl.keystore.certificate.chain")
            keys = _pem_blocks(store.key, "ssl.keystore.key")
            return _certificates_pem(blocks), _key_pem(keys, store.key_password, "ssl.keystore.key")
        prop = "ssl.keystore.location"
        data = self._read(prop, store.location)
        loaded = _load(data, prop, "ssl.keystore.password", store.password, store.key_password)
        if len(loaded.keys) != 1:
            raise ClientPropertyError(
                prop,
                f"names {store.location}, which holds {len(loaded.keys)} private keys; "
                "librdkafka takes exactly one",
            )
        key, chain = loaded.keys[0]
        return "".join(_cert_pem(der) for der in chain), key


class _Loaded:
    def __init__(self) -> None:
        self.trusted: list[bytes] = []  # DER certificates
        self.keys: list[tuple[str, list[bytes]]] = []  # (PKCS#8 PEM, DER chain)


def _load(
    data: bytes,
    prop: str,
    password_prop: str,
    password: str | None,
    key_password: str | None = None,
) -> _Loaded:
    if data[:4] in (JKS_MAGIC.to_bytes(4, "big"), JCEKS_MAGIC.to_bytes(4, "big")):
        return _jks(data, prop, password_prop, password, key_password)
    if data.lstrip()[:11] == b"-----BEGIN ":
        blocks = _pem_blocks(data.decode("ascii", "replace"), prop)
        loaded = _Loaded()
        certs = [der for label, der in blocks if label == "CERTIFICATE"]
        loaded.trusted = certs
        if any(label.endswith("PRIVATE KEY") for label, _ in blocks):
            loaded.keys = [(_key_pem(blocks, key_password, prop), certs)]
        return loaded
    return _pkcs12(data, prop, password_prop, password, key_password)


def _pkcs12(
    data: bytes, prop: str, password_prop: str, password: str | None, key_password: str | None
) -> _Loaded:
    # One password opens a PKCS12 file with OpenSSL; Java lets the key's differ, so
    # the key password is tried when the store's does not open it.
    tries: list[str | None] = [p for p in dict.fromkeys((password, key_password)) if p]
    tries = tries or [None]
    for attempt in tries:
        try:
            store = pkcs12.load_pkcs12(data, attempt.encode() if attempt is not None else None)
        except ValueError:
            continue
        loaded = _Loaded()
        certs = [c.certificate.public_bytes(Encoding.DER) for c in store.additional_certs]
        if store.cert is not None:
            certs.insert(0, store.cert.certificate.public_bytes(Encoding.DER))
        loaded.trusted = certs
        if store.key is not None:
            pem = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
            loaded.keys = [(pem.decode(), certs)]
        return loaded
    raise ClientPropertyError(
        password_prop if password is not None else prop,
        "does not open the store (wrong password, or not a JKS, PKCS12 or PEM file)"
        if password is not None
        else "names a store that is not JKS, PEM, or a PKCS12 file without a password",
    )


class _Bytes:
    """Big-endian reads from a Java DataOutputStream's bytes."""

    def __init__(self, data: bytes, prop: str) -> None:
        self.data, self.pos, self.prop = data, 0, prop

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ClientPropertyError(self.prop, "names a keystore that ends early (truncated?)")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u2(self) -> int:
        value: int = struct.unpack(">H", self.take(2))[0]
        return value

    def u4(self) -> int:
        value: int = struct.unpack(">I", self.take(4))[0]
        return value

    def utf(self) -> str:
        return self.take(self.u2()).decode("utf-8", "replace")


def _jks(
    data: bytes, prop: str, password_prop: str, password: str | None, key_password: str | None
) -> _Loaded:
    """JKS and JCEKS (sun.security.provider.JavaKeyStore): magic, version, entries, and
    a SHA-1 over password + "Mighty Aphrodite" + everything before it."""
    r = _Bytes(data, prop)
    jceks = r.u4() == JCEKS_MAGIC
    version = r.u4()
    if version not in (1, 2):
        raise ClientPropertyError(prop, f"names a keystore of unknown version {version}")
    loaded = _Loaded()
    protected: list[tuple[str, bytes, list[bytes]]] = []

    def cert() -> bytes:
        if version == 2:
            r.utf()  # the certificate type, X.509
        return r.take(r.u4())

    for _ in range(r.u4()):
        tag = r.u4()
        alias = r.utf()
        r.take(8)  # creation time
        if tag == 1:
            key = r.take(r.u4())
            chain = [cert() for _ in range(r.u4())]
            protected.append((alias, key, chain))
            if chain:
                loaded.trusted.append(chain[0])  # Java trusts a key entry's own certificate
        elif tag == 2:
            loaded.trusted.append(cert())
        else:
            raise ClientPropertyError(
                prop,
                f"names a keystore whose entry {alias!r} is a secret key; only "
                "certificates and private keys can be read",
            )
    if password is not None:
        secret = password.encode("utf-16-be")
        digest = hashlib.sha1(secret + b"Mighty Aphrodite" + data[: r.pos]).digest()  # noqa: S324 - JKS's format
        if not hmac.compare_digest(digest, r.take(20)):
            raise ClientPropertyError(
                password_prop, "does not open the keystore (wrong password, or the file changed)"
            )
    for alias, key, chain in protected:
        if jceks:
            raise ClientPropertyError(
                prop,
                f"names a JCEKS keystore whose entry {alias!r} is a private key, which "
                "cannot be read; convert it with keytool -importkeystore -deststoretype PKCS12",
            )
        if key_password is None:
            raise ClientPropertyError(
                "ssl.key.password", f"is needed to read the private key {alias!r}"
            )
        loaded.keys.append((_jks_key(key, key_password, alias), chain))
    return loaded


def _der(data: bytes, pos: int) -> tuple[int, bytes, int]:
    """One DER element at pos: (tag, content, position after it)."""
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        size = length & 0x7F
        length = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    return tag, data[pos : pos + length], pos + length


def _oid(content: bytes) -> str:
    first, rest = divmod(content[0], 40)
    parts, value = [first, rest], 0
    for byte in content[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _jks_key(encoded: bytes, password: str, alias: str) -> str:
    """A JKS private key: EncryptedPrivateKeyInfo whose data is salt(20) + key XOR a
    SHA-1 stream of password and salt + SHA-1(password + key), the key PKCS#8."""
    try:
        _, info, _ = _der(encoded, 0)
        _, algorithm, after = _der(info, 0)
        _, oid, _ = _der(algorithm, 0)
        _, protected, _ = _der(info, after)
    except IndexError:
        raise ClientPropertyError(
            "ssl.keystore.location", f"names a keystore whose key {alias!r} cannot be read"
        ) from None
    if _oid(oid) != JKS_KEY_PROTECTOR:
        raise ClientPropertyError(
            "ssl.keystore.location",
            f"names a keystore whose key {alias!r} is protected by {_oid(oid)}, not JKS's own",
        )
    salt, body, check = protected[:20], protected[20:-20], protected[-20:]
    secret = password.encode("utf-16-be")
    stream, digest = b"", salt
    while len(stream) < len(body):
        digest = hashlib.sha1(secret + digest).digest()  # noqa: S324 - JKS's format
        stream += digest
    plain = bytes(a ^ b for a, b in zip(body, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(secret + plain).digest(), check):  # noqa: S324
        raise ClientPropertyError(
            "ssl.key.password", f"does not decrypt the private key {alias!r} (wrong password)"
        )
    key = load_der_private_key(plain, None)
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def _pem_blocks(text: str, prop: str) -> list[tuple[str, bytes]]:
    """PEM blocks as (label, DER). Whitespace inside a block is dropped: a properties
    file's continued lines join a PEM value into one line with spaces, which Java reads
    and OpenSSL would not."""
    blocks = []
    for match in _PEM.finditer(text):
        try:
            der = base64.b64decode("".join(match.group(2).split()), validate=True)
        except ValueError:
            raise ClientPropertyError(
                prop, f"holds a {match.group(1)} that is not base64"
            ) from None
        blocks.append((match.group(1), der))
    if not blocks:
        raise ClientPropertyError(prop, "holds no PEM block (-----BEGIN ...-----)")
    return blocks


def _pem(label: str, der: bytes) -> str:
    body = base64.b64encode(der).decode()
    lines = "".join(body[i : i + 64] + "\n" for i in range(0, len(body), 64))
    return f"-----BEGIN {label}-----\n{lines}-----END {label}-----\n"


def _cert_pem(der: bytes) -> str:
    return x509.load_der_x509_certificate(der).public_bytes(Encoding.PEM).decode()


def _certificates_pem(blocks: list[tuple[str, bytes]]) -> str:
    return "".join(_cert_pem(der) for label, der in blocks if label == "CERTIFICATE")


def _key_pem(blocks: list[tuple[str, bytes]], password: str | None, prop: str) -> str:
    keys = [(label, der) for label, der in blocks if label.endswith("PRIVATE KEY")]
    if len(keys) != 1:
        raise ClientPropertyError(prop, f"holds {len(keys)} private keys; librdkafka takes one")
    label, der = keys[0]
    pem = _pem(label, der)
    encrypted = label == "ENCRYPTED PRIVATE KEY"
    if encrypted and password is None:
        raise ClientPropertyError("ssl.key.password", f"is needed: {prop} is encrypted")
    try:
        key = load_pem_private_key(
            pem.encode(), password.encode() if encrypted and password else None
        )
    except (ValueError, TypeError) as exc:
        raise ClientPropertyError(
            "ssl.key.password" if encrypted else prop, f"does not give a private key: {exc}"
        ) from None
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
