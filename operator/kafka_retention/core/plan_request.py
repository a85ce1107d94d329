"""What a plan run is asked to compute; JSON-serialisable so spark-submit can carry it.

The operator writes a request with to_json and a Spark driver (in this process or in a
pod) reads it back with from_json. Both are derived from the dataclasses, so a field
added to RetentionRules, TopicSelector or Scans crosses to a pod with no codec edit: a
hand-written decoder once left a new rule field out, and pod runs silently planned with
its default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from kafka_retention.core import typed_json
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
    """Which record scans a plan runs beside the offset reads, and how much each keeps."""

    time_lag: bool = True
    unconsumed: bool = True
    tombstones: bool = False
    key_sample: int = 10  # keys (and offsets) kept per group and partition
    tombstone_sample: int = 10  # oldest tombstones (offset, time) kept per partition
    size_sample: int = 20  # records read at each log start to estimate bytes
    # How long a batch's record scans (sizes, group scans, the tombstone inventory) may
    # run before they are cancelled and the plan ends with nothing deleted: the batch
    # holds its cluster's batch slot meanwhile. A pod run's default timeout, whole.
    time_limit_s: float = 1800.0


@dataclass(frozen=True)
class PolicyRequest:
    """One policy of a batch: its id (namespace/name in the operator), topics and rules."""

    id: str
    topics: TopicSelector
    rules: RetentionRules


@dataclass(frozen=True)
class PlanRequest:
    """Plan a batch of policies on one cluster in one job, over the union of their
    partitions; each policy still gets its own plan, decided by the planning core."""

    connection: Connection
    policies: tuple[PolicyRequest, ...]
    now_ms: int
    scans: Scans = field(default_factory=Scans)

    @classmethod
    def for_policy(
        cls,
        policy: PolicySpec,
        client_config: dict[str, str],
        now_ms: int,
        scans: Scans | None = None,
        policy_id: str = "policy",
    ) -> PlanRequest:
        """A batch of one (the `plan` command, tests)."""
        return cls.for_policies(
            policy.bootstrap_servers, client_config, {policy_id: policy}, now_ms, scans
        )

    @classmethod
    def for_policies(
        cls,
        bootstrap_servers: str,
        client_config: dict[str, str],
        policies: Mapping[str, PolicySpec],
        now_ms: int,
        scans: Scans | None = None,
    ) -> PlanRequest:
        return cls(
            Connection(bootstrap_servers, client_config),
            tuple(PolicyRequest(pid, p.topics, p.rules) for pid, p in sorted(policies.items())),
            now_ms,
            scans or Scans(),
        )

    def groups(self) -> tuple[str, ...]:
        return tuple(sorted({g for p in self.policies for g in p.rules.groups()}))

    def lookup_times(self) -> tuple[int, ...]:
        return tuple(sorted({t for p in self.policies for t in p.rules.lookup_times(self.now_ms)}))

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> PlanRequest:
        request = typed_json.decode(cls, json.loads(text))
        assert isinstance(request, PlanRequest)
        return request
