"""deleteBefore (KIP-47's log.retention.min.timestamp): records older than a fixed time go,
read or not."""

from __future__ import annotations

from typing import Any

from kafka_retention.core.retention_rules.rule import BeforeTime
from kafka_retention.core.specs import parse_time


class DeleteBefore(BeforeTime):
    """Cut at the first record at or after the time (epoch milliseconds)."""

    name = "deleteBefore"
    attr = "delete_before_ms"

    def parse_value(self, raw: Any) -> int:
        return int(parse_time(raw, self.field).timestamp() * 1000)

    def cut_time(self, value: int, now_ms: int) -> int:
        return value


RULE = DeleteBefore()
