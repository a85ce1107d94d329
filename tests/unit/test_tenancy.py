"""Strict tenancy: what a namespace may name, and what its KafkaClusterBinding decides.

Each test plays a tenant with `create` on one namespace trying to reach past its binding;
the fakes record every read, so "nothing was contacted" is checked, not assumed."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from kafka_retention.core.bindings import BindingUnavailable, parse_binding, strict_refusal
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.policy_spec import UNBOUND, parse_policy_spec
from kafka_retention.core.purge import parse_spec
from kafka_retention.core.specs import SpecError, labels
from kafka_retention.services import purge as service
from kafka_retention.services.policy.batches import Due, Environment, parse, run_batch
from kafka_retention.services.policy.run import PolicyRun
from kafka_retention.services.tenancy import (
    ClusterIdMismatch,
    Refused,
    check_cluster_id,
)
from tests.helpers.fakes import TenancyWorld as World

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


EVERY_TOPIC: Any = {"allow": [".*"]}


def binding_spec(**more: Any) -> dict[str, Any]:
    """A binding for team-a. Tenant entries that do not say which topics they grant are
    given every topic, so that tests about other rules need not repeat it; an entry with
    `"topics": None` is left without topics (deny by default)."""
    spec = {
        "clusterId": "abcDEF123_-xyz",
        "connection": {"bootstrapServers": "kafka-a:9092", "clientConfigSecret": "admin"},
        "tenants": [{"namespaces": ["team-a"], "operations": ["purge", "retention"]}],
        **more,
    }
    tenants = []
    for tenant in spec["tenants"]:
        tenant = {"topics": EVERY_TOPIC, **tenant}
        if tenant["topics"] is None:
            del tenant["topics"]
        tenants.append(tenant)
    return {**spec, "tenants": tenants}


def team_a(*operations: str, **topics: Any) -> list[dict[str, Any]]:
    """spec.tenants with one entry: team-a, `operations` on `topics` (allow, protect)."""
    return [{"namespaces": ["team-a"], "operations": list(operations), "topics": topics}]


def bound_purge(**more: Any) -> dict[str, Any]:
    return {
        "cluster": {"clusterRef": "orders"},
        "partitions": [{"topic": "orders", "partition": 0, "offset": 10}],
        **more,
    }


# --- strict tenancy refuses every inline way of naming a cluster ----------------------


@pytest.mark.parametrize(
    ("cluster", "field"),
    [
        ({"bootstrapServers": "victim:9092"}, "spec.cluster.bootstrapServers"),
        ({"strimzi": {"kafka": "victim", "namespace": "team-b"}}, "spec.cluster.strimzi"),
        (
            {"clusterRef": "orders", "clientConfigSecret": "team-b-admin"},
            "spec.cluster.clientConfigSecret",
        ),
        (
            {"clusterRef": "orders", "brokers": {"access": "exec", "namespace": "team-b"}},
            "spec.cluster.brokers",
        ),
        ({}, "spec.cluster.clusterRef"),
    ],
)
def test_strict_tenancy_refuses_a_cluster_named_inline_naming_the_field(
    cluster: dict[str, Any], field: str
) -> None:
    world = World({"orders": binding_spec()})
    with pytest.raises(Refused) as refused:
        world.tenancy().check_spec({"cluster": cluster})
    assert refused.value.field == field
    assert refused.value.reason == "NotPermitted"
    assert world.reads == []  # nothing read, let alone contacted


def test_a_spec_without_any_cluster_is_refused_under_strict_tenancy() -> None:
    refusal = strict_refusal({})
    assert refusal is not None
    assert refusal.field == "spec.cluster.clusterRef"


def test_open_tenancy_keeps_the_inline_forms() -> None:
    world = World({})
    world.tenancy("open").check_spec({"cluster": {"bootstrapServers": "k:9092"}})
    request = parse_spec(bound_purge(cluster={"bootstrapServers": "k:9092"}))
    assert world.tenancy("open").admit_purge("team-a", request) is None
    assert world.reads == []


def test_a_binding_cannot_be_combined_with_inline_fields_even_in_open_tenancy() -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(bound_purge(cluster={"clusterRef": "orders", "bootstrapServers": "x:1"}))
    assert err.value.field == "spec.cluster.bootstrapServers"


# --- the binding admits namespaces, operations and topics -----------------------------


def test_a_namespace_the_binding_does_not_name_is_refused_before_any_connection() -> None:
    world = World({"orders": binding_spec()})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_purge("team-b", parse_spec(bound_purge()))
    assert refused.value.field == "spec.cluster.clusterRef"
    assert "does not admit namespace team-b" in str(refused.value)
    assert world.reads == ["binding/orders"]


def test_a_namespace_is_admitted_by_its_labels_only_when_all_match() -> None:
    spec = binding_spec(
        tenants=[
            {
                "namespaceSelector": {"matchLabels": {"team": "a", "tier": "prod"}},
                "operations": ["purge"],
            }
        ]
    )
    world = World({"orders": spec}, {"ns-1": {"team": "a", "tier": "prod"}, "ns-2": {"team": "a"}})
    assert world.tenancy().admit_purge("ns-1", parse_spec(bound_purge())) is not None
    with pytest.raises(Refused):
        world.tenancy().admit_purge("ns-2", parse_spec(bound_purge()))
    with pytest.raises(Refused):  # a namespace that does not exist has no labels
        world.tenancy().admit_purge("ns-3", parse_spec(bound_purge()))


def test_labels_are_not_read_when_no_tenant_selects_by_them() -> None:
    world = World({"orders": binding_spec()})
    world.tenancy().admit_purge("team-a", parse_spec(bound_purge()))
    assert not any(r.startswith("namespace/") for r in world.reads)


def test_an_operation_the_binding_does_not_grant_is_refused_naming_the_field() -> None:
    spec = binding_spec(tenants=[{"namespaces": ["team-a"], "operations": ["retention"]}])
    world = World({"orders": spec})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_purge("team-a", parse_spec(bound_purge()))
    assert "does not allow purge" in str(refused.value)


def test_a_missing_or_broken_binding_is_unavailable_and_retried() -> None:
    world = World({"broken": {"clusterId": "x"}})
    with pytest.raises(BindingUnavailable, match="no KafkaClusterBinding orders"):
        world.tenancy().admit_purge("team-a", parse_spec(bound_purge()))
    with pytest.raises(BindingUnavailable, match=r"spec\.connection"):
        world.tenancy().admit_purge(
            "team-a", parse_spec(bound_purge(cluster={"clusterRef": "broken"}))
        )


@pytest.mark.parametrize(
    ("topic", "why"),
    [
        ("billing", "not among the topics"),
        ("orders-secret", "protected"),
        ("__consumer_offsets", "internal"),
        ("_schemas", "protected"),
        ("connect-offsets", "protected"),
        ("app-store-changelog", "protected"),
        ("app-agg-repartition", "protected"),
    ],
)
def test_a_purge_naming_a_topic_the_binding_does_not_allow_is_refused(topic: str, why: str) -> None:
    spec = binding_spec(
        tenants=team_a(
            "purge",
            allow=["orders.*", "_schemas", ".*-changelog", ".*connect.*", ".*-repartition", "__.*"],
            protect=["orders-secret"],
        )
    )
    world = World({"orders": spec})
    purge = bound_purge(
        partitions=[
            {"topic": "orders", "partition": 0, "offset": 5},
            {"topic": topic, "partition": 3, "offset": 5},
        ],
        allowInternalTopics=True,
    )
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_purge("team-a", parse_spec(purge))
    assert refused.value.field == "spec.partitions[1].topic"
    assert why in str(refused.value)
    assert not any(r.startswith("connection/") for r in world.reads)


def test_well_known_internal_topics_can_be_lifted_by_the_binding() -> None:
    spec = binding_spec(topics={"protectWellKnownInternal": False})
    grant = parse_binding("orders", spec).grant("team-a", None)
    assert grant is not None
    assert grant.topic_refusal("app-agg-repartition") is None
    assert grant.topic_refusal("__consumer_offsets") is not None


def test_a_policy_pattern_never_selects_topics_the_binding_does_not_allow() -> None:
    spec = binding_spec(
        tenants=team_a("retention", allow=["team-a\\..*"], protect=["team-a\\.keep"])
    )
    world = World({"orders": spec})
    policy = parse_policy_spec(
        {"cluster": {"clusterRef": "orders"}, "topics": {"pattern": ".*"}, "maxRetention": "1d"}
    )
    admitted = world.tenancy().admit_policy("team-a", policy)
    chosen = admitted.topics.select(
        ["team-a.x", "team-a.keep", "team-b.x", "_schemas", "team-a.s-changelog", "__x"]
    )
    assert chosen == ["team-a.x"]
    assert admitted.cluster_id == "abcDEF123_-xyz"


def test_a_policy_naming_a_topic_the_binding_does_not_allow_is_refused() -> None:
    spec = binding_spec(tenants=team_a("retention", allow=["team-a\\..*"]))
    world = World({"orders": spec})
    policy = parse_policy_spec(
        {
            "cluster": {"clusterRef": "orders"},
            "topics": {"names": ["team-a.x", "team-b.x"]},
            "maxRetention": "1d",
        }
    )
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_policy("team-a", policy)
    assert refused.value.field == "spec.topics.names[1]"


def test_policies_past_the_namespace_quota_are_refused() -> None:
    world = World({"orders": binding_spec(limits={"policiesPerNamespace": 2})})
    policy = parse_policy_spec(
        {"cluster": {"clusterRef": "orders"}, "topics": {"names": ["t"]}, "maxRetention": "1d"}
    )
    world.tenancy().admit_policy("team-a", policy, peers_before=1)
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_policy("team-a", policy, peers_before=2)
    assert refused.value.reason == "QuotaExceeded"


# --- orphan cleanup: brokers and floors come from the binding -------------------------


def orphan_policy(**orphans: Any) -> Any:
    return parse_policy_spec(
        {
            "cluster": {"clusterRef": "orders"},
            "orphanPartitions": {"enabled": True, **orphans},
        }
    )


def test_orphan_cleanup_takes_the_bindings_brokers() -> None:
    spec = binding_spec(
        tenants=[{"namespaces": ["team-a"], "operations": ["orphanCleanup"]}],
        brokers={"namespace": "kafka", "podSelector": {"matchLabels": {"app": "kafka"}}},
    )
    policy = orphan_policy(removalDelay="2h", minAge="2h")
    assert policy.orphans is not None
    assert policy.orphans.brokers.access == UNBOUND
    admitted = World({"orders": spec}).tenancy().admit_policy("team-a", policy)
    assert admitted.orphans is not None
    brokers = admitted.orphans.brokers
    assert (brokers.access, brokers.namespace, brokers.match_labels) == (
        "exec",
        "kafka",
        (("app", "kafka"),),
    )


@pytest.mark.parametrize(
    ("orphans", "field"),
    [
        ({"removalDelay": "0s", "minAge": "2h"}, "spec.orphanPartitions.removalDelay"),
        ({"removalDelay": "2h", "minAge": "1ms"}, "spec.orphanPartitions.minAge"),
    ],
)
def test_orphan_delays_below_the_bindings_floor_are_refused(
    orphans: dict[str, str], field: str
) -> None:
    spec = binding_spec(
        tenants=[{"namespaces": ["team-a"], "operations": ["orphanCleanup"]}],
        brokers={"namespace": "kafka", "podSelector": {"matchLabels": {"app": "kafka"}}},
    )
    with pytest.raises(Refused) as refused:
        World({"orders": spec}).tenancy().admit_policy("team-a", orphan_policy(**orphans))
    assert refused.value.field == field


def test_orphan_cleanup_needs_the_operation_and_brokers_in_the_binding() -> None:
    world = World({"orders": binding_spec()})  # purge and retention only, no brokers
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_policy("team-a", orphan_policy(removalDelay="2h"))
    assert refused.value.field == "spec.orphanPartitions"
    spec = binding_spec(tenants=[{"namespaces": ["team-a"], "operations": ["orphanCleanup"]}])
    with pytest.raises(Refused, match="names no brokers"):
        World({"orders": spec}).tenancy().admit_policy("team-a", orphan_policy(removalDelay="2h"))


# --- the cluster must be the one the binding names ------------------------------------


def test_a_cluster_answering_with_another_id_is_refused() -> None:
    check_cluster_id("orders", "abc", "abc")
    check_cluster_id(None, None, "anything")  # open tenancy: nothing to compare
    with pytest.raises(ClusterIdMismatch):
        check_cluster_id("orders", "abc", "xyz")


# --- label keys and values are checked before a selector is built ---------------------


@pytest.mark.parametrize(
    "raw",
    [{"foo!": "bar"}, {"app": "a,b=c"}, {"app": "x" * 64}, {"": "x"}, {"a b": "c"}, {"app": 1}],
)
def test_labels_that_would_change_a_selector_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(SpecError):
        labels(raw, "podSelector.matchLabels")


def test_valid_labels_pass_as_sorted_pairs() -> None:
    assert labels({"b": "2", "example.com/a": ""}, "m") == (("b", "2"), ("example.com/a", ""))


# --- the services: nothing is contacted for a refused resource ------------------------


class Store:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        raise AssertionError("nothing may be stored for a refused purge")

    def load(self, suffix: str) -> str | None:
        return None


def test_a_refused_purge_fails_naming_the_field_and_never_connects() -> None:
    world = World({"orders": binding_spec()})
    rules = world.tenancy()
    store = Store()
    connected: list[Any] = []

    def admit(spec: Mapping[str, Any], request: Any) -> int:
        rules.check_spec(spec)
        rules.admit_purge("team-b", request)
        return 1

    outcome = service.reconcile(
        service.Purge(
            spec=bound_purge(),
            status={},
            generation=1,
            store=store,
            blobs=store,
            connect=connected.append,  # type: ignore[arg-type]
            now=lambda: NOW,
            admit=admit,
        )
    )
    assert connected == []
    assert outcome.invalid_field == "spec.cluster.clusterRef"
    assert store.status["phase"] == "Failed"
    ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
    assert ready["reason"] == "NotPermitted"


def test_refused_policies_never_reach_the_connection_of_their_batch() -> None:
    world = World({"orders": binding_spec()})
    asked: list[str] = []

    def connection(*_: Any) -> tuple[str, dict[str, str]]:
        asked.append("connection")
        raise AssertionError("no connection for refused policies")

    env = Environment(
        connection=connection,
        connect=lambda *_: (_ for _ in ()).throw(AssertionError("no connect")),
        spark=None,
        tenancy=world.tenancy(),
    )
    stores = {key: Store() for key in ("team-b/p", "team-a/inline")}
    bound = {"cluster": {"clusterRef": "orders"}, "topics": {"names": ["t"]}, "maxRetention": "1d"}
    inline = {
        "cluster": {"bootstrapServers": "victim:9092"},
        "topics": {"names": ["t"]},
        "maxRetention": "1d",
    }
    items = [
        Due(PolicyRun("team-b/p", {}, 1, stores["team-b/p"], lambda: NOW), bound, parse(bound)),
        Due(
            PolicyRun("team-a/inline", {}, 1, stores["team-a/inline"], lambda: NOW),
            inline,
            parse(inline),
        ),
    ]
    outcomes = run_batch(items, {}, env, lambda: NOW)
    assert asked == []
    assert outcomes["team-a/inline"].invalid_field == "spec.cluster.bootstrapServers"
    assert outcomes["team-b/p"].reason == "NotPermitted"
    for store in stores.values():
        ready = {c["type"]: c for c in store.status["conditions"]}["Ready"]
        assert (ready["status"], ready["reason"]) == ("False", "NotPermitted")


def test_another_namespaces_kafkauser_secret_is_not_read_without_its_consent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Open tenancy: a RetentionPolicy in team-a names team-b's KafkaUser. The user has
    not consented, so its Secret (the credentials) is never even read."""
    from kafka_retention.adapters import kube_clusters as kube
    from kafka_retention.core.strimzi import StrimziRef

    objects = {
        ("kafkas", "team-b", "victim"): {"metadata": {"name": "victim"}},
        ("kafkausers", "team-b", "admin"): {"metadata": {"name": "admin", "annotations": {}}},
    }
    secrets_read: list[str] = []

    def secret(ns: str, name: str) -> dict[str, str]:
        secrets_read.append(f"{ns}/{name}")
        return {}

    monkeypatch.setattr(
        kube, "_strimzi_object", lambda plural, ns, name: objects.get((plural, ns, name))
    )
    monkeypatch.setattr(kube, "_secret_data", secret)
    ref = StrimziRef("victim", "team-b", None, "admin")
    with pytest.raises(kube.ClusterUnresolved, match="does not allow namespace team-a"):
        kube.read_strimzi(ref, "team-a")
    assert not any(name.endswith("/admin") for name in secrets_read)


