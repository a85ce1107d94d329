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
