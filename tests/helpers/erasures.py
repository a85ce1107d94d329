"""The RecordErasure e2e tests' shared setup on the stack: the operator's namespace with
the receipts' signing key, a binding granting erase on exactly some topics, and the
erasure itself."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from devstack.stack import Stack
from tests.helpers import tenancy
from tests.helpers.kube import apply, create_namespace, resource
from tests.helpers.topics import cluster_id

KIND = "RecordErasure"
# The Secret the operator reads the receipts' signing key from (its default name).
SIGNING_SECRET = "kafka-retention-erasure-signing"


def keys_namespace(stack: Stack, prefix: str, key: Ed25519PrivateKey) -> Iterator[str]:
    """The operator's own namespace holding the signing key's Secret, outside the
    `{prefix}-*` namespaces it watches (`{prefix}keys-*`); deleted after."""
    ns = f"{prefix}keys-{uuid.uuid4().hex[:6]}"
    create_namespace(stack, ns)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SIGNING_SECRET, "namespace": ns},
        "type": "Opaque",
        "stringData": {"ed25519.pem": pem.decode()},
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(secret))
    yield ns
    stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def bind_erase(
    stack: Stack,
    admin: AdminClient,
    made: list[str],
    prefix: str,
    ns: str,
    topics: Sequence[str],
    operations: Sequence[str] = ("erase",),
) -> str:
    """A binding letting `ns` run `operations` on exactly these topics of the shared
    cluster; its name goes to `made` (deleted by tenancy.made_bindings)."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    tenants = [
        {
            "namespaces": [ns],
            "operations": list(operations),
            "topics": {"allow": [re.escape(t) for t in topics]},
        }
    ]
    servers = stack.kafka.bootstrap_servers
    apply(stack, tenancy.binding(name, cluster_id(admin), servers, ns, tenants=tenants))
    made.append(name)
    return name


def erasure(
    stack: Stack, ns: str, name: str, binding: str, topics: Sequence[str], **spec: Any
) -> None:
    body = {"cluster": {"clusterRef": binding}, "topics": {"names": list(topics)}, **spec}
    apply(stack, resource(KIND, name, ns, spec=body))


def phase_in(*phases: str) -> Any:
    return lambda obj: (obj.get("status") or {}).get("phase") in phases


class Filler:
    """Writes an unrelated key to every partition every 300 ms while a test waits: a
    segment rolls, and the cleaner acts, only when something is appended."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic, self.partitions = topic, partitions
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Filler:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.thread.join(10)
        self.producer.flush(30)

    def _run(self) -> None:
        while not self.stopping.wait(0.3):
            for p in range(self.partitions):
                self.producer.produce(self.topic, key=b"filler", value=b"f", partition=p)
            self.producer.poll(0)