@pytest.mark.parametrize(
    ("binding", "config", "in_pods"),
    [
        ("orders", {"sasl.password": "secret"}, False),
        ("orders", {}, True),
        (None, {"sasl.password": "secret"}, True),
    ],
)
def test_a_bindings_credentials_never_go_to_pods_in_a_tenant_namespace(
    monkeypatch: pytest.MonkeyPatch, binding: str | None, config: dict[str, str], in_pods: bool
) -> None:
    """Pod runs happen in the policy's namespace, where the tenant may exec into pods;
    a bound batch with credentials is planned in the operator's own process instead."""
    from dataclasses import replace

    from kafka_retention.adapters import spark
    from kafka_retention.config import SparkConfig
    from kafka_retention.core.policy_spec import Batch, Member

    where: list[str] = []

    def ran(place: str) -> Any:
        def record(*_: Any, **__: Any) -> dict[str, Any]:
            where.append(place)
            return {}

        return record

    monkeypatch.setattr(spark, "local_session", lambda *_, **__: None)
    monkeypatch.setattr(spark, "plan_in_pods", ran("pods"))
    policy = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "maxRetention": "1d",
        }
    )
    member = Member("team-a/p", replace(policy, binding=binding), "uid", 1)
    planner = spark.SparkBatchPlanner(SparkConfig(mode="kubernetes"), ran("local"))
    planner(Batch([member], "k:9092", config, 0))
    assert where == (["pods"] if in_pods else ["local"])


