"""status.topics[].cut: what each rule proposed on a topic and the guards that limited it,
counted from the plan's rows in one pass (the data `kubectl kafka-retention explain`
puts in words)."""

from __future__ import annotations

from typing import Any

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy import RetentionRules, plan_partition
from kafka_retention.core.policy_spec import TopicSelector, parse_policy_spec
from kafka_retention.core.retention_rules import registry
from kafka_retention.core.retention_rules.rule import Proposer
from kafka_retention.core.topics import classify_topics
from kafka_retention.services.policy import report

NOW = 1_800_000_000_000
HOUR = 3_600_000
SPEC = parse_policy_spec(
    {"cluster": {"bootstrapServers": "k:9092"}, "topics": {"names": ["t"]}, "maxRetention": "1d"}
)


def facts(
    partition: int = 0,
    start: int = 0,
    end: int = 100,
    committed: dict[str, int | None] | None = None,
    times: dict[int, int | None] | None = None,
) -> PartitionFacts:
    return PartitionFacts(TopicPartition("t", partition), start, end, committed or {}, times or {})


def row_of(f: PartitionFacts, policy: RetentionRules) -> PlanRow:
    """A plan row as both planners write it."""
    return plan_partition(f, policy, NOW).row(f.offsets_for_times)


def cut_of(rows: list[PlanRow], **kwargs: Any) -> dict[str, Any]:
    (topic,) = report.topic_summary([], SPEC, rows, {}, {}, {}, {}, **kwargs)
    return dict(topic["cut"])


def test_the_slowest_group_is_the_proposal_and_limits_every_partition() -> None:
    policy = RetentionRules(consumed_groups=("fast", "slow"))
    rows = [row_of(facts(p, committed={"fast": 90, "slow": 20 + p}), policy) for p in range(3)]
    cut = cut_of(rows, cut_by_topic={"t": report.TopicCut(3, 57)})
    assert cut == {
        "rule": "deleteConsumed",
        "proposed": "committed by slow",
        "partitionsCut": 3,
        "records": 57,
        "limits": [{"guard": "group", "detail": "committed by slow", "partitions": 3}],
    }


def test_a_group_without_a_commit_is_a_no_commit_guard_per_partition() -> None:
    policy = RetentionRules(consumed_groups=("a", "b"))
    rows = [
        row_of(facts(0, committed={"a": 50, "b": None}), policy),
        row_of(facts(1, committed={"a": 50, "b": 40}), policy),
    ]
    limits = cut_of(rows)["limits"]
    assert [(lim["guard"], lim["partitions"]) for lim in limits] == [("group", 1), ("noCommit", 1)]
    assert limits[1]["detail"] == "group b has no committed offset here"


def test_min_retention_counts_once_per_partition_it_lowered() -> None:
    policy = RetentionRules(max_retention_ms=2 * HOUR, min_retention_ms=HOUR)
    young = NOW - HOUR
    rows = [
        # Every record older than maxRetention: the floor holds the cut at offset 60.
        row_of(facts(0, times={NOW - 2 * HOUR: None, young: 60}), policy),
        row_of(facts(1, times={NOW - 2 * HOUR: None, young: 70}), policy),
        # No record is young here: the floor lowers nothing.
        row_of(facts(2, times={NOW - 2 * HOUR: None, young: None}), policy),
    ]
    cut = cut_of(rows)
    assert cut["rule"] == "maxRetention"
    (limit,) = cut["limits"]
    assert (limit["guard"], limit["partitions"]) == ("minRetention", 2)
    assert "minRetention keeps records since" in limit["detail"]


def test_the_high_watermark_is_a_guard_when_a_commit_is_past_it() -> None:
    policy = RetentionRules(consumed_groups=("a",))
    rows = [row_of(facts(0, end=50, committed={"a": 80}), policy)]
    guards = [lim["guard"] for lim in cut_of(rows)["limits"]]
    assert guards == ["group", "highWatermark"]


def test_peer_limits_come_from_held_back_by_and_name_no_more_than_it() -> None:
    policy = RetentionRules(consumed_groups=("a",))
    rows = [row_of(facts(p, committed={"a": 80}), policy) for p in range(4)]
    held = {
        "t": [
            report.HeldBack("analytics", 3, group="auditor"),
            report.HeldBack("ns", 1, policy="other"),
        ]
    }
    limits = cut_of(rows, held=held)["limits"]
    assert [(lim["guard"], lim["partitions"]) for lim in limits] == [
        ("group", 4),
        ("peer", 3),
        ("peer", 1),
    ]
    assert limits[1]["detail"] == (
        "held back by a policy in namespace analytics, at the committed offset of its group auditor"
    )
    assert limits[2]["detail"] == "held back by policy other of this namespace, by its own rules"


