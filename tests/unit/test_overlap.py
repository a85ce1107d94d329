"""The overlap rule's pure parts: who overlaps on a topic, and the conservative cut."""

from __future__ import annotations

from typing import Any

from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.overlap import PeerIndex, conservative_cut
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
        "ns/slow": RetentionRules(consumed_groups=("slow",)),
        "ns/mid": RetentionRules(consumed_groups=("mid",)),
    }
    decision = conservative_cut(90, facts, mine, peers, now_ms=0)
    assert decision.target == 30
    assert decision.held_back_by == ("ns/mid", "ns/slow")  # each lowered it in turn
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
    # An asker whose own cluster is unknown is held back by every peer on the topic.
    assert list(index.on_topic("orders", None)) == ["ns/b"]