def unreachable_cluster(world: World) -> Environment:
    """A batch environment whose cluster cannot be reached: a batch stops there, after
    tenancy has admitted (or refused) each policy."""

    def unreachable(*_: Any) -> tuple[str, dict[str, str]]:
        raise KafkaUnavailable("no broker (the test stops the batch here)")

    return Environment(
        connection=unreachable,
        connect=lambda *_: pytest.fail("not reached"),
        spark=None,
        tenancy=world.tenancy(),
    )


def test_a_batch_reads_its_binding_once_however_many_policies_share_it() -> None:
    """A thousand policies on one binding are admitted at one moment: one read of the
    binding (and of the namespace's labels), not one a policy and tick."""
    spec = binding_spec(
        tenants=[{"namespaceSelector": {"matchLabels": {"team": "a"}}, "operations": ["retention"]}]
    )
    world = World({"orders": spec}, {"team-a": {"team": "a"}})

    env = unreachable_cluster(world)
    raw = {"cluster": {"clusterRef": "orders"}, "topics": {"names": ["t"]}, "maxRetention": "1d"}
    items = [
        Due(PolicyRun(f"team-a/p{i:04d}", {}, 1, Store(), lambda: NOW), raw, parse(raw))
        for i in range(1000)
    ]
    outcomes = run_batch(items, {}, env, lambda: NOW)
    assert {o.reason for o in outcomes.values()} == {"KafkaUnavailable"}
    assert world.reads == ["binding/orders", "namespace/team-a"]


