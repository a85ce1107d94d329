"""RecordPurges on the stack: applied, and read once they reached a final phase."""

from __future__ import annotations

import json
from typing import Any

from devstack.stack import Stack
from kafka_retention.core.purge_states import FINAL_PHASES
from tests.helpers.kube import wait_for


def apply_purge(stack: Stack, ns: str, name: str, **spec: Any) -> None:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"cluster": {"bootstrapServers": stack.kafka.bootstrap_servers}, **spec},
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def purge_finished(stack: Stack, ns: str, name: str, timeout: float = 60) -> dict[str, Any]:
    """The RecordPurge once it reached a final phase."""
    return wait_for(
        stack,
        "recordpurge",
        ns,
        name,
        lambda o: o.get("status", {}).get("phase") in FINAL_PHASES,
        timeout,
    )


def results(obj: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["topic"], r["partition"]): r for r in obj["status"]["results"]}
