"""What a topic's configuration says about deleting from it: one answer for every planner.

DeleteRecords only works where `cleanup.policy` includes `delete` (or, from Kafka 4.2, is
empty: KIP-1161); on a compact-only topic the broker answers POLICY_VIOLATION. Planners
say so before trying.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

POLICY_VIOLATION = "POLICY_VIOLATION"
DEFAULT_DELETE_RETENTION_MS = 86_400_000  # Kafka's default delete.retention.ms (1 day)


def cleanup_policies(config: Mapping[str, str]) -> frozenset[str]:
    """The topic's cleanup policies (`delete`, `compact`); Kafka's default is delete."""
    return frozenset(p.strip() for p in config.get("cleanup.policy", "delete").split(","))


def accepts_delete_records(config: Mapping[str, str], empty_allowed: bool = False) -> bool:
    """Whether the broker takes DeleteRecords on the topic. `empty_allowed`: the cluster
    is 4.2 or later, where an empty cleanup.policy (KIP-1161: infinite retention) is
    accepted too (core.cluster_features)."""
    policies = cleanup_policies(config) - {""}
    return "delete" in policies or (empty_allowed and not policies)


def has_empty_policy(configs: Iterable[Mapping[str, str] | str]) -> bool:
    """Whether some topic's cleanup.policy is empty (a string: a config that could not be
    read): only then does accepting DeleteRecords depend on the cluster's release."""
    return any(not isinstance(c, str) and not cleanup_policies(c) - {""} for c in configs)


def is_compacted(config: Mapping[str, str]) -> bool:
    return "compact" in cleanup_policies(config)


def delete_retention_ms(config: Mapping[str, str]) -> int:
    """How long the cleaner keeps tombstones on a compacted topic (delete.retention.ms)."""
    return int(config.get("delete.retention.ms", DEFAULT_DELETE_RETENTION_MS))


def delete_refusal(
    topic: str, config: Mapping[str, str], empty_allowed: bool = False
) -> str | None:
    """Why DeleteRecords cannot work on this topic, in words users act on; None if it can.

    The Kafka error name leads, so scripts and searches find it.
    """
    if accepts_delete_records(config, empty_allowed):
        return None
    if not cleanup_policies(config) - {""}:
        return (
            f"{POLICY_VIOLATION}: topic {topic} has an empty cleanup.policy (infinite "
            "retention), which takes DeleteRecords only on Kafka 4.2 and later (KIP-1161); "
            "this cluster's metadata.version is older, or could not be read"
        )
    return (
        f"{POLICY_VIOLATION}: topic {topic} has cleanup.policy={config.get('cleanup.policy')}; "
        "DeleteRecords only works where cleanup.policy includes delete"
    )


@dataclass
class TopicClasses:
    """A batch's topics sorted by what their configuration allows."""

    deletable: list[str] = field(default_factory=list)  # cleanup.policy includes delete
    compacted: list[str] = field(default_factory=list)  # compact (maybe with delete)
    delete_retention_ms: dict[str, int] = field(default_factory=dict)  # of compacted ones
    problems: dict[str, str] = field(default_factory=dict)  # topic -> why it is not planned


def classify_topics(
    configs: Mapping[str, Mapping[str, str] | str], empty_allowed: bool = False
) -> TopicClasses:
    """Each topic by its config; a string instead of a config is why it could not be read.
    `empty_allowed`: as for accepts_delete_records."""
    out = TopicClasses()
    for topic, config in sorted(configs.items()):
        if isinstance(config, str):
            out.problems[topic] = f"topic config unreadable: {config}"
            continue
        if is_compacted(config):
            out.compacted.append(topic)
            out.delete_retention_ms[topic] = delete_retention_ms(config)
        refusal = delete_refusal(topic, config, empty_allowed)
        if refusal is None:
            out.deletable.append(topic)
        else:
            out.problems[topic] = refusal
    return out
