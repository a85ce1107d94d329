"""deleteBefore (KIP-47's log.retention.min.timestamp): records older than a fixed time go,
read or not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.retention_rules.rule import Proposer, iso
from kafka_retention.core.specs import Shape, parse_time


class DeleteBefore(Proposer[int | None]):
    """Cut at the first record at or after the time (epoch milliseconds)."""

    name = "deleteBefore"
    path = "deleteBefore"
    attr = "delete_before_ms"
    shape: ClassVar[Shape] = {"deleteBefore": None}
    passes_groups = True

    def parse(self, spec: Mapping[str, Any]) -> int | None:
        if spec.get("deleteBefore") is None:
            return None
        when = parse_time(spec["deleteBefore"], "spec.deleteBefore")
        return int(when.timestamp() * 1000)

    def lookup_times(self, value: int | None, now_ms: int) -> tuple[int, ...]:
        return () if value is None else (value,)

    def propose(self, value: int | None, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        assert value is not None  # asked
        return rules.before_timestamp(
            facts.offset_for_time(value), facts.high_watermark, iso(value)
        )


RULE = DeleteBefore()
