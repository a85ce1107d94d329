"""The overlap rule's pure parts: who overlaps on a topic, and the conservative cut."""

from __future__ import annotations

import random
import re
from typing import Any

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.overlap import Holder, Peer, PeerIndex, conservative_cut, overlap_note
from kafka_retention.core.policy import RetentionRules
from kafka_retention.core.policy_spec import PolicySpec, parse_policy_spec


def spec(bootstrap: str = "k:9092", **fields: Any) -> PolicySpec:
    body = {"cluster": {"bootstrapServers": bootstrap}, "maxRetention": "1d", **fields}
    return parse_policy_spec(body)


def test_peers_are_found_by_name_and_by_pattern_on_the_same_cluster_only() -> None:
    index = PeerIndex(
        {
            "ns/named": spec(topics={"names": ["orders"]}),
            "ns/pattern": spec(topics={"pattern": "ord.*"}),
            "ns/excluded": spec(topics={"pattern": "ord.*", "exclude": ["orders"]}),
            "ns/dry": spec(topics={"names": ["orders"]}, dryRun=True),
            "ns/elsewhere": spec("other:9092", topics={"names": ["orders"]}),
            "ns/self": spec(topics={"names": ["orders"]}),
        }
    )
    assert sorted(index.on_topic("orders", "k:9092", exclude="ns/self")) == [
        "ns/named",
        "ns/pattern",
    ]
    assert index.on_topic("payments", "k:9092") == {}


def test_the_lowest_cut_of_all_overlapping_policies_wins_and_names_who_held_it() -> None:
    tp = TopicPartition("t", 0)
    facts = PartitionFacts(tp, 0, 100, {"fast": 80, "slow": 30, "mid": 50})
    mine = RetentionRules(consumed_groups=("fast",))
    peers = {
        "ns/slow": Peer(RetentionRules(consumed_groups=("slow",))),
        "ns/mid": Peer(RetentionRules(consumed_groups=("mid",))),
    }
    decision = conservative_cut(90, facts, mine, peers, now_ms=0)
    assert decision.target == 30
    assert decision.held_back_by == ("ns/mid", "ns/slow")  # each lowered it in turn
    assert decision.holders == (Holder("ns/mid", "mid"), Holder("ns/slow", "slow"))
    assert conservative_cut(20, facts, mine, peers, now_ms=0).target == 20  # never raised


def test_one_cluster_named_two_ways_is_one_cluster_once_resolved() -> None:
    # The same brokers in another order, and a Strimzi reference to them: three names,
    # one cluster id. Compared by name, neither peer would hold this policy back.
    ids = {"k:9092,j:9092": "id-1", "j:9092,k:9092": "id-1", "strimzi:ns/events": "id-1"}
    others = {
        "ns/reordered": spec("j:9092,k:9092", topics={"names": ["orders"]}),
        "ns/strimzi": parse_policy_spec(
            {
                "cluster": {"strimzi": {"kafka": "events"}},
                "topics": {"names": ["orders"]},
                "deleteConsumed": {"groups": ["billing"]},
            }
        ),
        "ns/elsewhere": spec("x:9092", topics={"names": ["orders"]}),
    }
    index = PeerIndex(others, lambda key, s: ids.get(s.cluster.identity(key.split("/")[0])))
    me = spec("k:9092,j:9092", topics={"names": ["orders"]})
    here = index.cluster("ns/self", me)
    assert here == "id-1"
    # x:9092 resolves to nothing (unreachable): it may be this cluster, so it counts.
    assert sorted(index.on_topic("orders", here, exclude="ns/self")) == [
        "ns/elsewhere",
        "ns/reordered",
        "ns/strimzi",
    ]
    by_name = PeerIndex(others)
    assert by_name.on_topic("orders", by_name.cluster("ns/self", me), exclude="ns/self") == {}


def test_a_peer_on_a_cluster_known_to_be_another_is_not_a_peer() -> None:
    others = {"ns/b": spec("b:9092", topics={"names": ["orders"]})}
    index = PeerIndex(
        others, lambda key, s: {"a:9092": "id-a", "b:9092": "id-b"}[s.cluster.bootstrap_servers]
    )
    assert index.on_topic("orders", "id-a") == {}
    assert list(index.on_topic("orders", "id-b")) == ["ns/b"]
    # An asker whose own cluster is unknown is held back by every peer of its namespace
    # on the topic, and by no other namespace's (this assertion changed with tenancy: it
    # was held back by every peer, whatever its namespace).
    assert list(index.on_topic("orders", None, exclude="ns/self")) == ["ns/b"]
    assert index.on_topic("orders", None, exclude="other/self") == {}
    assert index.on_topic("orders", None) == {}  # an asker of no namespace: no unknowns


