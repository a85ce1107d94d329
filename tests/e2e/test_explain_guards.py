"""What `kubectl kafka-retention explain` reads, written by the real operator: for each
topic of a RetentionPolicy, status.topics[].cut says which rule proposed the cut and which
guard limited it. Five scenarios, each checked for the guard it must name.

Each scenario also runs the plugin's renderer (`kubectl kafka-retention explain`) over the
policy object the operator wrote, and checks it says the guard in words.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.cli.plugin.explain import render_policy
from tests.helpers import tenancy
from tests.helpers.commits import commit
from tests.helpers.conditions import ready, with_reason
from tests.helpers.kafka import Kafka
from tests.helpers.kube import apply, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy, apply_policy_on, completed, ran
from tests.helpers.records import HOUR, old_then_new
from tests.helpers.topics import NO_RETENTION, cluster_id

pytestmark = pytest.mark.stack

# scenario -> (where the guard is written, the guard). "cut" is status.topics[].cut.limits
# of the scenario's topic; "condition" is the Ready condition (a spec the binding refuses
# before any run: no topic entry exists then).
EXPECTED_GUARDS: dict[str, tuple[str, str]] = {
    "lagging-group": ("cut", "group"),
    "min-retention": ("cut", "minRetention"),
    "peer": ("cut", "peer"),
    "binding": ("cut", "binding"),
    "binding-named": ("condition", "binding"),
    "compacted": ("cut", "compacted"),
}

# How `explain` says each guard (the plugin's words, written out here so that a renderer
# that named another guard fails).
GUARD_WORDS = {
    "group": "by a group's committed offset",
    "minRetention": "minRetention",
    "peer": "held back",
    "binding": "the binding refuses",
    "compacted": "topic is compacted",
}

# Strict tenancy's operator watches namespaces of this prefix (a pytest-xdist worker adds
# its number, as tests/e2e/conftest.py's prefix does).
PREFIX = "explain" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
EVERYTHING = "2100-01-01T00:00:00Z"


def explained(scenario: str, obj: dict[str, Any], *words: str) -> None:
    """`kubectl kafka-retention explain`'s text for the policy names the scenario's guard
    in words, with what it is about (a group, a namespace, a field)."""
    text = render_policy(obj)
    guard = EXPECTED_GUARDS[scenario][1]
    for expected in (GUARD_WORDS[guard], *words):
        assert expected in text, f"{scenario}: {expected!r} not in:\n{text}"


def cut_of(obj: dict[str, Any], topic: str) -> dict[str, Any]:
    topics = {t["name"]: t for t in obj["status"].get("topics") or []}
    assert topic in topics, obj["status"]
    found: dict[str, Any] = topics[topic]["cut"]
    return found


def guards(cut: dict[str, Any]) -> list[str]:
    return [limit["guard"] for limit in cut["limits"]]


def limit(cut: dict[str, Any], guard: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [lim for lim in cut["limits"] if lim["guard"] == guard]
    assert found, cut
    return found[0]


def test_a_lagging_group_is_the_proposal_and_the_guard(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 50, 1: 50})
    fast = kafka.group_at(topic, "fast", {0: 50, 1: 50})
    slow = kafka.group_at(topic, "slow", {0: 20, 1: 30})
    apply_policy_on(stack, e2e_ns, "lag", topic, deleteConsumed={"groups": [fast, slow]})
    obj = ran(stack, e2e_ns, "lag")
    explained("lagging-group", obj, slow, "on 2 partitions")
    assert log_starts(kafka.admin, topic, 2) == [20, 30]
    cut = cut_of(obj, topic)
    assert (cut["rule"], cut["proposed"], cut["partitionsCut"]) == (
        "deleteConsumed",
        f"committed by {slow}",
        2,
    )
    assert guards(cut)[0] == EXPECTED_GUARDS["lagging-group"][1]
    assert limit(cut, "group") == {
        "guard": "group",
        "detail": f"committed by {slow}",
        "partitions": 2,
    }


def test_a_min_retention_floor_is_the_guard(stack: Stack, e2e_ns: str, kafka: Kafka) -> None:
    topic = kafka.topic({0: 30}, NO_RETENTION, timestamps={0: old_then_new(20, 2 * HOUR)})
    group = kafka.group_at(topic, "reader", {0: 30})
    apply_policy_on(
        stack, e2e_ns, "young", topic, deleteConsumed={"groups": [group], "minRetention": "30m"}
    )
    obj = ran(stack, e2e_ns, "young")
    explained("min-retention", obj, "offset 20")
    assert log_starts(kafka.admin, topic, 1) == [20]
    cut = cut_of(obj, topic)
    assert cut["rule"] == "deleteConsumed"
    floor = limit(cut, EXPECTED_GUARDS["min-retention"][1])
    assert floor["partitions"] == 1
    assert "offset 20" in floor["detail"]


def test_a_compacted_topic_is_the_guard(stack: Stack, e2e_ns: str, kafka: Kafka) -> None:
    topic = kafka.topic({0: 10}, {"cleanup.policy": "compact"}, key=lambda p, i: b"k%d" % i)
    apply_policy_on(stack, e2e_ns, "compact", topic, maxRetention="1ms")
    obj = ran(stack, e2e_ns, "compact")
    explained("compacted", obj, topic)
    assert log_starts(kafka.admin, topic, 1) == [0]
    cut = cut_of(obj, topic)
    assert (cut["rule"], cut["partitionsCut"]) == ("none", 0)
    assert guards(cut) == [EXPECTED_GUARDS["compacted"][1]]
    assert "cleanup.policy=compact" in cut["limits"][0]["detail"]


@pytest.fixture(scope="module")
def strict_operator(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("explain") / "operator.log"
    yield from tenancy.strict_operator(stack, log, PREFIX)


@pytest.fixture
def spaces(stack: Stack, strict_operator: OperatorProcess) -> Iterator[tuple[str, ...]]:
    """A tenant namespace and a reader namespace under the strict operator."""
    suffix = uuid.uuid4().hex[:6]
    made = (f"{PREFIX}-team-{suffix}", f"{PREFIX}-reader-{suffix}")
    yield from tenancy.watched_namespaces(stack, strict_operator, made)


@pytest.fixture
def bindings(stack: Stack) -> Iterator[list[str]]:
    """KafkaClusterBindings the test made."""
    yield from tenancy.made_bindings(stack)


def bind(
    stack: Stack, made: list[str], kafka: Kafka, team: str, tenants: list[dict[str, Any]]
) -> dict[str, str]:
    """A KafkaClusterBinding of the stack's cluster with these tenant entries: its ref."""
    name = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
    servers = stack.kafka.bootstrap_servers
    apply(stack, tenancy.binding(name, cluster_id(kafka.admin), servers, team, tenants=tenants))
    made.append(name)
    return {"clusterRef": name}


