"""RetentionPolicies on the stack: applied, and read once a run completed."""

from __future__ import annotations

from typing import Any

from devstack.stack import Stack
from tests.helpers.kube import apply, events, resource, wait_for


def apply_policy(stack: Stack, ns: str, name: str, **spec: Any) -> None:
    """A RetentionPolicy on the stack's cluster, run every 10 s (spec may say otherwise)."""
    cluster = {"bootstrapServers": stack.kafka.bootstrap_servers}
    spec = {"cluster": cluster, "interval": "10s", **spec}
    apply(stack, resource("RetentionPolicy", name, ns, spec=spec))


def apply_policy_on(stack: Stack, ns: str, name: str, topic: str, **spec: Any) -> None:
    """A RetentionPolicy of one topic, named (spec.topics.names), as apply_policy makes it."""
    apply_policy(stack, ns, name, topics={"names": [topic]}, **spec)


def completed(obj: dict[str, Any]) -> bool:
    """A check for wait_for: the policy completed a run."""
    return bool(obj.get("status", {}).get("lastRun", {}).get("completedAt"))


def ran(stack: Stack, ns: str, name: str, after: str = "") -> dict[str, Any]:
    """The policy once a run completed (after the given completedAt, if any)."""
    return wait_for(
        stack,
        "retentionpolicy",
        ns,
        name,
        lambda o: o.get("status", {}).get("lastRun", {}).get("completedAt", "") > after,
        timeout=120,
    )


def where(loss: dict[str, Any]) -> tuple[str, str, int, int, int]:
    """Whose records a status.losses entry says were lost, and which: (group, topic,
    partition, fromOffset, toOffset)."""
    return (loss["group"], loss["topic"], loss["partition"], loss["fromOffset"], loss["toOffset"])


def loss_events(stack: Stack, ns: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events(stack, ns, name) if e["reason"] == "UnconsumedRecordsDeleted"]


def policy(
    ns: str, i: int, topic: str, group: str, bootstrap: str, interval_s: int
) -> dict[str, Any]:
    """The i-th policy of a fleet (`p000`, `p001`, ...): deleteConsumed of one group on one
    topic, every `interval_s` seconds."""
    spec = {
        "cluster": {"bootstrapServers": bootstrap},
        "interval": f"{interval_s}s",
        "topics": {"names": [topic]},
        "deleteConsumed": {"groups": [group]},
    }
    return resource("RetentionPolicy", f"p{i:03d}", ns, spec=spec)
