"""Policies that cut the same partition: the most conservative cut wins for all of them.

Nothing is remembered between runs: every other policy's cut is computed again, by the
same core, from its spec (as the API server stores it) and the facts read just now. So
the rule holds after a restart, with two replicas, and for a policy that has not run yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.policy import RetentionRules, plan_partition
from kafka_retention.core.policy_spec import PolicySpec


@dataclass(frozen=True)
class Decision:
    target: int
    # Peers whose own cut was lower than this policy's and so held it back.
    held_back_by: tuple[str, ...] = ()


def conservative_cut(
    planned: int,
    facts: PartitionFacts,
    rules: RetentionRules,
    peers: Mapping[str, RetentionRules],
    now_ms: int,
) -> Decision:
    """The lowest of the planned cut, this policy's cut from fresh facts and every peer's
    cut from the same facts. `facts` must carry the committed offsets and the offsets for
    the times that every one of these rules asks for."""
    target = min(planned, plan_partition(facts, rules, now_ms).target)
    held: list[str] = []
    for name, peer in sorted(peers.items()):
        theirs = plan_partition(facts, peer, now_ms).target
        if theirs < target:
            target = theirs
            held.append(name)
    return Decision(target, tuple(held))


def peers_on_topic(
    topic: str, bootstrap_servers: str, others: Mapping[str, PolicySpec]
) -> dict[str, RetentionRules]:
    """Policies that also cut this topic on this cluster. A dry run cuts nothing, so it
    holds nobody back."""
    return {
        name: spec.rules
        for name, spec in others.items()
        if spec.bootstrap_servers == bootstrap_servers
        and not spec.dry_run
        and topic in spec.topics.select([topic])
    }