def entry(namespace: str, operations: list[str], *topics: str) -> dict[str, Any]:
    """A tenant entry: `namespace` may run `operations` on these topics."""
    allow = [re.escape(t) for t in topics]
    return {"namespaces": [namespace], "operations": operations, "topics": {"allow": allow}}


def test_a_peer_in_another_namespace_is_the_guard_named_by_namespace_and_group(
    stack: Stack, spaces: tuple[str, ...], bindings: list[str], kafka: Kafka
) -> None:
    team, reader = spaces
    topic = kafka.topic({0: 30})
    group = f"reader-{uuid.uuid4().hex[:6]}"
    commit(kafka.bootstrap, group, topic, {0: 10})
    tenants = [entry(team, ["retention"], topic), entry(reader, ["protect"], topic)]
    ref = bind(stack, bindings, kafka, team, tenants)
    apply_policy_on(stack, reader, "reads", topic, cluster=ref, deleteConsumed={"groups": [group]})
    wait_for(stack, "retentionpolicy", reader, "reads", completed, timeout=120)
    apply_policy_on(stack, team, "trim", topic, cluster=ref, deleteBefore=EVERYTHING)

    def held(o: dict[str, Any]) -> bool:
        return any(t.get("heldBackBy") for t in o.get("status", {}).get("topics") or [])

    obj = wait_for(stack, "retentionpolicy", team, "trim", held, timeout=120)
    explained("peer", obj, f"namespace {reader}", group)
    assert log_starts(kafka.admin, topic, 1) == [10]
    cut = cut_of(obj, topic)
    assert cut["rule"] == "deleteBefore"
    peer = limit(cut, EXPECTED_GUARDS["peer"][1])
    # As far as heldBackBy names it: the namespace and the group, not the policy.
    assert peer == {
        "guard": "peer",
        "detail": f"held back by a policy in namespace {reader}, "
        f"at the committed offset of its group {group}",
        "partitions": 1,
    }
    assert "reads" not in peer["detail"]


def test_a_topic_the_binding_protects_is_the_guard_per_topic_or_in_the_condition(
    stack: Stack, spaces: tuple[str, ...], bindings: list[str], kafka: Kafka
) -> None:
    team, _ = spaces
    mine, guarded = kafka.topic({0: 20}), kafka.topic({0: 20})
    # The entry allows both topics and protects one of them.
    tenants = [entry(team, ["retention"], mine, guarded)]
    tenants[0]["topics"]["protect"] = [re.escape(guarded)]
    ref = bind(stack, bindings, kafka, team, tenants)
    pattern = f"{re.escape(mine)}|{re.escape(guarded)}"
    apply_policy(stack, team, "wide", cluster=ref, topics={"pattern": pattern}, maxRetention="1ms")
    apply_policy_on(stack, team, "named", guarded, cluster=ref, maxRetention="1ms")
    obj = ran(stack, team, "wide")
    explained("binding", obj, guarded)
    assert log_starts(kafka.admin, mine, 1) == [20]
    assert log_starts(kafka.admin, guarded, 1) == [0]
    cut = cut_of(obj, guarded)
    assert guards(cut) == [EXPECTED_GUARDS["binding"][1]]
    assert ref["clusterRef"] in cut["limits"][0]["detail"]
    # Named in the spec, the topic is refused before any run, naming the field.
    refused = wait_for(
        stack, "retentionpolicy", team, "named", with_reason("NotPermitted", "Ready"), timeout=90
    )
    explained("binding-named", refused, "spec.topics.names[0]")
    message = ready(refused)["message"]
    assert "spec.topics.names[0]" in message
    assert "protected by KafkaClusterBinding" in message
