"""What the erasure pipeline is handed: one RecordErasure object (`Erasure`), with the
stores, the Kafka connection, the admission, the signing key and the ledger the
handler wires in, and `Unresolved`, what that connection raises when the cluster
cannot be named yet."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kafka_retention.core.bindings import Grant
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.services.erasure.ledger import LedgerStore
from kafka_retention.services.ports import BlobStore, ErasureKafka, StatusStore


@dataclass
class Erasure:
    """One RecordErasure object, as the service needs it. `status` says how far earlier
    runs got: each run takes one step (pipeline.py) and the next starts from it."""

    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    generation: int | None
    uid: str
    name: str
    namespace: str
    # Only services/erasure/status.py writes through this (the single status writer).
    store: StatusStore
    # The receipt and the evidence beyond what status holds, in ConfigMaps.
    blobs: BlobStore
    connect: Callable[[ErasureRequest], ErasureKafka]
    # The receipt's signing key; raises core.failures.SecretUnavailable when it cannot be
    # read (the erasure then waits with ReceiptSigned False).
    signing_key: Callable[[], Ed25519PrivateKey]
    now: Callable[[], datetime]
    # Tenancy, asked before anything is contacted: raises tenancy.Refused or
    # BindingUnavailable, else returns the grant the topics are selected within (None:
    # no tenancy, or a cluster named inline under open tenancy).
    admit: Callable[[Mapping[str, Any], ErasureRequest], Grant | None] | None = None
    created: datetime | None = None  # metadata.creationTimestamp: where the deadline counts
    retry_delay: float = 10.0  # after a failure (not a wait on the cleaner: pipeline.py)
    # The cluster's ledger of erased digests (services/erasure/ledger.py), written once the
    # receipt is signed; None: no ledger is kept (older callers, the tests of other steps).
    ledger: LedgerStore | None = None