def test_only_the_first_policies_by_name_fit_the_namespace_quota_in_a_batch() -> None:
    world = World({"orders": binding_spec(limits={"policiesPerNamespace": 2})})

    env = unreachable_cluster(world)
    raw = {"cluster": {"clusterRef": "orders"}, "topics": {"names": ["t"]}, "maxRetention": "1d"}
    keys = ["team-a/c", "team-a/a", "team-a/b", "team-b/z"]
    others = {key: parse_policy_spec(raw) for key in keys}
    items = [Due(PolicyRun(key, {}, 1, Store(), lambda: NOW), raw, parse(raw)) for key in keys]
    outcomes = run_batch(items, others, env, lambda: NOW)
    assert {key: o.reason for key, o in outcomes.items()} == {
        "team-a/a": "KafkaUnavailable",
        "team-a/b": "KafkaUnavailable",
        "team-a/c": "QuotaExceeded",
        "team-b/z": "NotPermitted",  # the binding does not admit team-b at all
    }


def test_a_policy_its_binding_refuses_holds_back_no_other_tenants_cut() -> None:
    """Team A names a binding that does not admit it (or none at all), with a pattern
    matching every topic and a group that never commits: refused, it must not count as an
    overlapping policy of team B's, or team B's cuts would be held at the log start."""
    from kafka_retention.services.cluster_ids import ClusterIds
    from kafka_retention.services.policy.batches import _admitted, _BindingRanks

    spec = binding_spec(tenants=[{"namespaces": ["team-b"], "operations": ["retention"]}])
    rules = World({"orders": spec}).tenancy().once()

    def policy(ref: str, **rules_: Any) -> Any:
        return parse_policy_spec({"cluster": {"clusterRef": ref}, **rules_})

    evil = {"topics": {"pattern": ".*"}, "deleteConsumed": {"groups": ["nobody"]}}
    others = {
        "team-a/evil": policy("orders", **evil),
        "team-a/made-up": policy("no-such-binding", **evil),
        "team-b/good": policy("orders", topics={"names": ["t"]}, maxRetention="1d"),
    }
    admitted = _admitted(rules, others, _BindingRanks(others))
    assert sorted(admitted) == ["team-b/good"]

    looked_up: list[str] = []

    def connect(*_: Any) -> Any:
        looked_up.append("connect")
        raise AssertionError("a bound policy's cluster id comes from its binding")

    env = Environment(
        connection=lambda *_: ("", {}),
        connect=lambda *_: None,  # type: ignore[arg-type]
        spark=None,
        cluster_ids=ClusterIds(lambda *_: ("", {}), connect),
    )
    index = env.peers(admitted)
    assert index.cluster("team-b/good", admitted["team-b/good"]) == "abcDEF123_-xyz"
    assert looked_up == []


