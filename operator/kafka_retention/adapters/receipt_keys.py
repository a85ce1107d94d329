"""The Ed25519 key RecordErasure receipts are signed with, read from a Secret in the
operator's namespace (data key `ed25519.pem`, PKCS#8 PEM, or `ed25519.seed`, the 32-byte
seed). Read at each signing, so a rotated key is used from the next receipt on; the key
is never logged, and a failure names the Secret, never its content."""

from __future__ import annotations

import base64
import binascii

import kubernetes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from kubernetes.client.exceptions import ApiException

from kafka_retention.adapters.kube import api_client
from kafka_retention.core.failures import SecretUnavailable
from kafka_retention.core.receipts import ReceiptError, load_signing_key


def read_signing_key(namespace: str, name: str) -> Ed25519PrivateKey:
    """The signing key; SecretUnavailable when the Secret is missing, unreadable or holds
    no usable key."""
    where = f"Secret {namespace}/{name} (erasure signing key)"
    core = kubernetes.client.CoreV1Api(api_client())
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        why = "not found" if exc.status == 404 else f"HTTP {exc.status} {exc.reason}"
        raise SecretUnavailable(f"{where}: {why}") from None
    try:
        data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    except (binascii.Error, ValueError):
        raise SecretUnavailable(f"{where}: its data is not base64") from None
    try:
        return load_signing_key(data)
    except ReceiptError as err:
        raise SecretUnavailable(f"{where}: {err}") from None
