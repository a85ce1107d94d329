"""TEMPORARY stand-ins for packages A and B of RecordErasure, built in parallel: the
integrator deletes this module at the merge and points the imports of services/erasure
at the real ones (core.erasure.parse_erasure_spec; core.receipts; core.erasure_deadlines).
Each keeps the plan's signature (/work/briefs/erasure-plan.md §3) and is no more lenient
than the real one is meant to be; none of them ever quotes a key field's value."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from kafka_retention.core.conditions import Condition, Reason
from kafka_retention.core.erasure import (
    DEFAULT_DEADLINE_MS,
    MAX_KEYS,
    ErasureKey,
    ErasureRequest,
    key_digest,
)
from kafka_retention.core.erasure_states import TopicKind
from kafka_retention.core.specs import SpecError, duration, flag, names, obj, parse_cluster

_HEX = frozenset("0123456789abcdef")


# --- core.erasure.parse_erasure_spec (package A) -------------------------------------


def parse_erasure_spec(spec: Mapping[str, Any]) -> ErasureRequest:
    spec = obj(spec, "spec")
    cluster = parse_cluster(spec)
    topics = obj(spec.get("topics") or {}, "spec.topics")
    topic_names = names(topics.get("names") or [], "spec.topics.names")
    for i, topic in enumerate(topic_names):
        if topic.startswith("__"):
            raise SpecError(f"spec.topics.names[{i}]", "is an internal topic")
    pattern = topics.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise SpecError("spec.topics.pattern", "must be a string")
    if not topic_names and not pattern:
        raise SpecError("spec.topics", "needs names or a pattern")
    raw_keys = spec.get("keys")
    if not isinstance(raw_keys, list) or not raw_keys or len(raw_keys) > MAX_KEYS:
        raise SpecError("spec.keys", f"needs 1 to {MAX_KEYS} keys")
    keys: dict[str, ErasureKey] = {}
    for i, raw in enumerate(raw_keys):
        key = _key(raw, f"spec.keys[{i}]")
        keys.setdefault(key.digest, key)
    on_delete = spec.get("onDeleteTopics", "report")
    if on_delete not in ("report", "cut"):
        raise SpecError("spec.onDeleteTopics", "must be report or cut")
    accept = flag(spec.get("acceptCollateral"), "spec.acceptCollateral", False)
    dry_run = flag(spec.get("dryRun"), "spec.dryRun", False)
    if on_delete == "cut" and not accept and not dry_run:
        raise SpecError(
            "spec.acceptCollateral",
            "cut removes other keys' records: run with dryRun to see the collateral, then "
            "set acceptCollateral: true",
        )
    deadline = spec.get("deadline")
    return ErasureRequest(
        bootstrap_servers=cluster.bootstrap_servers,
        client_config_secret=cluster.client_config_secret,
        names=topic_names,
        pattern=pattern,
        keys=tuple(keys.values()),
        on_delete_topics=on_delete,
        accept_collateral=accept,
        protect_groups=names(spec.get("protectGroups") or [], "spec.protectGroups"),
        deadline_ms=DEFAULT_DEADLINE_MS
        if deadline is None
        else duration(deadline, "spec.deadline"),
        dry_run=dry_run,
        strimzi=cluster.strimzi,
        binding=cluster.binding,
    )


def _key(raw: Any, path: str) -> ErasureKey:
    if not isinstance(raw, Mapping):
        raise SpecError(path, "must be an object")
    given = [form for form in ("sha256", "string", "base64") if form in raw]
    if len(given) != 1:
        raise SpecError(path, "needs exactly one of sha256, string or base64")
    value = raw[given[0]]
    if not isinstance(value, str):
        raise SpecError(f"{path}.{given[0]}", "must be a string")
    if given[0] == "sha256":
        digest = value.lower()
        if len(digest) != 64:
            raise SpecError(
                f"{path}.sha256",
                f"is not 64 hexadecimal characters (it has {len(digest)} characters)",
            )
        if not set(digest) <= _HEX:
            raise SpecError(
                f"{path}.sha256", "is not 64 hexadecimal characters (a character is not hex)"
            )
        return ErasureKey(digest, "sha256")
    if given[0] == "string":
        data = value.encode()
        return ErasureKey(key_digest(data), "string", data)
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SpecError(f"{path}.base64", "is not valid base64") from None
    return ErasureKey(key_digest(data), "base64", data)


# --- core.receipts (package A) --------------------------------------------------------


def canonical_json(doc: Mapping[str, Any]) -> bytes:
    def check(value: Any) -> None:
        if isinstance(value, float):
            raise ValueError("a receipt holds no floats")
        if isinstance(value, Mapping):
            for v in value.values():
                check(v)
        elif isinstance(value, list | tuple):
            for v in value:
                check(v)

    check(doc)
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def receipt(
    erasure: str,
    namespace: str,
    uid: str,
    cluster_id: str,
    evidence: Sequence[Mapping[str, Any]],
    completed_at: str,
    *,
    digests: Iterable[str] | None = None,
    phases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    entries = [dict(e) for e in evidence]
    listed = {str(e["digest"]) for e in entries if "digest" in e}
    doc = {
        "kind": "RecordErasureReceipt",
        "version": 1,
        "resource": {"kind": "RecordErasure", "namespace": namespace, "name": erasure, "uid": uid},
        "clusterId": cluster_id,
        "digests": sorted(listed if digests is None else set(digests)),
        "evidence": sorted(
            entries,
            key=lambda e: (str(e.get("topic")), int(e.get("partition", -1)), str(e.get("digest"))),
        ),
        "phases": dict(phases or {}),
        "completedAt": completed_at,
    }
    canonical_json(doc)
    return doc


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(doc: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    body = canonical_json(doc)
    public = key.public_key()
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {
        "receipt": dict(doc),
        "signature": {
            "algorithm": "Ed25519",
            "keyId": key_id(public),
            "publicKey": base64.b64encode(raw).decode(),
            "value": base64.b64encode(key.sign(body)).decode(),
        },
        "sha256": hashlib.sha256(body).hexdigest(),
    }


def verify(signed: Mapping[str, Any], trusted: Ed25519PublicKey | None = None) -> str | None:
    if (signed.get("receipt") or {}).get("kind") != "RecordErasureReceipt":
        return "not a RecordErasureReceipt"
    try:
        body = canonical_json(signed["receipt"])
        signature = signed["signature"]
        public = trusted or Ed25519PublicKey.from_public_bytes(
            base64.b64decode(signature["publicKey"])
        )
        public.verify(base64.b64decode(signature["value"]), body)
    except InvalidSignature:
        return "the signature does not match the receipt"
    except (KeyError, TypeError, ValueError) as err:
        return f"not a signed receipt: {err}"
    if hashlib.sha256(body).hexdigest() != signed.get("sha256"):
        return "sha256 does not match the receipt"
    return None


# --- core.erasure_deadlines (package B) -----------------------------------------------

CLEANER_BACKOFF_MS = 15_000


@dataclass(frozen=True)
class Cleaning:
    kind: TopicKind
    segment_ms: int
    min_dirty_ratio: float
    min_lag_ms: int
    max_lag_ms: int | None
    delete_retention_ms: int
    retention_ms: int | None
    topic: str = ""

    @classmethod
    def from_config(cls, config: Mapping[str, str], topic: str = "") -> Cleaning:
        policy = {p.strip() for p in config.get("cleanup.policy", "delete").split(",")}
        kind: TopicKind = (
            "tiered"
            if config.get("remote.storage.enable", "false").lower() == "true"
            else "compacted"
            if "compact" in policy
            else "delete"
        )
        max_lag = int(config.get("max.compaction.lag.ms", str(2**63 - 1)))
        retention = int(config.get("retention.ms", "604800000"))
        return cls(
            kind,
            int(config.get("segment.ms", "604800000")),
            float(config.get("min.cleanable.dirty.ratio", "0.5")),
            int(config.get("min.compaction.lag.ms", "0")),
            None if max_lag >= 2**63 - 1 else max_lag,
            int(config.get("delete.retention.ms", "86400000")),
            None if retention < 0 else retention,
            topic,
        )


@dataclass(frozen=True)
class Expected:
    values_erased_ms: int | None
    key_erased_ms: int | None
    note: str
    topic: str = ""
    bound_by: str = ""


def expected_compaction(c: Cleaning, tombstone_ms: int) -> Expected:
    if c.max_lag_ms is None:
        note = f"max.compaction.lag.ms is not set on topic {c.topic}: nothing bounds the cleaner"
        return Expected(None, None, note, c.topic, "max.compaction.lag.ms")
    values = tombstone_ms + max(c.segment_ms, c.min_lag_ms) + c.max_lag_ms + CLEANER_BACKOFF_MS
    key = values + c.delete_retention_ms + c.max_lag_ms + CLEANER_BACKOFF_MS
    return Expected(
        values, key, "while the topic keeps receiving writes", c.topic, "max.compaction.lag.ms"
    )


def expected_retention(c: Cleaning, last_match_ms: int) -> int | None:
    if c.retention_ms is None:
        return None
    return last_match_ms + c.retention_ms + c.segment_ms


def deadline_condition(
    expected: Expected | Iterable[Expected], created_ms: int, deadline_ms: int
) -> Condition:
    every = [expected] if isinstance(expected, Expected) else list(expected)
    due = created_ms + deadline_ms
    risks = [
        e.note if e.key_erased_ms is None else f"topic {e.topic} is expected clear too late"
        for e in every
        if e.key_erased_ms is None or e.key_erased_ms > due
    ]
    if risks:
        return Condition(
            "DeadlineAtRisk", "True", Reason.ERASURE_DEADLINE_AT_RISK, "; ".join(risks[:3])
        )
    return Condition(
        "DeadlineAtRisk", "False", Reason.ERASURE_DEADLINE_MET, "expected before the deadline"
    )
