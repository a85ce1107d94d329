"""A RecordErasure's spec: which keys to erase from which topics, and how.

Keys are held as SHA-256 digests of their bytes. A key given in plain form (string or
base64, for tests and the CLI) is hashed on parsing; its bytes are kept out of repr and
equality, and no refusal ever quotes a key field's value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kafka_retention.core import specs
from kafka_retention.core.specs import ClusterRef, Shape, SpecError

DEFAULT_DEADLINE_MS = 30 * 86_400_000
MAX_KEYS = 10_000

KeyForm = Literal["sha256", "string", "base64"]
OnDeleteTopics = Literal["report", "cut"]

KEY_FORMS: tuple[KeyForm, ...] = ("sha256", "string", "base64")
ON_DELETE_TOPICS: tuple[OnDeleteTopics, ...] = ("report", "cut")
HEX = frozenset("0123456789abcdef")

# The spec's field tree (the CRD's; tests/unit/test_crds.py holds them equal).
ERASURE_FIELDS: Shape = {
    "cluster": {
        "clusterRef": None,
        "bootstrapServers": None,
        "clientConfigSecret": None,
        "strimzi": specs.STRIMZI_FIELDS,
    },
    "topics": {"names": None, "pattern": None},
    "keys": {"sha256": None, "string": None, "base64": None},
    "onDeleteTopics": None,
    "acceptCollateral": None,
    "maxCollateralRecords": None,
    "protectGroups": None,
    "deadline": None,
    "dryRun": None,
}

CUT_NEEDS_ACCEPTANCE = (
    "cut removes other keys' records: run with dryRun to see the collateral, then set "
    "acceptCollateral: true"
)


def key_digest(key: bytes) -> str:
    """The digest a key is named by: SHA-256 of its exact bytes, lowercase hex."""
    return hashlib.sha256(key).hexdigest()


@dataclass(frozen=True)
class ErasureKey:
    digest: str  # 64 lowercase hex characters
    form: KeyForm
    # The key's bytes when the spec gave them in plain form: never logged or written.
    raw: bytes | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class ErasureRequest:
    cluster: ClusterRef
    names: tuple[str, ...]
    pattern: str | None
    keys: tuple[ErasureKey, ...]
    on_delete_topics: OnDeleteTopics
    accept_collateral: bool
    protect_groups: tuple[str, ...]
    deadline_ms: int
    dry_run: bool
    # The most records of other keys the cuts of this erasure may remove in all (None:
    # what acceptCollateral accepts is unbounded).
    max_collateral_records: int | None = None

    @property
    def binding(self) -> str | None:
        """spec.cluster.clusterRef."""
        return self.cluster.binding

    def digests(self) -> frozenset[str]:
        return frozenset(k.digest for k in self.keys)

    def named_topics(self) -> list[tuple[str, str]]:
        """(field, topic) of every topic the spec names, in spec order."""
        return [(f"spec.topics.names[{i}]", t) for i, t in enumerate(self.names)]


# --- parsing ---------------------------------------------------------------------------
# A key field's value may be the very thing to erase (a person pastes an e-mail address
# into sha256:), so no refusal below quotes it: messages give its type or length only,
# never through specs.text or specs.integer, which echo the value.


def parse_digest(value: Any, field_path: str) -> str:
    """A hex SHA-256 as given in spec.keys[i].sha256, lowercased. The refusal says what
    is wrong with it and never what it is."""
    if not isinstance(value, str):
        raise SpecError(
            field_path, f"must be 64 hexadecimal characters, not a {type(value).__name__}"
        )
    if len(value) != 64:
        raise SpecError(
            field_path,
            f"is not 64 hexadecimal characters (it has {len(value)} characters); give the "
            "SHA-256 of the key bytes (`kafka-retention erase --key` computes it)",
        )
    digest = value.lower()
    if not HEX.issuperset(digest):
        raise SpecError(field_path, "is not 64 hexadecimal characters (a character is not hex)")
    return digest


def _key(raw: Any, field_path: str) -> ErasureKey:
    if not isinstance(raw, Mapping):
        raise SpecError(field_path, f"must be an object, not a {type(raw).__name__}")
    given = [form for form in KEY_FORMS if raw.get(form) is not None]
    if len(given) != 1:
        raise SpecError(
            field_path,
            f"needs exactly one of sha256, string or base64 (it gives {len(given)})",
        )
    (form,) = given
    value = raw[form]
    at = f"{field_path}.{form}"
    if form == "sha256":
        return ErasureKey(parse_digest(value, at), "sha256")
    if not isinstance(value, str):
        raise SpecError(at, f"must be a string, not a {type(value).__name__}")
    if form == "string":
        try:
            key = value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, from a JSON escape
            raise SpecError(at, "is not valid Unicode text") from None
    else:
        try:
            key = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise SpecError(at, "is not valid base64 (standard alphabet, with padding)") from None
    if not key:
        # Kafka's compacted topics refuse records without a key: nothing to erase.
        raise SpecError(at, "is empty; a key has at least one byte")
    return ErasureKey(key_digest(key), form, key)


def _keys(value: Any) -> tuple[ErasureKey, ...]:
    if value is None:
        raise SpecError("spec.keys", "is required: at least one key")
    if not isinstance(value, list):
        raise SpecError("spec.keys", f"must be a list, not a {type(value).__name__}")
    if not value:
        raise SpecError("spec.keys", "needs at least one key")
    if len(value) > MAX_KEYS:
        raise SpecError("spec.keys", f"has {len(value)} keys; at most {MAX_KEYS}")
    keys: dict[str, ErasureKey] = {}
    for i, raw in enumerate(value):
        key = _key(raw, f"spec.keys[{i}]")
        # The same key twice (as a digest and as text, say) is one key to erase.
        keys.setdefault(key.digest, key)
    return tuple(keys.values())


def _topics(value: Any) -> tuple[tuple[str, ...], str | None]:
    topics = specs.obj(value, "spec.topics")
    raw_names = topics.get("names")
    if raw_names is None:
        raw_names = []
    if not isinstance(raw_names, list):
        raise SpecError("spec.topics.names", f"must be a list, not {type(raw_names).__name__}")
    seen: dict[str, int] = {}
    for i, name in enumerate(raw_names):
        at = f"spec.topics.names[{i}]"
        if not specs.is_topic_name(name):
            raise SpecError(at, f"{name!r} is not a valid Kafka topic name")
        if name.startswith("__"):
            raise SpecError(
                at, f"{name} is an internal topic; an erasure never targets internal topics"
            )
        if name in seen:
            raise SpecError(at, f"topic {name} is also listed at spec.topics.names[{seen[name]}]")
        seen[name] = i
    pattern = specs.topic_pattern(topics.get("pattern"), "spec.topics.pattern")
    if not seen and not pattern:
        raise SpecError("spec.topics", "needs names or a pattern")
    return tuple(seen), pattern


def parse_erasure_spec(spec: Mapping[str, Any]) -> ErasureRequest:
    """Check what the CRD schema cannot (digests, base64, duplicates), and again what it
    can: the operator may meet an object stored before a schema change, or a CLI-built
    spec. Every refusal is a SpecError naming its field and quoting no key."""
    spec = specs.obj(spec, "spec")
    specs.known_fields(spec, ERASURE_FIELDS, "spec")
    cluster = specs.parse_cluster(spec)
    names, pattern = _topics(spec.get("topics"))
    keys = _keys(spec.get("keys"))
    on_delete = spec.get("onDeleteTopics", "report")
    if on_delete not in ON_DELETE_TOPICS:
        raise SpecError("spec.onDeleteTopics", f"{on_delete!r} is not report or cut")
    accept = specs.flag(spec.get("acceptCollateral"), "spec.acceptCollateral", False)
    dry_run = specs.flag(spec.get("dryRun"), "spec.dryRun", False)
    if on_delete == "cut" and not accept and not dry_run:
        raise SpecError("spec.acceptCollateral", CUT_NEEDS_ACCEPTANCE)
    deadline = spec.get("deadline")
    deadline_ms = (
        DEFAULT_DEADLINE_MS if deadline is None else specs.duration(deadline, "spec.deadline")
    )
    if deadline_ms <= 0:
        raise SpecError("spec.deadline", "must be longer than 0")
    groups = specs.group_ids(spec.get("protectGroups"), "spec.protectGroups")
    limit = spec.get("maxCollateralRecords")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise SpecError("spec.maxCollateralRecords", "must be a whole number, 0 or more")
    # In the fields' order (a mypy-checked call: each value has its field's type).
    return ErasureRequest(
        cluster, names, pattern, keys, on_delete, accept, groups, deadline_ms, dry_run, limit
    )