class Resolver:
    """cluster_of for tests: ids by how a spec names its cluster (missing: unknown), and
    which policies were asked about."""

    def __init__(self, ids: dict[str, str]) -> None:
        self.ids = ids
        self.asked: list[str] = []

    def __call__(self, key: str, s: PolicySpec) -> str | None:
        self.asked.append(key)
        return self.ids.get(s.cluster.bootstrap_servers)


def test_another_namespaces_unresolvable_policy_holds_back_nobody() -> None:
    """A tenant's policies naming an unreachable cluster, by name and by a pattern that
    matches every topic, with groups that never commit (which would hold every partition
    at its log start): no other namespace's policy counts them as peers, whether its own
    cluster is known or not; their own namespace still does."""
    hostile = {
        f"evil/p{i}": spec(
            f"nowhere-{i}:9092",
            topics={"names": ["orders"]} if i % 2 else {"pattern": ".*"},
            deleteConsumed={"groups": ["never-commits"]},
        )
        for i in range(20)
    }
    resolve = Resolver({"k:9092": "id-k"})
    index = PeerIndex({**hostile, "team/self": spec(topics={"names": ["orders"]})}, resolve)
    here = index.cluster("team/self", spec(topics={"names": ["orders"]}))
    assert here == "id-k"
    assert index.on_topic("orders", here, exclude="team/self") == {}
    assert index.on_topic("payments", here, exclude="team/self") == {}
    # An asker whose cluster is unknown asks nothing about other namespaces' clusters.
    resolve.asked.clear()
    assert index.on_topic("orders", None, exclude="team/self") == {}
    assert not any(key.startswith("evil/") for key in resolve.asked)
    # Within the tenant's own namespace its policies are still each other's peers.
    assert len(index.on_topic("orders", None, exclude="evil/p0")) == 19


def test_policies_of_other_namespaces_on_the_same_known_cluster_are_peers() -> None:
    """Tenancy does not weaken the rule where it matters: a shared cluster, known to be
    the same by its id however each namespace names it, protects every tenant's groups."""
    ids = {"k:9092": "id-k", "k:9092,j:9092": "id-k", "x:9092": "id-x"}
    others = {
        "a/same": spec("k:9092,j:9092", topics={"names": ["orders"]}),
        "b/same": spec("k:9092", topics={"pattern": "ord.*"}),
        "c/elsewhere": spec("x:9092", topics={"names": ["orders"]}),
        "d/unknown": spec("down:9092", topics={"names": ["orders"]}),
    }
    index = PeerIndex(others, Resolver(ids))
    assert sorted(index.on_topic("orders", "id-k", exclude="team/self")) == ["a/same", "b/same"]


def test_within_a_namespace_an_unknown_cluster_on_either_side_still_holds_back() -> None:
    """Two policies of one namespace whose ids are not known (yet) may share the cluster:
    neither may cut past the other's groups. Across namespaces the same unknowns, even
    under the same name, are not peers."""
    resolve = Resolver({"k:9092": "id-k"})
    others = {
        "ns/unknown": spec("down:9092", topics={"names": ["orders"]}),
        "ns/same-name": spec("down:9092", topics={"names": ["orders"]}),
        "ns/known": spec("k:9092", topics={"names": ["orders"]}),
        "other/same-name": spec("down:9092", topics={"names": ["orders"]}),
    }
    index = PeerIndex(others, resolve)
    # Known asker: its namespace's unknown policies count, the other namespace's not.
    assert sorted(index.on_topic("orders", "id-k", exclude="ns/known")) == [
        "ns/same-name",
        "ns/unknown",
    ]
    # Unknown asker: every policy of its namespace on the topic.
    assert sorted(index.on_topic("orders", None, exclude="ns/unknown")) == [
        "ns/known",
        "ns/same-name",
    ]
    # The namespace may be given apart from the key.
    assert sorted(index.on_topic("orders", None, namespace="ns")) == [
        "ns/known",
        "ns/same-name",
        "ns/unknown",
    ]
    # A namespace whose name is a prefix of another's is another namespace.
    index = PeerIndex({"ns-2/p": spec("down:9092", topics={"names": ["orders"]})}, resolve)
    assert index.on_topic("orders", "id-k", exclude="ns/self") == {}


