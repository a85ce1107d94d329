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


def _cluster(key: str, spec: PolicySpec) -> str:
    return spec.cluster.identity(key.split("/", 1)[0])


class PeerIndex:
    """Which other policies cut a topic on a cluster, found without trying every policy's
    selector on every topic: names are looked up, only patterns are matched. A dry run
    or a watch-only policy (notify alone) cuts nothing, so it holds nobody back."""

    def __init__(self, others: Mapping[str, PolicySpec]) -> None:
        self._by_name: dict[tuple[str, str], set[str]] = {}
        self._patterns: list[tuple[str, PolicySpec]] = []
        self._specs = others
        for name, spec in others.items():
            if spec.dry_run or not spec.rules.deletes():
                continue
            for topic in spec.topics.names:
                self._by_name.setdefault((_cluster(name, spec), topic), set()).add(name)
            if spec.topics.pattern:
                self._patterns.append((name, spec))

    def on_topic(self, topic: str, cluster: str, exclude: str = "") -> dict[str, RetentionRules]:
        """`cluster`: the asking policy's ClusterRef.identity."""
        names = set(self._by_name.get((cluster, topic), ()))
        names.update(
            name
            for name, spec in self._patterns
            if _cluster(name, spec) == cluster and topic in spec.topics.select([topic])
        )
        return {
            name: self._specs[name].rules
            for name in sorted(names)
            if name != exclude
            and topic not in self._specs[name].topics.exclude
            and not topic.startswith("__")
        }
