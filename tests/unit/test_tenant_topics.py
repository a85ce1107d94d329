"""Each tenant entry owns its topics: a namespace deletes only from the topics its own
entry allows, holds another namespace's cut back only where its entry grants protect (or
retention) and only by its groups' commits, and the owner's status names who held it.

Played as the attacks of issue 44 with a tenant that has `create` on its own namespace:
a reader admitted by labels over team-orders' topics tries to wipe them (maxRetention
1ms, deleteBefore in the future), to freeze them with a group that never commits, and to
reach them from a binding entry that grants it other topics."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_retention.core.bindings import WELL_KNOWN_INTERNAL, parse_binding
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.purge import parse_spec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.policy.batches import Due, Environment, parse, run_batch
from kafka_retention.services.policy.run import PolicyRun
from kafka_retention.services.tenancy import Refused
from tests.helpers.fakes import TenancyWorld as World
from tests.helpers.paths import REPO
from tests.helpers.policy_runs import NOW, FakeKafka, Store

ORDERS = TopicPartition("orders.created", 0)
BILLING = TopicPartition("billing.invoices", 0)


def two_teams(reader_hold_uncommitted: bool = False) -> dict[str, Any]:
    """team-orders owns orders.*, team-billing owns billing.*; namespaces labelled as
    readers may hold back cuts on orders.* (protect) and nothing else."""
    reader: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"orders-readers": "true"}},
        "operations": ["protect"],
        "topics": {"allow": ["orders\\..*"]},
    }
    if reader_hold_uncommitted:
        reader["uncommittedGroupsHold"] = True
    return {
        "clusterId": "fake-cluster",  # what FakeKafka answers
        "connection": {"bootstrapServers": "kafka-a:9092"},
        "tenants": [
            {
                "namespaces": ["team-orders"],
                "operations": ["purge", "retention"],
                "topics": {"allow": ["orders\\..*"]},
            },
            {
                "namespaces": ["team-billing"],
                "operations": ["purge", "retention"],
                "topics": {"allow": ["billing\\..*"]},
            },
            reader,
        ],
    }


def world(**binding: Any) -> World:
    return World(
        {"orders": two_teams(**binding)},
        {"analytics": {"orders-readers": "true"}, "team-orders": {}, "team-billing": {}},
    )


def kafka_with_commits() -> FakeKafka:
    kafka = FakeKafka()
    kafka.logs[ORDERS] = [0, 100]
    kafka.logs[BILLING] = [0, 100]
    # The owner's group has read 80; the reader's "analytics" 30; "never-commits" nothing.
    kafka.commits = {"orders-enricher": {ORDERS: 80}, "analytics": {ORDERS: 30}}
    return kafka


def policy(**fields: Any) -> dict[str, Any]:
    return {"cluster": {"clusterRef": "orders"}, **fields}


def run(
    kafka: FakeKafka, rules: World, policies: dict[str, dict[str, Any]], due: list[str]
) -> tuple[dict[str, Any], dict[str, Store]]:
    """Run the `due` policies of `policies` (every one known to the operator)."""
    stores = {key: Store() for key in due}
    items = [
        Due(PolicyRun(k, {}, 1, stores[k], lambda: NOW), policies[k], parse(policies[k]))
        for k in due
    ]
    others = {k: parse_policy_spec(v) for k, v in policies.items()}
    env = Environment(
        connection=lambda s, _ns: ("kafka-a:9092", {}),
        connect=lambda *_: kafka,
        spark=None,
        tenancy=rules.tenancy(),
    )
    outcomes = run_batch(items, others, env, lambda: NOW)
    return outcomes, stores


def reading(group: str) -> dict[str, Any]:
    """A reader's policy over team-orders' topics, holding cuts back by `group`."""
    return policy(topics={"pattern": "orders\\..*"}, deleteConsumed={"groups": [group]})


def ready(store: Store) -> dict[str, Any]:
    found: dict[str, Any] = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    return found


OWNER = policy(topics={"names": ["orders.created"]}, deleteConsumed={"groups": ["orders-enricher"]})


def test_a_namespace_deletes_only_from_the_topics_its_own_entry_allows() -> None:
    """team-billing, bound to the same cluster, names team-orders' topic: refused before
    anything is contacted; by pattern it never selects it; nothing of orders is cut."""
    kafka = kafka_with_commits()
    policies = {
        "team-billing/named": policy(topics={"names": ["orders.created"]}, maxRetention="1ms"),
        "team-billing/wide": policy(topics={"pattern": ".*"}, maxRetention="1ms"),
    }
    kafka.times = {BILLING: {}, ORDERS: {}}
    outcomes, stores = run(kafka, world(), policies, list(policies))
    named = ready(stores["team-billing/named"])
    assert (named["reason"], outcomes["team-billing/named"].ok) == ("NotPermitted", False)
    assert "spec.topics.names[0]" in named["message"]
    assert all(ORDERS not in cut for cut in kafka.deletes)
    # ...while its own topic is cut (maxRetention past every record: to the end).
    assert kafka.deletes
    assert all(set(cut) == {BILLING} for cut in kafka.deletes)


RAISE = {"enabled": True, "max": "30d"}


@pytest.mark.parametrize(
    ("field", "rule"),
    [
        ("spec.maxRetention", {"maxRetention": "1ms"}),
        ("spec.deleteBefore", {"deleteBefore": "2100-01-01T00:00:00Z"}),
        ("spec.tombstones", {"tombstones": {"groups": ["g"], "raiseDeleteRetention": RAISE}}),
    ],
)
def test_a_reader_granted_protect_cannot_delete_or_change_the_owners_topics(
    field: str, rule: dict[str, Any]
) -> None:
    kafka = kafka_with_commits()
    reader = policy(topics={"pattern": "orders\\..*"}, **rule)
    outcomes, stores = run(kafka, world(), {"analytics/wipe": reader}, ["analytics/wipe"])
    refused = ready(stores["analytics/wipe"])
    assert (refused["reason"], outcomes["analytics/wipe"].ok) == ("NotPermitted", False)
    assert field in refused["message"]
    assert kafka.deletes == []
    assert kafka.altered == []
    assert not any(call.startswith(("topic", "offsets")) for call in kafka.calls)


def test_a_readers_group_that_never_commits_does_not_freeze_the_owner() -> None:
    kafka = kafka_with_commits()
    policies = {
        "team-orders/consumed": OWNER,
        "analytics/freeze": reading("never-commits"),
    }
    outcomes, stores = run(kafka, world(), policies, ["team-orders/consumed"])
    assert outcomes["team-orders/consumed"].ok
    assert kafka.deletes == [{ORDERS: 80}]
    topics = stores["team-orders/consumed"].status["topics"]
    assert "heldBackBy" not in topics[0]


def test_a_binding_may_let_a_readers_uncommitted_group_hold_and_status_names_it() -> None:
    kafka = kafka_with_commits()
    policies = {
        "team-orders/consumed": OWNER,
        "analytics/freeze": reading("never-commits"),
    }
    _, stores = run(kafka, world(reader_hold_uncommitted=True), policies, ["team-orders/consumed"])
    assert kafka.deletes == []  # held at the log start: nothing to cut
    topics = {t["name"]: t for t in stores["team-orders/consumed"].status["topics"]}
    assert topics["orders.created"]["heldBackBy"] == [
        {"namespace": "analytics", "group": "never-commits", "partitions": 1}
    ]


def test_a_reader_granted_protect_holds_the_owners_cut_and_is_named_in_its_status() -> None:
    kafka = kafka_with_commits()
    policies = {
        "team-orders/consumed": OWNER,
        "analytics/reads": reading("analytics"),
    }
    outcomes, stores = run(kafka, world(), policies, list(policies))
    assert kafka.deletes == [{ORDERS: 30}]  # the owner's cut, held at the reader's commit
    topics = {t["name"]: t for t in stores["team-orders/consumed"].status["topics"]}
    assert topics["orders.created"]["heldBackBy"] == [
        {"namespace": "analytics", "group": "analytics", "partitions": 1}
    ]
    # The reader's own run deletes nothing and says why.
    assert outcomes["analytics/reads"].ok
    assert "deletes nothing" in outcomes["analytics/reads"].message
    # The owner's explained cut names the peer as far as heldBackBy does.
    peers = [lim for lim in topics["orders.created"]["cut"]["limits"] if lim["guard"] == "peer"]
    assert peers == [
        {
            "guard": "peer",
            "detail": "held back by a policy in namespace analytics, "
            "at the committed offset of its group analytics",
            "partitions": 1,
        }
    ]


def test_a_namespace_without_protect_on_a_topic_holds_no_cut_there() -> None:
    """team-billing names a group on orders.* from its own binding entry (which grants
    billing.* only): refused, so it holds nothing back."""
    kafka = kafka_with_commits()
    policies = {
        "team-orders/consumed": OWNER,
        "team-billing/hold": policy(
            topics={"pattern": ".*"}, deleteConsumed={"groups": ["never-commits"]}
        ),
    }
    run(kafka, world(), policies, ["team-orders/consumed"])
    assert kafka.deletes == [{ORDERS: 80}]


def test_an_entry_without_allow_grants_no_topic() -> None:
    spec = two_teams()
    del spec["tenants"][0]["topics"]
    rules = World({"orders": spec}).tenancy()
    with pytest.raises(Refused, match=r"spec\.tenants\[0\]\.topics\.allow is empty") as refused:
        rules.admit_policy(
            "team-orders", parse_policy_spec(policy(topics={"pattern": ".*"}, maxRetention="1d"))
        )
    assert refused.value.field == "spec.topics"
    purge = {
        "cluster": {"clusterRef": "orders"},
        "partitions": [{"topic": "orders.created", "partition": 0, "offset": 10}],
    }
    with pytest.raises(Refused, match="grants this namespace no topics"):
        rules.admit_purge("team-orders", parse_spec(purge))


def test_a_purge_of_another_entrys_topic_is_refused_naming_the_field() -> None:
    purge = {
        "cluster": {"clusterRef": "orders"},
        "partitions": [{"topic": "orders.created", "partition": 0, "offset": 10}],
    }
    with pytest.raises(Refused) as refused:
        world().tenancy().admit_purge("team-billing", parse_spec(purge))
    assert refused.value.field == "spec.partitions[0].topic"
    # A reader may not purge at all (its entry grants protect only).
    with pytest.raises(Refused, match="does not allow purge"):
        world().tenancy().admit_purge("analytics", parse_spec(purge))


def test_a_binding_level_allow_is_refused_naming_where_it_moved() -> None:
    spec = {**two_teams(), "topics": {"allow": [".*"]}}
    with pytest.raises(SpecError, match=r"moved to spec\.tenants"):
        parse_binding("orders", spec)


@pytest.mark.parametrize(
    "topic",
    [
        "connect-cluster-configs",
        "connect-cluster-offsets",
        "connect-cluster-status",
        "my-connect-configs",
        "mm2-offset-syncs.east.internal",
        "east.checkpoints.internal",
        "mm2-configs.east.internal",
        "heartbeats",
        "east.heartbeats",
        "_confluent_balancer_api_state",
        "_confluent-metrics",
        "strimzi.cruisecontrol.metrics",
        "_schemas",
        "app-store-changelog",
    ],
)
def test_well_known_internal_topics_are_protected_even_where_an_entry_allows_all(
    topic: str,
) -> None:
    spec = two_teams()
    spec["tenants"][0]["topics"] = {"allow": [".*"]}
    grant = parse_binding("orders", spec).grant("team-orders", None)
    assert grant is not None
    assert "protected" in (grant.topic_refusal(topic) or "")
    assert grant.topic_refusal("orders.created") is None


def test_the_readme_lists_exactly_the_internal_topics_the_code_protects() -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- well-known-internal:start -->")[1]
    block = block.split("<!-- well-known-internal:end -->")[0]
    listed = [p.strip().strip("`") for p in " ".join(block.split()).split("`, `")]
    assert listed == list(WELL_KNOWN_INTERNAL)


# --- what a plan brings back (from Spark pods, through ConfigMaps) is a proposal -------


def forged_plan(rows: list[PlanRow], skipped: dict[str, str]) -> Any:
    from kafka_retention.core.policy import PolicyPlan

    return PolicyPlan(rows=rows, skipped=skipped)


def forged_row(tp: TopicPartition, target: int, **more: Any) -> PlanRow:
    """A row as a forged plan ConfigMap would bring it: through the plan lines' decoder."""
    return PlanRow.from_json(
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "logStartOffset": 0,
            "highWatermark": 100,
            "targetOffset": target,
            "groups": [],
            **more,
        }
    )


