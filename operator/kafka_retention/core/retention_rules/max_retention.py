"""maxRetention: a hard cap on age; older records go even when unread."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.retention_rules.rule import Proposer, iso
from kafka_retention.core.specs import Shape, SpecError, duration


class MaxRetention(Proposer[int | None]):
    """Cut at the first record younger than the cap (milliseconds)."""

    name = "maxRetention"
    path = "maxRetention"
    attr = "max_retention_ms"
    shape: ClassVar[Shape] = {"maxRetention": None}
    passes_groups = True

    def parse(self, spec: Mapping[str, Any]) -> int | None:
        if spec.get("maxRetention") is None:
            return None
        max_retention = duration(spec["maxRetention"], "spec.maxRetention")
        if max_retention <= 0:
            raise SpecError("spec.maxRetention", "must be longer than zero")
        return max_retention

    def lookup_times(self, value: int | None, now_ms: int) -> tuple[int, ...]:
        return () if value is None else (now_ms - value,)

    def retention_ms(self, value: int | None) -> int | None:
        return value

    def propose(self, value: int | None, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        assert value is not None  # asked
        oldest_kept = now_ms - value
        return rules.before_timestamp(
            facts.offset_for_time(oldest_kept), facts.high_watermark, iso(oldest_kept)
        )


RULE = MaxRetention()
