"""What the operator's service account may do once the manifests' RBAC is applied, as the
API server's authorizer answers `kubectl auth can-i --as`."""

from __future__ import annotations

import time

from devstack.stack import Stack

SA = "system:serviceaccount:kafka-retention-system:kafka-retention-operator"
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
# The components' placeholder namespace of the Kafka and its brokers.
KAFKA_NS = "kafka"


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