def apply(spec: dict[str, Any], key: str, plan: Any, kafka: FakeKafka) -> Store:
    from kafka_retention.core.overlap import PeerIndex
    from kafka_retention.services.policy import apply as policy_apply

    namespace = key.split("/", 1)[0]
    admitted = world().tenancy().admit_policy(namespace, parse_policy_spec(spec))
    store = Store()
    policy_apply.apply_plan(
        PolicyRun(key, {}, 1, store, lambda: NOW), admitted, plan, kafka, PeerIndex({}), NOW
    )
    return store


def test_forged_rows_and_skipped_topics_outside_the_policy_reach_nothing() -> None:
    """team-billing's plan comes back naming team-orders' partition and skipping
    `_schemas` and `__consumer_offsets`: none of them is cut, read or reconfigured."""
    kafka = kafka_with_commits()
    kafka.configs = {t: {"cleanup.policy": "compact"} for t in ("_schemas", "__consumer_offsets")}
    spec = policy(
        topics={"pattern": "billing\\..*"},
        deleteConsumed={"groups": ["billing"]},
        tombstones={"groups": ["g"], "raiseDeleteRetention": {"enabled": True, "max": "30d"}},
    )
    plan = forged_plan(
        [forged_row(ORDERS, 100)],
        {"_schemas": "compact-only", "__consumer_offsets": "compact-only"},
    )
    store = apply(spec, "team-billing/p", plan, kafka)
    assert kafka.deletes == []
    assert kafka.altered == []
    names = {t["name"] for t in store.status.get("topics") or []}
    assert names.isdisjoint({"orders.created", "_schemas", "__consumer_offsets"})


