"""Policies that cut the same partition: the most conservative cut wins for all of them.

Nothing is remembered between runs: every other policy's cut is computed again, by the
same core, from its spec (as the API server stores it) and the facts read just now. So
the rule holds after a restart, with two replicas, and for a policy that has not run yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def named_cluster(key: str, spec: PolicySpec) -> str | None:
    """A policy's cluster as its spec names it (no lookup): the default key, for callers
    that have no way to resolve names (unit tests, the CLI)."""
    return spec.cluster.identity(key.split("/", 1)[0])


class PeerIndex:
    """Which other policies cut a topic on a cluster, found without trying every policy's
    selector on every topic: names are looked up, only patterns are matched. A dry run
    or a watch-only policy (notify alone) cuts nothing, so it holds nobody back.

    `cluster_of(key, spec)` says which cluster a policy reaches (the operator passes
    Kafka's own cluster id, so one cluster named two ways is one cluster); None is
    "unknown", and an unknown peer is a peer: holding a cut back is safe, cutting past a
    group of a peer that may share the cluster is not."""

    def __init__(
        self,
        others: Mapping[str, PolicySpec],
        cluster_of: Callable[[str, PolicySpec], str | None] = named_cluster,
    ) -> None:
        self._by_name: dict[str, set[str]] = {}
        self._patterns: list[tuple[str, PolicySpec]] = []
        self._specs = others
        self._cluster_of = cluster_of
        self._clusters: dict[str, str | None] = {}
        for name, spec in others.items():
            if spec.dry_run or not spec.rules.deletes():
                continue
            for topic in spec.topics.names:
                self._by_name.setdefault(topic, set()).add(name)
            if spec.topics.pattern:
                self._patterns.append((name, spec))

    def cluster(self, key: str, spec: PolicySpec) -> str | None:
        """`cluster_of`, asked once per policy for the life of this index (one batch)."""
        if key not in self._clusters:
            self._clusters[key] = self._cluster_of(key, spec)
        return self._clusters[key]

    def on_topic(
        self, topic: str, cluster: str | None, exclude: str = ""
    ) -> dict[str, RetentionRules]:
        """`cluster`: the asking policy's, as `cluster` gives it (None: unknown)."""
        names = set(self._by_name.get(topic, ()))
        names.update(name for name, spec in self._patterns if topic in spec.topics.select([topic]))
        if topic.startswith("__"):
            return {}
        found: dict[str, RetentionRules] = {}
        for name in sorted(names):
            spec = self._specs[name]
            if name == exclude or topic in spec.topics.exclude:
                continue
            theirs = self.cluster(name, spec)
            if cluster is None or theirs is None or theirs == cluster:
                found[name] = spec.rules
        return found
