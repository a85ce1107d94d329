"""Strict tenancy for RecordErasure: the binding must grant erase, and every topic the
erasure names or may match must be one the binding allows. The fake records every read,
so "nothing was contacted" is checked, not assumed."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from kafka_retention.core.bindings import HOLDING, OPERATIONS, parse_binding
from kafka_retention.core.erasure import parse_erasure_spec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.tenancy import Refused
from tests.helpers.fakes import TenancyWorld as World

DIGEST = hashlib.sha256(b"customer-42").hexdigest()


def binding(*operations: str, **topics: Any) -> dict[str, Any]:
    """A binding letting team-a run `operations` on `topics` (allow, protect)."""
    entry: dict[str, Any] = {"namespaces": ["team-a"], "operations": list(operations)}
    if topics:
        entry["topics"] = topics
    return {
        "clusterId": "abcDEF123_-xyz",
        "connection": {"bootstrapServers": "kafka-a:9092", "clientConfigSecret": "admin"},
        "tenants": [entry],
    }


def erasure(*, fields: dict[str, Any] | None = None, **topics: Any) -> Any:
    return parse_erasure_spec(
        {
            "cluster": {"clusterRef": "orders"},
            "topics": topics or {"names": ["orders.customers"]},
            "keys": [{"sha256": DIGEST}],
            **(fields or {}),
        }
    )


CUT = {"onDeleteTopics": "cut", "acceptCollateral": True}


def test_a_cut_needs_purge_granted_too_and_is_refused_at_on_delete_topics() -> None:
    """A cut deletes every record before a matched offset, other keys' too: an
    erase-only namespace must not get purge's power through it."""
    world = World({"orders": binding("erase", allow=["orders\\..*"])})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_erasure("team-a", erasure(fields=CUT))
    assert refused.value.field == "spec.onDeleteTopics"
    assert refused.value.reason == "NotPermitted"
    assert "purge" in refused.value.message
    assert not any(r.startswith("connection/") for r in world.reads)


def test_a_cut_is_admitted_with_erase_and_purge_and_its_dry_run_with_erase_alone() -> None:
    both = World({"orders": binding("erase", "purge", allow=["orders\\..*"])})
    assert both.tenancy().admit_erasure("team-a", erasure(fields=CUT)) is not None
    erase_only = World({"orders": binding("erase", allow=["orders\\..*"])})
    dry = erasure(fields={**CUT, "dryRun": True})
    assert erase_only.tenancy().admit_erasure("team-a", dry) is not None


def test_erase_not_granted_is_refused_at_the_cluster_ref_before_any_connection() -> None:
    world = World({"orders": binding("purge", "retention", allow=[".*"])})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_erasure("team-a", erasure())
    assert refused.value.field == "spec.cluster.clusterRef"
    assert refused.value.reason == "NotPermitted"
    assert "erase" in refused.value.message
    assert world.reads == ["binding/orders"]  # the binding only: no Secret, no Kafka


def test_a_topic_outside_allow_is_refused_at_its_name() -> None:
    world = World({"orders": binding("erase", allow=["orders\\..*"])})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_erasure("team-a", erasure(names=["payments.customers"]))
    assert refused.value.field == "spec.topics.names[0]"
    assert refused.value.reason == "NotPermitted"
    assert not any(r.startswith("connection/") for r in world.reads)


def test_a_protected_topic_is_refused_at_its_name() -> None:
    world = World({"orders": binding("erase", allow=["orders\\..*"], protect=["orders\\.audit"])})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_erasure("team-a", erasure(names=["orders.customers", "orders.audit"]))
    assert refused.value.field == "spec.topics.names[1]"
    assert "protected" in refused.value.message


def test_a_pattern_under_a_binding_granting_no_topics_is_refused() -> None:
    world = World({"orders": binding("erase")})
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_erasure("team-a", erasure(pattern="orders\\..*"))
    assert refused.value.field == "spec.topics"
    assert "allow is empty" in refused.value.message


def test_an_admitted_erasure_gets_the_grant_its_pattern_is_held_to() -> None:
    world = World({"orders": binding("erase", allow=["orders\\..*"], protect=["orders\\.audit"])})
    grant = world.tenancy().admit_erasure("team-a", erasure(pattern=".*customers"))
    assert grant is not None
    assert grant.allow == ("orders\\..*",)
    assert "orders\\.audit" in grant.all_protect
    assert "erase" in grant.operations
    # Nothing past the binding was read: the connection is the caller's next step.
    assert world.reads == ["binding/orders"]


def test_open_tenancy_admits_an_inline_cluster_without_reading_anything() -> None:
    world = World({})
    request = parse_erasure_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "keys": [{"sha256": DIGEST}],
        }
    )
    assert world.tenancy("open").admit_erasure("team-a", request) is None
    assert world.reads == []


def test_strict_tenancy_refuses_an_inline_cluster_for_an_erasure() -> None:
    world = World({})
    request = parse_erasure_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "keys": [{"sha256": DIGEST}],
        }
    )
    with pytest.raises(Refused) as refused:
        world.tenancy().admit_erasure("team-a", request)
    assert refused.value.field == "spec.cluster.clusterRef"


def test_a_binding_granting_erase_parses_with_all_five_operations() -> None:
    parsed = parse_binding("orders", binding(*OPERATIONS, allow=[".*"]))
    assert "erase" in parsed.tenants[0].operations
    assert len(OPERATIONS) == 5
    only = parse_binding("orders", binding("erase", allow=[".*"]))
    assert only.tenants[0].operations == frozenset({"erase"})


def test_erase_holds_back_no_other_namespaces_cut() -> None:
    assert "erase" not in HOLDING
    grant = parse_binding("orders", binding("erase", allow=[".*"])).grant("team-a", None)
    assert grant is not None
    assert not grant.holds


def test_an_unknown_operation_is_still_refused() -> None:
    with pytest.raises(SpecError) as refused:
        parse_binding("orders", binding("erase", "forget", allow=[".*"]))
    assert refused.value.field == "spec.tenants[0].operations[1]"
