"""deleteConsumed (KIP-68, client side): cut where every listed group has committed."""

from __future__ import annotations

from typing import ClassVar

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.retention_rules.rule import GroupList, Proposer
from kafka_retention.core.specs import Shape


class DeleteConsumed(GroupList, Proposer[tuple[str, ...]]):
    """The smallest committed offset of the groups; a group without one keeps the
    partition. Its cut never passes a group, so a reader's policy (protect without
    retention) may carry it: its groups hold other namespaces' cuts back."""

    name = "deleteConsumed"
    attr = "consumed_groups"
    shape: ClassVar[Shape] = {"deleteConsumed": {"groups": None}}

    def propose(self, value: tuple[str, ...], facts: PartitionFacts, now_ms: int) -> rules.Cut:
        return rules.consumed_by(facts.committed, value, facts.log_start)


RULE = DeleteConsumed()
