"""policiesPerNamespace admits a namespace's first policies on a binding, by name; a dry
run (the copy `kubectl kafka-retention plan` makes) ranks after every policy that cuts."""

from __future__ import annotations

from kafka_retention.core.policy_spec import PolicySpec, parse_policy_spec
from kafka_retention.services.policy.batches import _BindingRanks


def spec(dry_run: bool = False) -> PolicySpec:
    return parse_policy_spec(
        {
            "cluster": {"clusterRef": "orders-prod"},
            "topics": {"names": ["orders.created"]},
            "maxRetention": "7d",
            "dryRun": dry_run,
        }
    )


def test_a_dry_run_copy_takes_no_place_from_a_policy_that_cuts() -> None:
    real_a, copy, real_b = spec(), spec(dry_run=True), spec()
    others = {"team/a": real_a, "team/a-plan-x1y2z": copy, "team/b": real_b}
    ranks = _BindingRanks(others)
    assert ranks.before("team/a", real_a) == 0
    # By name the copy comes between a and b; by rank it comes after both.
    assert ranks.before("team/b", real_b) == 1
    assert ranks.before("team/a-plan-x1y2z", copy) == 2


def test_another_namespace_or_binding_counts_apart() -> None:
    mine, theirs = spec(), spec()
    ranks = _BindingRanks({"team/z": mine, "other/a": theirs})
    assert ranks.before("team/z", mine) == 0
