"""Policies that cut the same partition: the most conservative cut wins for all of them.

Nothing is remembered between runs: every other policy's cut is computed again, by the
same core, from its spec (as the API server stores it) and the facts read just now. So
the rule holds after a restart, with two replicas, and for a policy that has not run yet.

Namespaces are tenants, and one tenant's policy must not stall another's: across
namespaces a policy is a peer only when both clusters are known, by Kafka's own id, to be
the same one (see PeerIndex), and, under a KafkaClusterBinding, only on topics its
tenant entry lets it hold (services.tenancy puts them in its topic filter), and only by
its groups' committed positions (`Peer.groups_only`): a reader may keep what its groups
have not read, not freeze a topic with a rule of its own. A group that never committed
on a partition holds another namespace back there only if its entry says
uncommittedGroupsHold. The held-back status names who held it (`Holder`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.policy import RetentionRules, plan_partition
from kafka_retention.core.policy_spec import PolicySpec

# How status refers to a policy of another namespace in the overlap note: never by its
# name (heldBackBy names the namespace and group of one that did hold a cut back).
OTHER_NAMESPACE_POLICY = "a policy in another namespace"
OTHER_NAMESPACE_POLICIES = "policies in other namespaces"


@dataclass(frozen=True)
class Peer:
    """Another policy that cuts the same topic, as it may hold this policy's cut back."""

    rules: RetentionRules
    # A bound policy of another namespace: it holds back only by its deleteConsumed
    # groups' committed offsets, not by its own time rules or floors (minRetention,
    # minRecords).
    groups_only: bool = False
    # Whether its group without a committed offset on a partition holds the partition.
    uncommitted_hold: bool = True


@dataclass(frozen=True)
class Holder:
    """Who held a cut back: a peer (by key) and, when a group decided it, the group."""

    key: str
    group: str | None = None


@dataclass(frozen=True)
class CutDecision:
    target: int
    # Peers (keys) whose own cut was lower than this policy's and so held it back.
    held_back_by: tuple[str, ...] = ()
    # The same, with the group that decided each one's cut where a group did.
    holders: tuple[Holder, ...] = ()


def peer_cut(facts: PartitionFacts, peer: Peer, now_ms: int) -> tuple[int, str | None] | None:
    """How far `peer` lets a cut go on this partition, and the group that decides it;
    None when it holds nothing back here."""
    if not peer.groups_only:
        cut = plan_partition(facts, peer.rules, now_ms)
        lowest = _lowest_group(facts, peer.rules.consumed_groups, True)
        group = lowest[1] if lowest is not None and lowest[0] <= cut.target else None
        return cut.target, group
    lowest = _lowest_group(facts, peer.rules.consumed_groups, peer.uncommitted_hold)
    if lowest is None:
        return None
    offset, group = lowest
    return min(max(offset, facts.log_start), facts.high_watermark), group


def _lowest_group(
    facts: PartitionFacts, groups: Iterable[str], uncommitted_hold: bool
) -> tuple[int, str] | None:
    """The lowest position among `groups` (a group without a commit at the log start, or
    left out unless `uncommitted_hold`), with its group; None when no group counts."""
    found: tuple[int, str] | None = None
    for group in sorted(groups):
        committed = facts.committed.get(group)
        if committed is None:
            if not uncommitted_hold:
                continue
            committed = facts.log_start
        if found is None or committed < found[0]:
            found = (committed, group)
    return found


def conservative_cut(
    planned: int,
    facts: PartitionFacts,
    rules: RetentionRules,
    peers: Mapping[str, Peer],
    now_ms: int,
) -> CutDecision:
    """The lowest of the planned cut, this policy's cut from fresh facts and every peer's
    cut from the same facts. `facts` must carry the committed offsets and the offsets for
    the times that every one of these rules asks for."""
    target = min(planned, plan_partition(facts, rules, now_ms).target)
    held: list[Holder] = []
    for name, peer in sorted(peers.items()):
        found = peer_cut(facts, peer, now_ms)
        if found is not None and found[0] < target:
            target = found[0]
            held.append(Holder(name, found[1]))
    return CutDecision(target, tuple(h.key for h in held), tuple(held))


def namespace_of(key: str) -> str | None:
    """The namespace of a key `namespace/name`; None for a key without one."""
    namespace, slash, _ = key.partition("/")
    return namespace if slash else None


def overlap_note(asker: str, peers: Iterable[str]) -> str:
    """The note on a topic that other policies also cut, for the status of `asker` (its
    key): peers of its own namespace by key, those of other namespaces only as existing."""
    own_namespace = namespace_of(asker)
    keys = set(peers)
    own = sorted(k for k in keys if own_namespace is not None and namespace_of(k) == own_namespace)
    others = len(keys) - len(own)
    named = [f"policy {', '.join(own)}"] if own else []
    if others:
        named.append(OTHER_NAMESPACE_POLICY if others == 1 else OTHER_NAMESPACE_POLICIES)
    return (
        f"overlaps with {' and '.join(named)} on this topic: "
        "the more conservative cut applies to both"
    )


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
    "unknown". Who counts as a peer of the asking policy:

    - a policy of another namespace: only when both clusters are known and the same. An
      unknown cluster (an unreachable bootstrap server, a missing Secret) is no reason to
      hold back another tenant: otherwise any tenant could stall every other one with a
      policy that names nothing reachable, by name or pattern, on their topics.
    - a policy of the asker's own namespace: when the clusters are the same or either is
      unknown, as before tenancy: holding a cut back is safe, cutting past a group of a
      policy that may share the cluster is not (its id may be unknown only for now: a
      Secret being rotated, a refresh that timed out). A namespace's broken policy holds
      back only that namespace's policies on the topics it selects, and their status
      names it, so its owner sees why.
    """

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
        self, topic: str, cluster: str | None, exclude: str = "", namespace: str | None = None
    ) -> dict[str, Peer]:
        """Peers (by key) that cut `topic`. `cluster`: the asking policy's, as `cluster`
        gives it (None: unknown); `exclude`: its key, which is never its own peer.
        `namespace`: the asker's, by default its key's; an asker of no namespace has only
        peers known to be on its cluster."""
        if topic.startswith("__"):
            return {}
        mine = namespace if namespace is not None else namespace_of(exclude)
        names = set(self._by_name.get(topic, ()))
        names.update(name for name, spec in self._patterns if topic in spec.topics.select([topic]))
        found: dict[str, Peer] = {}
        for name in sorted(names):
            spec = self._specs[name]
            if name == exclude or topic in spec.topics.exclude:
                continue
            if mine is not None and namespace_of(name) == mine:
                # Own namespace: an unknown on either side may be the same cluster.
                if cluster is None or self.cluster(name, spec) in (None, cluster):
                    found[name] = Peer(spec.rules)
            elif cluster is not None and self.cluster(name, spec) == cluster:
                # Another namespace: never resolved for an asker whose cluster is unknown.
                # Under a binding it holds back by its groups alone (services.tenancy
                # admitted it only on topics its entry may hold).
                bound = spec.binding is not None
                found[name] = Peer(spec.rules, bound, spec.hold_uncommitted or not bound)
        return found