def test_skipped_topics_name_compacted_or_config_from_the_classification() -> None:
    classes = classify_topics({"c": {"cleanup.policy": "compact"}, "u": "TIMED_OUT: no answer"})
    summary = report.topic_summary([], SPEC, [], classes.problems, {}, {}, {})
    guards = {t["name"]: [lim["guard"] for lim in t["cut"]["limits"]] for t in summary}
    assert guards == {"c": ["compacted"], "u": ["config"]}
    assert all(t["cut"]["rule"] == "none" for t in summary)


def test_at_most_five_limits_most_partitions_first() -> None:
    rows: list[PlanRow] = []
    for p in range(7):
        # Group g{p} holds p+1 partitions: seven groups, each with its own guard entry.
        for _ in range(p + 1):
            rows.append(
                PlanRow(
                    "t",
                    len(rows),
                    log_start_offset=0,
                    rule="deleteConsumed",
                    reason=f"committed by g{p}",
                    reason_guard="group",
                )
            )
    limits = cut_of(rows)["limits"]
    assert [lim["detail"] for lim in limits] == [f"committed by g{p}" for p in (6, 5, 4, 3, 2)]


def test_a_forged_row_gives_only_known_names_and_bounded_sentences() -> None:
    """Rows may come back from Spark pods through ConfigMaps a tenant can write."""
    row = PlanRow.from_json(
        {
            "topic": "t",
            "partition": 0,
            "logStartOffset": 0,
            "rule": "rm -rf",
            "reason": "x" * 10_000,
            "reasonGuard": "everything",
            "notes": ["y" * 10_000, "fine"],
            "guards": ["minRetention", "bogus"],
        }
    )
    cut = cut_of([row])
    assert cut["rule"] == "none"
    assert len(cut["proposed"]) == report.MAX_SENTENCE_CHARS
    (limit,) = cut["limits"]
    assert limit["guard"] == "minRetention"
    assert len(limit["detail"]) == report.MAX_SENTENCE_CHARS


def test_partitions_cut_counts_moved_log_starts_or_a_dry_runs_targets() -> None:
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    cuts = {t0: (0, 50), t1: (10, 30)}
    moved = {t0: (0, 50), t1: (10, 10)}  # the second delete failed
    assert report.partitions_cut(cuts, moved, dry_run=False) == {"t": report.TopicCut(1, 50)}
    dry = report.partitions_cut(cuts, {t0: (0, 0), t1: (10, 10)}, dry_run=True)
    assert dry == {"t": report.TopicCut(2, 70)}


def test_guard_tags_name_every_lowering_in_order() -> None:
    cut = rules.protect_groups(rules.Cut(100, "offset 100"), {"a": 60, "b": None}, ["a", "b"], 10)
    assert cut.guards == (rules.GROUP, rules.NO_COMMIT)
    assert len(cut.guards) == len(cut.notes)


def test_topics_a_pattern_matches_and_the_binding_protects_are_named_within_its_allow() -> None:
    selector = TopicSelector(
        pattern="orders-.*|billing-.*",
        exclude=("orders-old",),
        allow=("orders-.*",),
        protect=("orders-audit", "orders-old", "billing-.*"),
    )
    cluster = ["orders-a", "orders-audit", "orders-old", "billing-x", "__orders-internal"]
    # billing-x is protected too, but outside the allow list: the namespace may not see it.
    assert selector.withheld(cluster) == ["orders-audit"]
    assert TopicSelector(names=("orders-audit",)).withheld(cluster) == []


def test_a_withheld_topic_is_listed_with_the_binding_guard_naming_the_binding() -> None:
    spec = parse_policy_spec(
        {
            "cluster": {"clusterRef": "orders-prod"},
            "topics": {"pattern": "o-.*"},
            "maxRetention": "1d",
        }
    )
    (topic,) = report.topic_summary([], spec, [], {}, {}, {}, {}, withheld=["o-audit"])
    assert topic["name"] == "o-audit"
    (limit,) = topic["cut"]["limits"]
    assert limit["guard"] == "binding"
    assert "KafkaClusterBinding orders-prod protects it" in limit["detail"]


def test_status_counts_every_deleting_rule_the_registry_knows_by_its_name() -> None:
    """A row's rule is shown as the registry names it; a name no rule has (a forged row)
    is counted as none. A new deleting rule needs no edit here to be shown."""
    proposers = [r.name for r in registry.RULES if isinstance(r, Proposer)]
    assert len(proposers) >= 3
    tally = report.CutTally()
    for name in [*proposers, "forged"]:
        tally.add(PlanRow("t", 0, 0, 10, 5, rule=name, reason=f"by {name}"))
    assert tally.rules == {**dict.fromkeys(proposers, 1), "none": 1}
