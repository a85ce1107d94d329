"""maxRetention: a hard cap on age; older records go even when unread."""

from __future__ import annotations

from typing import Any

from kafka_retention.core.retention_rules.rule import BeforeTime
from kafka_retention.core.specs import SpecError, duration


class MaxRetention(BeforeTime):
    """Cut at the first record younger than the cap (milliseconds)."""

    name = "maxRetention"
    attr = "max_retention_ms"

    def parse_value(self, raw: Any) -> int:
        cap = duration(raw, self.field)
        if cap <= 0:
            raise SpecError(self.field, "must be longer than zero")
        return cap

    def cut_time(self, value: int, now_ms: int) -> int:
        return now_ms - value  # the oldest record kept

    def retention_ms(self, value: int | None) -> int | None:
        return value


RULE = MaxRetention()
