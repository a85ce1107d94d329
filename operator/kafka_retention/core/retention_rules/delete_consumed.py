"""deleteConsumed (KIP-68, client side): cut where every listed group has committed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.retention_rules.rule import Proposer
from kafka_retention.core.specs import Shape, SpecError, group_ids, obj


class DeleteConsumed(Proposer[tuple[str, ...]]):
    """The smallest committed offset of the groups; a group without one keeps the
    partition. Its cut never passes a group, so a reader's policy (protect without
    retention) may carry it: its groups hold other namespaces' cuts back."""

    name = "deleteConsumed"
    path = "deleteConsumed"
    attr = "consumed_groups"
    shape: ClassVar[Shape] = {"deleteConsumed": {"groups": None}}

    def parse(self, spec: Mapping[str, Any]) -> tuple[str, ...]:
        consumed = spec.get("deleteConsumed")
        if consumed is None:
            return ()
        consumed = obj(consumed, "spec.deleteConsumed")
        groups = group_ids(consumed.get("groups"), "spec.deleteConsumed.groups")
        if not groups:
            raise SpecError("spec.deleteConsumed.groups", "needs at least one group")
        return groups

    def asked(self, value: tuple[str, ...]) -> bool:
        return bool(value)

    def groups(self, value: tuple[str, ...]) -> tuple[str, ...]:
        return value

    def propose(self, value: tuple[str, ...], facts: PartitionFacts, now_ms: int) -> rules.Cut:
        return rules.consumed_by(facts.committed, value, facts.log_start)


RULE = DeleteConsumed()
