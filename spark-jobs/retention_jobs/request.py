"""What a plan run is asked to compute; JSON-serialisable so spark-submit can carry it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_retention.core.policy import RetentionRules
from kafka_retention.core.policy_spec import PolicySpec, TopicSelector


@dataclass(frozen=True)
class Connection:
    """How executors reach Kafka; client_config carries SASL/TLS settings, never logged."""

    bootstrap_servers: str
    client_config: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        keys = len(self.client_config)
        return f"Connection({self.bootstrap_servers!r}, client_config=<{keys} keys>)"


@dataclass(frozen=True)
class Scans:
    time_lag: bool = True
    unconsumed: bool = True
    tombstones: bool = False
    key_sample: int = 10  # keys (and offsets) kept per group and partition
    size_sample: int = 20  # records read at each log start to estimate bytes


@dataclass(frozen=True)
class PlanRequest:
    connection: Connection
    topics: TopicSelector
    rules: RetentionRules
    now_ms: int
    scans: Scans = field(default_factory=Scans)

    @classmethod
    def for_policy(
        cls,
        policy: PolicySpec,
        client_config: dict[str, str],
        now_ms: int,
        scans: Scans | None = None,
    ) -> PlanRequest:
        return cls(
            Connection(policy.bootstrap_servers, client_config),
            policy.topics,
            policy.rules,
            now_ms,
            scans or Scans(),
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> PlanRequest:
        raw: dict[str, Any] = json.loads(text)
        topics = raw["topics"]
        rules = raw["rules"]
        return cls(
            Connection(**raw["connection"]),
            TopicSelector(tuple(topics["names"]), topics["pattern"], tuple(topics["exclude"])),
            RetentionRules(
                consumed_groups=tuple(rules["consumed_groups"]),
                min_retention_ms=rules["min_retention_ms"],
                delete_before_ms=rules["delete_before_ms"],
                max_retention_ms=rules["max_retention_ms"],
                watched_groups=tuple(rules["watched_groups"]),
            ),
            raw["now_ms"],
            Scans(**raw["scans"]),
        )
