"""What a topic's configuration says about deleting from it: one answer for every planner.

DeleteRecords only works where `cleanup.policy` includes `delete`; on a compact-only topic
the broker answers POLICY_VIOLATION. Planners say so before trying.
"""

from __future__ import annotations

from collections.abc import Mapping

POLICY_VIOLATION = "POLICY_VIOLATION"
DEFAULT_DELETE_RETENTION_MS = 86_400_000


def cleanup_policies(config: Mapping[str, str]) -> frozenset[str]:
    """The topic's cleanup policies (`delete`, `compact`); Kafka's default is delete."""
    return frozenset(p.strip() for p in config.get("cleanup.policy", "delete").split(","))


def accepts_delete_records(config: Mapping[str, str]) -> bool:
    return "delete" in cleanup_policies(config)


def is_compacted(config: Mapping[str, str]) -> bool:
    return "compact" in cleanup_policies(config)


def delete_retention_ms(config: Mapping[str, str]) -> int:
    """How long the cleaner keeps tombstones on a compacted topic (delete.retention.ms)."""
    return int(config.get("delete.retention.ms", DEFAULT_DELETE_RETENTION_MS))


def delete_refusal(topic: str, config: Mapping[str, str]) -> str | None:
    """Why DeleteRecords cannot work on this topic, in words users act on; None if it can.

    The Kafka error name leads, so scripts and searches find it.
    """
    if accepts_delete_records(config):
        return None
    return (
        f"{POLICY_VIOLATION}: topic {topic} has cleanup.policy={config.get('cleanup.policy')}; "
        "DeleteRecords only works where cleanup.policy includes delete"
    )
