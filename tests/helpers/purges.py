"""RecordPurges on the stack: applied, and read once they reached a final phase."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.core.purge_states import FINAL_PHASES
from tests.helpers.kube import apply, resource, wait_for


def apply_purge(stack: Stack, ns: str, name: str, **spec: Any) -> None:
    """A RecordPurge on the stack's cluster (spec.cluster may say otherwise)."""
    cluster = {"bootstrapServers": stack.kafka.bootstrap_servers}
    apply(stack, resource("RecordPurge", name, ns, spec={"cluster": cluster, **spec}))


def cuts(topic: str, offsets: Mapping[int, int]) -> list[dict[str, Any]]:
    """spec.partitions: partition p of `topic` cut below offsets[p] (-1: its high
    watermark)."""
    return [{"topic": topic, "partition": p, "offset": o} for p, o in offsets.items()]


def before(topic: str, **rule: Any) -> list[dict[str, Any]]:
    """spec.topics: every partition of `topic` cut by one rule (highWatermark=True,
    timestamp=..., committedBy=[...])."""
    return [{"name": topic, "before": rule}]


def purge_all(stack: Stack, ns: str, name: str, cluster: dict[str, Any], topic: str) -> None:
    """A RecordPurge of partition 0 of `topic` up to its high watermark, on `cluster`."""
    apply_purge(stack, ns, name, cluster=cluster, partitions=cuts(topic, {0: -1}))


def finished(obj: dict[str, Any]) -> bool:
    """A check for wait_for: the purge reached a final phase."""
    return obj.get("status", {}).get("phase") in FINAL_PHASES


def purge_finished(stack: Stack, ns: str, name: str, timeout: float = 60) -> dict[str, Any]:
    """The RecordPurge once it reached a final phase."""
    return wait_for(stack, "recordpurge", ns, name, finished, timeout)


def purge_protecting(stack: Stack, ns: str, topic: str, group: str) -> dict[str, Any]:
    """A purge `protected` of every record of `topic` (to its high watermark) that
    protectGroups `group`, once finished."""
    highwater = before(topic, highWatermark=True)
    apply_purge(stack, ns, "protected", protectGroups=[group], topics=highwater)
    return purge_finished(stack, ns, "protected")


def finished_by_a_new_operator(
    stack: Stack, ns: str, name: str, log: Path, timeout: float
) -> dict[str, Any]:
    """The purge once finished by an operator started now for `ns` (stopped after)."""
    operator = OperatorProcess(stack, [ns], log).start()
    try:
        return purge_finished(stack, ns, name, timeout=timeout)
    finally:
        operator.stop()


def results(obj: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["topic"], r["partition"]): r for r in obj["status"]["results"]}
