"""deleteConsumed.minRetention: a floor by time; records younger than it stay, even once
every group has read them, whichever rule proposed the cut."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.retention_rules import max_retention
from kafka_retention.core.retention_rules.rule import Floor, Values, iso
from kafka_retention.core.specs import SpecError, duration, obj


class MinRetention(Floor[int | None]):
    """Lower the cut to the first record younger than the floor (milliseconds)."""

    name = "minRetention"
    path = "deleteConsumed.minRetention"
    attr = "min_retention_ms"
    guard = "minRetention"

    def parse(self, spec: Mapping[str, Any]) -> int | None:
        # deleteConsumed itself was checked by its own rule, listed first.
        raw = obj(spec.get("deleteConsumed"), "spec.deleteConsumed").get("minRetention")
        return None if raw is None else duration(raw, self.field)

    def check(self, values: Values) -> None:
        floor, cap = values.of(self), values.of(max_retention.RULE)
        if floor is not None and cap is not None and floor > cap:
            raise SpecError(
                self.field,
                f"is longer than {max_retention.RULE.field}; records could never be deleted",
            )

    def lookup_times(self, value: int | None, now_ms: int) -> tuple[int, ...]:
        return () if value is None else (now_ms - value,)

    def lower(
        self, value: int | None, cut: rules.Cut, facts: PartitionFacts, now_ms: int
    ) -> rules.Cut:
        assert value is not None  # asked
        young_since = now_ms - value
        first_young = facts.offset_for_time(young_since)
        if first_young is None:
            return cut
        return cut.lowered(
            first_young,
            f"minRetention keeps records since {iso(young_since)} (offset {first_young})",
            self.guard,
        )


RULE = MinRetention()
