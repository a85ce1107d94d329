"""The retention rules' registry: each rule is one object, and planning, parsing, tenancy
and loss attribution take what they know of rules from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kafka_retention.core import loss
from kafka_retention.core import rules as guards
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.policy import RetentionRules, plan_partition
from kafka_retention.core.policy_spec import POLICY_FIELDS, parse_policy_spec
from kafka_retention.core.retention_rules import registry
from kafka_retention.core.retention_rules.rule import Floor, Proposer, Rule
from kafka_retention.core.specs import SpecError

TP = TopicPartition("t", 0)
NOW = 1_800_000_000_000
REPO = Path(__file__).resolve().parents[2]


def test_each_value_of_the_rules_belongs_to_exactly_one_rule() -> None:
    fields = [f.name for f in dataclasses.fields(RetentionRules)]
    owners = [rule.attr for rule in registry.RULES]
    assert sorted(owners) == sorted(fields)
    assert len({rule.name for rule in registry.RULES}) == len(registry.RULES)


@pytest.mark.parametrize("rule", registry.RULES, ids=lambda r: r.name)
def test_an_absent_field_is_a_rule_not_asked(rule: Rule[Any]) -> None:
    assert not rule.asked(rule.parse({}))
    assert rule.parse({}) == RetentionRules().of(rule)
    assert RetentionRules().asked() == ()


@pytest.mark.parametrize("rule", registry.RULES, ids=lambda r: r.name)
def test_every_rule_field_is_a_field_of_the_spec(rule: Rule[Any]) -> None:
    shape: Any = POLICY_FIELDS
    for part in rule.path.split("."):
        assert part in shape
        shape = shape[part]


def test_the_deleting_rules_are_the_proposers_and_only_the_time_rules_pass_groups() -> None:
    proposers = [r.name for r in registry.RULES if isinstance(r, Proposer)]
    assert proposers == ["deleteConsumed", "deleteBefore", "maxRetention"]
    assert [r.name for r in registry.RULES if r.passes_groups] == ["deleteBefore", "maxRetention"]
    floors = [r.guard for r in registry.RULES if isinstance(r, Floor)]
    assert floors == ["minRetention", "minRecords"]


def test_the_crd_lists_every_guard_tag_a_cut_may_carry() -> None:
    """The floors' own tags beside core.rules': a tag the CRD's enum lacked would make the
    API server refuse the status of every policy whose cut that floor limited."""
    assert set(guards.GUARDS) < set(registry.GUARDS)
    assert len(set(registry.GUARDS)) == len(registry.GUARDS)
    crd = yaml.safe_load((REPO / "crds" / "retentionpolicies.kafka-retention.io.yaml").read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    cut = status["properties"]["topics"]["items"]["properties"]["cut"]["properties"]
    enum = cut["limits"]["items"]["properties"]["guard"]["enum"]
    assert sorted(enum) == sorted(registry.GUARDS)


def test_on_a_tie_the_first_rule_listed_names_the_cut() -> None:
    policy = RetentionRules(consumed_groups=("g",), delete_before_ms=NOW - 1000)
    facts = PartitionFacts(TP, 0, 100, {"g": 40}, {NOW - 1000: 40})
    cut = plan_partition(facts, policy, NOW)
    assert (cut.target, cut.rule, cut.reason) == (40, "deleteConsumed", "committed by g")
    facts = PartitionFacts(TP, 0, 100, {"g": 39}, {NOW - 1000: 40})
    cut = plan_partition(facts, policy, NOW)
    assert (cut.target, cut.rule) == (40, "deleteBefore")


def test_a_policy_asks_for_the_rules_its_spec_names_in_the_registry_order() -> None:
    spec = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "notify": {"groups": ["n"]},
            "maxRetention": "7d",
            "deleteConsumed": {"groups": ["g"], "minRetention": "1h"},
        }
    )
    asked = [rule.name for rule in spec.rules.asked()]
    assert asked == ["deleteConsumed", "minRetention", "maxRetention", "notify"]
    assert spec.rules.groups() == ("g", "n")
    assert spec.rules.lookup_times(NOW) == (NOW - 7 * 86_400_000, NOW - 3_600_000)
    assert spec.rules.deletes()


def test_a_floor_alone_is_not_a_policy() -> None:
    """minRetention lives under deleteConsumed, so a floor alone cannot be written today;
    the registry still refuses a policy whose only rules are floors."""
    assert not RetentionRules(min_retention_ms=1000).acts()
    assert not RetentionRules(min_retention_ms=1000).deletes()
    assert RetentionRules(notify_groups=("n",)).acts()
    assert not RetentionRules(notify_groups=("n",)).deletes()


def test_the_cross_rule_check_names_the_floor() -> None:
    with pytest.raises(SpecError) as err:
        registry.check(RetentionRules(min_retention_ms=2, max_retention_ms=1))
    assert err.value.field == "spec.deleteConsumed.minRetention"
    assert "spec.maxRetention" in str(err.value)


def test_loss_attribution_names_the_rule_that_deletes_by_age() -> None:
    capped = RetentionRules(consumed_groups=("g",), max_retention_ms=60_000)
    assert loss.retention_of({"retention.ms": "120000"}, capped) == (60_000, "maxRetention")
    assert loss.retention_of({"retention.ms": "30000"}, capped) == (30_000, "brokerRetention")


def test_shapes_of_two_rules_under_one_object_merge_and_a_clash_is_refused() -> None:
    merged = registry.merged_shape([{"a": {"x": None}}, {"a": {"y": None}}, {"b": None}])
    assert merged == {"a": {"x": None, "y": None}, "b": None}
    with pytest.raises(ValueError, match="two rules define b"):
        registry.merged_shape([{"b": None}, {"b": None}])


policies = st.builds(
    RetentionRules,
    consumed_groups=st.lists(st.sampled_from(("a", "b")), unique=True).map(tuple),
    min_retention_ms=st.none() | st.integers(0, 10**6),
    delete_before_ms=st.none() | st.integers(NOW - 10**6, NOW),
    max_retention_ms=st.none() | st.integers(1, 10**6),
)


@given(st.data(), policies)
def test_floors_only_ever_lower_the_cut(data: st.DataObject, policy: RetentionRules) -> None:
    log_start = data.draw(st.integers(0, 100))
    hw = data.draw(st.integers(log_start, log_start + 100))
    committed = {g: data.draw(st.none() | st.integers(0, hw)) for g in policy.groups()}
    times = {t: data.draw(st.none() | st.integers(log_start, hw)) for t in policy.lookup_times(NOW)}
    facts = PartitionFacts(TP, log_start, hw, committed, times)
    without_floors = dataclasses.replace(
        policy, **{rule.attr: rule.parse({}) for rule, _ in policy.floors}
    )
    assert plan_partition(facts, policy, NOW).target <= (
        plan_partition(facts, without_floors, NOW).target
    )
