"""The ledger of erased digests, per cluster: what a restore or a mirror replay is checked
against once the RecordErasures themselves are gone.

An entry per (digest, erasure): the digest, the topics it was found in and erased from,
the erasure (namespace, name, uid), the receipt's SHA-256 and signing key id, the Kafka
cluster id the receipt names and the completion time. Entries are kept per cluster *name*
(the KafkaClusterBinding the erasure named, or the inline cluster's identity), not per
cluster id: a restore into a new cluster (a new id) is still found under its name.

A cluster's entries are kept per namespace of the erasure (each namespace has shards of
its own, so that one tenant filling its shards to MAX_SHARD_BYTES blocks only its own
erasures, and its erasures of a digest cannot push another namespace's entries of it out
of MAX_ERASURES_PER_DIGEST), and within a namespace sharded by the digest's first
SHARD_HEX hex characters (256 shards, made only when a digest falls in them).
Digests are SHA-256 values, so they spread evenly: at 100,000 digests of one namespace
a shard holds 391 entries on average and 447 at most (measured, tests/unit/test_ledger.py):
about 180 KB with short names and one topic, 373 KB with three 50-character topics and
the longest namespace and name Kubernetes allows. MAX_SHARD_BYTES, below the API
server's 1 MiB ConfigMap limit and etcd's 1.5 MiB request limit, is where a merge is
refused (the ledger is then behind, and says so) rather than stored. Only digests,
topic names and object names are held: never a key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_retention.core.erasure import HEX
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.specs import ClusterRef

SHARD_HEX = 2  # 16**2 = 256 shards per cluster and namespace
# What one shard's JSON may hold: a ConfigMap's data is limited to 1 MiB, etcd's request
# to 1.5 MiB; the rest is the object's metadata.
MAX_SHARD_BYTES = 900_000
# Erasures kept per digest (the same key erased again, by later RecordErasures): the
# newest ones. The digest itself is never dropped.
MAX_ERASURES_PER_DIGEST = 16
# Topics listed per entry (an erasure selects at most 500); the count says the rest.
MAX_TOPICS_PER_ENTRY = 50
DATA_KEY = "entries.json"
# 2: a shard names its namespace (version 1 shards were shared by every namespace).
FORMAT_VERSION = 2


class LedgerError(ValueError):
    """A ledger shard that cannot be read (not written by this module) or a ledger that
    cannot take more; the message names shards and counts, never a key."""


class LedgerConflict(Exception):
    """A shard changed (or was created) since it was read: read it again and merge."""


class LedgerBehind(WriteRefused):
    """The ledger could not be brought up to date with a receipt (conflicts past the
    retries, the API server refusing, a shard full): the erasure that signed it is not
    finished (condition ReceiptSigned False, LedgerBehind), and the write is tried again
    by a later run. A WriteRefused, for the status and reason the API server gave."""


@dataclass(frozen=True, order=True)
class LedgerEntry:
    digest: str
    uid: str  # the RecordErasure's metadata.uid
    namespace: str
    name: str
    # Where the digest was found and erased; found nowhere, the topics the erasure scanned.
    topics: tuple[str, ...]
    receipt_sha256: str
    key_id: str
    cluster_id: str  # the Kafka cluster id the receipt names
    completed_at: str  # RFC 3339, the receipt's completedAt
    more_topics: int = 0  # topics beyond MAX_TOPICS_PER_ENTRY

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "digest": self.digest,
            "topics": list(self.topics),
            "erasure": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
            "receipt": {"sha256": self.receipt_sha256, "keyId": self.key_id},
            "clusterId": self.cluster_id,
            "completedAt": self.completed_at,
        }
        if self.more_topics:
            doc["moreTopics"] = self.more_topics
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str) -> LedgerEntry:
        try:
            erasure, receipt = doc["erasure"], doc["receipt"]
            topics = doc["topics"]
            entry = cls(
                digest=_str(doc["digest"]),
                uid=_str(erasure["uid"]),
                namespace=_str(erasure["namespace"]),
                name=_str(erasure["name"]),
                topics=tuple(_str(t) for t in topics),
                receipt_sha256=_str(receipt["sha256"]),
                key_id=_str(receipt["keyId"]),
                cluster_id=_str(doc["clusterId"]),
                completed_at=_str(doc["completedAt"]),
                more_topics=int(doc.get("moreTopics", 0)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise LedgerError(f"{where}: not a ledger entry ({type(err).__name__})") from None
        if not is_digest(entry.digest):
            raise LedgerError(f"{where}: its digest is not 64 lowercase hex characters")
        return entry

    @property
    def key(self) -> tuple[str, str]:
        """What makes an entry one: a digest erased by one RecordErasure."""
        return (self.digest, self.uid)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(type(value).__name__)
    return value


def is_digest(value: str) -> bool:
    return len(value) == 64 and HEX.issuperset(value)


# What an inline cluster's ledger name starts with (cluster_name).
INLINE = "inline "


def cluster_name(cluster: ClusterRef, namespace: str) -> str:
    """The name a ledger is kept under: the KafkaClusterBinding's name, else (a cluster
    named inline, under open tenancy) `inline ` and the cluster's identity as the erasure
    gave it. The space: bootstrapServers `prod` must not share binding prod's ledger,
    and no binding name (a DNS subdomain) holds one."""
    if cluster.binding is not None:
        return cluster.binding
    return f"{INLINE}{cluster.identity(namespace)}"


def cluster_label(cluster: str) -> str:
    """A label value for a cluster name (a name may be longer than a label's 63
    characters, or hold characters a label cannot): its SHA-256, 16 hex characters."""
    return hashlib.sha256(cluster.encode()).hexdigest()[:16]


def namespace_label(namespace: str) -> str:
    """A label value (and name part) for an erasure's namespace: 12 hex characters of its
    SHA-256 (a namespace is up to 63 characters: with the cluster's 16 it would not fit
    a label, and a shard's name stays short). Two namespaces with the same 12 hex are
    told apart by the shard's JSON, which names the namespace: a reader refuses the
    other's shard rather than mixing them."""
    return hashlib.sha256(namespace.encode()).hexdigest()[:12]


def shard_of(digest: str) -> str:
    return digest[:SHARD_HEX]


def shards() -> list[str]:
    """Every shard name, in order."""
    width = SHARD_HEX
    return [f"{i:0{width}x}" for i in range(16**width)]


def entries_of(signed: Mapping[str, Any]) -> list[LedgerEntry]:
    """A signed receipt's entries: one per digest it vouches for, with the topics its
    evidence found that digest in. `signed` is what core.receipts.sign returns; only what
    it states is copied (the receipt is the authority; the ledger is its index)."""
    doc = signed["receipt"]
    resource = doc["resource"]
    found: dict[str, set[str]] = {}
    scanned: set[str] = set()
    for e in doc.get("evidence") or []:
        scanned.add(str(e.get("topic")))
        digest = e.get("digest")
        if isinstance(digest, str):
            found.setdefault(digest, set()).add(str(e.get("topic")))
    out = []
    for digest in doc["digests"]:
        # Found nowhere: the topics the receipt shows scanned, where it vouches the key
        # is not (a restore of one of them is what a check must look at).
        topics = sorted(found.get(digest) or scanned)
        out.append(
            LedgerEntry(
                digest=str(digest),
                uid=str(resource["uid"]),
                namespace=str(resource["namespace"]),
                name=str(resource["name"]),
                topics=tuple(topics[:MAX_TOPICS_PER_ENTRY]),
                more_topics=max(0, len(topics) - MAX_TOPICS_PER_ENTRY),
                receipt_sha256=str(signed["sha256"]),
                key_id=str(signed["signature"]["keyId"]),
                cluster_id=str(doc["clusterId"]),
                completed_at=str(doc["completedAt"]),
            )
        )
    return out


def by_shard(entries: Iterable[LedgerEntry]) -> dict[str, list[LedgerEntry]]:
    out: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        out.setdefault(shard_of(entry.digest), []).append(entry)
    return out


def merge(stored: Sequence[LedgerEntry], new: Iterable[LedgerEntry]) -> list[LedgerEntry]:
    """The shard after adding `new`: one entry per (digest, erasure), the later
    completion winning (an erasure signed again after a ledger write failed), at most
    MAX_ERASURES_PER_DIGEST per digest (the newest), sorted. Merging what is already there
    changes nothing, so a retried write is a no-op."""
    kept: dict[tuple[str, str], LedgerEntry] = {}
    for entry in [*stored, *new]:
        old = kept.get(entry.key)
        if old is None or (entry.completed_at, entry) >= (old.completed_at, old):
            kept[entry.key] = entry
    per_digest: dict[str, list[LedgerEntry]] = {}
    for entry in kept.values():
        per_digest.setdefault(entry.digest, []).append(entry)
    out: list[LedgerEntry] = []
    for digest in sorted(per_digest):
        newest = sorted(per_digest[digest], key=lambda e: (e.completed_at, e.uid), reverse=True)
        out.extend(sorted(newest[:MAX_ERASURES_PER_DIGEST], key=lambda e: (e.completed_at, e.uid)))
    return out


def _where(cluster: str, namespace: str, shard: str) -> str:
    return f"shard {shard} of namespace {namespace} in the ledger of cluster {cluster}"


def encode_shard(cluster: str, namespace: str, shard: str, entries: Sequence[LedgerEntry]) -> str:
    """A shard's JSON; refuses (LedgerError) one beyond MAX_SHARD_BYTES, or an entry in
    the wrong shard or of another namespace's erasure."""
    where = _where(cluster, namespace, shard)
    wrong = [e for e in entries if shard_of(e.digest) != shard or e.namespace != namespace]
    if wrong:
        raise LedgerError(f"{where}: {len(wrong)} entries of others")
    doc = {
        "version": FORMAT_VERSION,
        "cluster": cluster,
        "namespace": namespace,
        "shard": shard,
        "entries": [e.to_json() for e in entries],
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    size = len(text.encode())
    if size > MAX_SHARD_BYTES:
        raise LedgerError(
            f"{where} would hold {len(entries)} entries in {size} bytes, beyond {MAX_SHARD_BYTES}"
        )
    return text


def decode_shard(cluster: str, namespace: str, shard: str, text: str) -> list[LedgerEntry]:
    """A shard's entries, checked: its cluster, namespace and shard as asked, size
    bounded, every entry well formed, in this shard and of this namespace's erasures."""
    where = "ledger " + _where(cluster, namespace, shard)
    if len(text.encode()) > MAX_SHARD_BYTES:
        raise LedgerError(f"{where} is larger than {MAX_SHARD_BYTES} bytes")
    try:
        doc = json.loads(text)
    except ValueError:
        raise LedgerError(f"{where} is not JSON") from None
    if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION:
        raise LedgerError(f"{where} is not a version {FORMAT_VERSION} ledger shard")
    if (
        doc.get("cluster") != cluster
        or doc.get("namespace") != namespace
        or doc.get("shard") != shard
    ):
        raise LedgerError(f"{where} holds another cluster's, namespace's or shard's entries")
    raw = doc.get("entries")
    if not isinstance(raw, list):
        raise LedgerError(f"{where} has no entries list")
    entries = [LedgerEntry.from_json(e, f"{where} entry {i}") for i, e in enumerate(raw)]
    if any(shard_of(e.digest) != shard for e in entries):
        raise LedgerError(f"{where} holds a digest of another shard")
    if any(e.namespace != namespace for e in entries):
        raise LedgerError(f"{where} holds an entry of another namespace's erasure")
    return entries


@dataclass(frozen=True)
class StoredShard:
    """A shard as read: which one, its entries and the version a write must name
    (resourceVersion)."""

    namespace: str  # the erasures' namespace whose shard it is
    shard: str
    entries: tuple[LedgerEntry, ...]
    version: str
