"""minRecords: a replay buffer by count. The last N records of each partition stay, even
once every group has read them and whichever rule proposed the cut (beside
deleteConsumed.minRetention, the floor by age): a consumer reset or a replay after a bad
deploy always finds them. A floor: it never cuts anything itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_retention.core import rules
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.retention_rules.rule import Floor
from kafka_retention.core.specs import integer

# Kafka's offsets are int64: a buffer that long keeps every partition whole.
MAX_RECORDS = 2**63 - 1


class MinRecords(Floor[int]):
    """Lower the cut to at most highWatermark - N (0: no buffer)."""

    name = "minRecords"
    attr = "min_records"
    guard = "minRecords"

    def parse(self, spec: Mapping[str, Any]) -> int:
        raw = spec.get("minRecords")
        return 0 if raw is None else integer(raw, self.field, 0, MAX_RECORDS)

    def asked(self, value: int) -> bool:
        return value > 0

    def lower(self, value: int, cut: rules.Cut, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        # Fewer than N records: all of them stay (a cut at the log start deletes nothing).
        keep_from = max(facts.high_watermark - value, facts.log_start)
        return cut.lowered(
            keep_from,
            f"minRecords keeps the last {value} records (from offset {keep_from})",
            self.guard,
        )


RULE = MinRecords()