def test_a_rows_time_lookups_are_read_again_and_never_raise_a_cut() -> None:
    """The row claims the offset for (now - maxRetention) is the high watermark; Kafka
    says 20. The cut is 20."""
    kafka = kafka_with_commits()
    day = 86_400_000
    now_ms = int(NOW.timestamp() * 1000)
    kafka.times = {ORDERS: {now_ms - day: 20}}
    spec = policy(topics={"names": ["orders.created"]}, maxRetention="1d")
    plan = forged_plan([forged_row(ORDERS, 100, timeOffsets={str(now_ms - day): 100})], {})
    apply(spec, "team-orders/p", plan, kafka)
    assert kafka.deletes == [{ORDERS: 20}]


def test_a_topic_the_pattern_matches_and_the_entry_protects_is_shown_withheld() -> None:
    """team-orders' pattern matches orders.audit, which its entry protects: not cut, and
    listed with the binding guard; billing's topic, outside its allow, is never named."""
    kafka = kafka_with_commits()
    audit = TopicPartition("orders.audit", 0)
    kafka.logs[audit] = [0, 100]
    kafka.commits["orders-enricher"][audit] = 90
    rules = world()
    rules.bindings["orders"]["tenants"][0]["topics"]["protect"] = ["orders\\.audit"]
    policies = {
        "team-orders/all": policy(
            topics={"pattern": ".*"}, deleteConsumed={"groups": ["orders-enricher"]}
        )
    }
    _, stores = run(kafka, rules, policies, list(policies))
    assert kafka.deletes == [{ORDERS: 80}]
    topics = {t["name"]: t for t in stores["team-orders/all"].status["topics"]}
    assert set(topics) == {"orders.created", "orders.audit"}
    assert [lim["guard"] for lim in topics["orders.audit"]["cut"]["limits"]] == ["binding"]
