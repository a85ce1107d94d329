"""A RecordErasure's spec: which keys to erase from which topics, and how.

Keys are held as SHA-256 digests of their bytes. A key given in plain form (string or
base64, for tests and the CLI) is hashed on parsing; its bytes are kept out of repr and
equality, and no refusal ever quotes a key field's value.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from kafka_retention.core.specs import ClusterRef, Shape
from kafka_retention.core.strimzi import StrimziRef

DEFAULT_DEADLINE_MS = 30 * 86_400_000
MAX_KEYS = 10_000

KeyForm = Literal["sha256", "string", "base64"]
OnDeleteTopics = Literal["report", "cut"]

# The spec's field tree (the CRD's; tests/unit/test_crds.py holds them equal).
ERASURE_FIELDS: Shape = {}  # filled in by the parser's package


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
    bootstrap_servers: str
    client_config_secret: str | None
    names: tuple[str, ...]
    pattern: str | None
    keys: tuple[ErasureKey, ...]
    on_delete_topics: OnDeleteTopics
    accept_collateral: bool
    protect_groups: tuple[str, ...]
    deadline_ms: int
    dry_run: bool
    strimzi: StrimziRef | None = None  # spec.cluster.strimzi
    binding: str | None = None  # spec.cluster.clusterRef

    @property
    def cluster(self) -> ClusterRef:
        return ClusterRef(
            self.bootstrap_servers, self.client_config_secret, self.strimzi, self.binding
        )

    def digests(self) -> frozenset[str]:
        return frozenset(k.digest for k in self.keys)

    def named_topics(self) -> list[tuple[str, str]]:
        """(field, topic) of every topic the spec names, in spec order."""
        return [(f"spec.topics.names[{i}]", t) for i, t in enumerate(self.names)]