def test_the_overlap_note_names_only_the_askers_own_namespace() -> None:
    assert overlap_note("ns/me", ["ns/b", "ns/a"]) == (
        "overlaps with policy ns/a, ns/b on this topic: the more conservative cut applies to both"
    )
    assert overlap_note("ns/me", ["secret-team/payroll-purge"]) == (
        "overlaps with a policy in another namespace on this topic: the more conservative "
        "cut applies to both"
    )
    mixed = overlap_note("ns/me", ["ns/a", "x/one", "y/two"])
    assert mixed.startswith("overlaps with policy ns/a and policies in other namespaces on")


def test_no_note_reveals_another_namespace_or_its_policies_names() -> None:
    rng = random.Random(26)  # noqa: S311 - repeatable cases, not a secret
    spaces = ["ns", "ns-2", "n", "s", "other", "nss"]
    for _ in range(500):
        peers = {
            f"{rng.choice(spaces)}/{rng.choice(['p', 'guard', 'zz-top'])}{rng.randrange(9)}"
            for _ in range(rng.randrange(1, 6))
        }
        me = f"{rng.choice(spaces)}/me"
        note = overlap_note(me, peers)
        mine = me.split("/")[0]
        own = {key for key in peers if key.split("/")[0] == mine}
        assert all(key in note for key in own)
        assert set(re.findall(r"([\w-]+)/", note)) <= {mine}  # no other namespace
        own_names = {key.split("/")[1] for key in own}
        words = set(re.findall(r"[\w-]+", note))
        for key in peers - own:
            if key.split("/")[1] not in own_names:
                assert key.split("/")[1] not in words
        assert ("another namespace" in note or "other namespaces" in note) == (peers != own)


def test_another_namespaces_bound_policy_holds_back_by_its_groups_commits_only() -> None:
    """A reader of another namespace (groups_only): its time rules and minRetention hold
    nothing back, a group that never committed holds nothing unless its entry says so,
    and a committed group holds at its position, named."""
    tp = TopicPartition("t", 0)
    # Offsets for times: at 0 the log start, at 5 the high watermark (now is 6).
    facts = PartitionFacts(tp, 10, 100, {"reader": 40, "never": None}, {0: 10, 5: 100})
    mine = RetentionRules(max_retention_ms=1)  # cuts to the high watermark
    freezer = RetentionRules(consumed_groups=("never",), min_retention_ms=6, delete_before_ms=0)
    assert conservative_cut(100, facts, mine, {"r/p": Peer(freezer, True, False)}, 6).target == 100
    # The same policy where its entry lets a group without a commit hold: at the log start.
    held = conservative_cut(100, facts, mine, {"r/p": Peer(freezer, True, True)}, 6)
    assert (held.target, held.holders) == (10, (Holder("r/p", "never"),))
    # As a policy of the same namespace (not groups_only) its minRetention holds too.
    assert conservative_cut(100, facts, mine, {"r/p": Peer(freezer)}, 6).target == 10
    reader = RetentionRules(consumed_groups=("reader", "never"))
    decision = conservative_cut(100, facts, mine, {"r/q": Peer(reader, True, False)}, 6)
    assert (decision.target, decision.holders) == (40, (Holder("r/q", "reader"),))


def test_a_bound_peer_of_another_namespace_holds_by_groups_and_same_namespace_fully() -> None:
    index = PeerIndex(
        {
            "a/own": parse_policy_spec(
                {"cluster": {"clusterRef": "b"}, "topics": {"names": ["t"]}, "maxRetention": "1d"}
            ),
            "r/reader": parse_policy_spec(
                {
                    "cluster": {"clusterRef": "b"},
                    "topics": {"names": ["t"]},
                    "deleteConsumed": {"groups": ["g"]},
                }
            ),
        },
        lambda key, spec: "id-1",
    )
    found = index.on_topic("t", "id-1", exclude="a/mine")
    assert (found["a/own"].groups_only, found["r/reader"].groups_only) == (False, True)