def test_the_bindings_min_age_floor_holds_when_the_policy_leaves_min_age_to_the_broker() -> None:
    from kafka_retention.services.watch.orphans import _min_age

    spec = binding_spec(
        tenants=[{"namespaces": ["team-a"], "operations": ["orphanCleanup"]}],
        brokers={"namespace": "kafka", "podSelector": {"matchLabels": {"app": "kafka"}}},
        orphanCleanup={"minAge": "7d"},
    )
    admitted = World({"orders": spec}).tenancy().admit_policy("team-a", orphan_policy())
    assert admitted.orphans is not None
    one_minute = {"log.retention.ms": "60000"}
    assert _min_age(admitted.orphans, one_minute) == 7 * 86_400_000
    assert _min_age(admitted.orphans, {"log.retention.hours": "720"}) == 720 * 3_600_000


def test_a_bound_resources_cluster_id_is_its_bindings_and_nothing_is_contacted() -> None:
    """Loss blame asks which cluster a RecordPurge was on: for a bound one the binding
    says, without its Secret or a connection, and for a namespace it does not admit
    there is no answer at all."""
    from kafka_retention.core.specs import ClusterRef

    world = World({"orders": binding_spec()})
    rules = world.tenancy()
    assert rules.bound_cluster_id("team-a", ClusterRef("", binding="orders")) == "abcDEF123_-xyz"
    assert rules.bound_cluster_id("team-b", ClusterRef("", binding="orders")) is None
    assert rules.bound_cluster_id("team-a", ClusterRef("", binding="missing")) is None
    assert not any(r.startswith("connection/") for r in world.reads)


def test_a_batchs_client_config_stays_out_of_a_log_line_or_traceback() -> None:
    """A batch formatted with %r (logging, a traceback's locals) names its policies and
    cluster, never the bound credentials it carries."""
    from kafka_retention.core.policy_spec import Batch, Member

    policy = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "maxRetention": "1d",
        }
    )
    secret = "hunter2-s3cret"
    batch = Batch([Member("team-a/p", policy)], "k:9092", {"sasl.password": secret}, 0)
    shown = f"{batch!r}"
    assert secret not in shown
    assert "team-a/p" in shown
    assert "k:9092" in shown
