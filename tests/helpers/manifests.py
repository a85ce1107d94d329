"""The deploy manifests (manifests/) as kustomize renders them, and what the operator's
service account may do once they are applied (`kubectl auth can-i --as`)."""

from __future__ import annotations

import time
from typing import Any

import yaml

from devstack.stack import Stack
from tests.helpers.paths import MANIFESTS

SA = "system:serviceaccount:kafka-retention-system:kafka-retention-operator"


def render(stack: Stack, path: str) -> list[dict[str, Any]]:
    """kustomize's rendering of manifests/<path>, as objects."""
    out = stack.kubectl("kustomize", str(MANIFESTS / path)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def can_i(
    stack: Stack,
    verb: str,
    resource: str,
    *flags: str,
    expect: str = "yes",
    namespace: str = "default",
    user: str = SA,
) -> str:
    """`can-i`'s answer for the operator (or `user`), once it is `expect` or after 10 s:
    the authorizer learns of a new or deleted binding from a watch, a moment after."""
    deadline = time.monotonic() + 10
    while True:
        done = stack.kubectl(
            "auth", "can-i", verb, resource, "-n", namespace, "--as", user, *flags, check=False
        )
        answer = done.stdout.strip()
        if answer == expect or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)
