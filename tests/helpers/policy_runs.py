"""A policy batch run against fakes, shared by the policy service's unit tests: a Kafka
that answers as Kafka does (FakeKafka, over FakeLogs), the status store, and builders
for specs, environments and one-policy runs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.services.policy.batches import Due, Environment, parse, run_batch
from kafka_retention.services.policy.run import PolicyRun, RunOutcome
from tests.helpers.fakes import FakeLogs, broker_refuses_delete

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)
NOW_TEXT = "2026-11-22T12:00:00Z"
T0 = TopicPartition("t", 0)


class FakeKafka(FakeLogs):
    """Offsets, commits and configs in memory, with Kafka's answers: DeleteRecords past
    the high watermark is OFFSET_OUT_OF_RANGE, on a compact-only topic POLICY_VIOLATION
    (and on one with an empty cleanup.policy before 4.2), and at or below the log start
    changes nothing."""

    def __init__(self) -> None:
        self.logs: dict[TopicPartition, list[int]] = {}
        self.commits: dict[str, dict[TopicPartition, int]] = {}
        # What each group id names; a group with commits and no entry is a consumer group.
        self.group_types: dict[str, GroupType] = {}
        self.times: dict[TopicPartition, dict[int, int]] = {}
        self.configs: dict[str, dict[str, str]] = {}
        # Timestamp of each partition's first record (ListOffsets for time 0).
        self.first_times: dict[TopicPartition, int] = {}
        # Timestamp of the record at an offset (a group's next unread record).
        self.record_times: dict[TopicPartition, dict[int, int]] = {}
        self.altered: list[tuple[str, str, str]] = []
        self.deletes: list[dict[TopicPartition, int]] = []
        self.calls: list[str] = []
        self.down = False

    def _call(self, what: str) -> None:
        self.calls.append(what)
        if self.down:
            raise KafkaUnavailable("_TRANSPORT: all brokers down")

    def cluster_id(self) -> str:
        self._call("cluster_id")
        return "fake-cluster"

    def topic_names(self) -> list[str]:
        self._call("topic_names")
        return sorted({tp.topic for tp in self.logs} | set(self.configs))

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        self._call("topic_partitions")
        return {t: sorted(tp.partition for tp in self.logs if tp.topic == t) for t in topics}

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str] | KafkaFailure]:
        self._call("topic_configs")
        return {t: self.configs.get(t, {"cleanup.policy": "delete"}) for t in topics}

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self._call("offsets_for_timestamp")
        return {tp: self.times.get(tp, {}).get(timestamp_ms, -1) for tp in tps}

    def record_times_at(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, int]:
        self._call("record_times_at")
        return {
            tp: self.record_times[tp][start]
            for tp, (start, _) in ranges.items()
            if start in self.record_times.get(tp, {})
        }

    def set_topic_config(self, topic: str, key: str, value: str) -> KafkaFailure | None:
        self._call("set_topic_config")
        self.altered.append((topic, key, value))
        self.configs.setdefault(topic, {})[key] = value
        return None

    def first_record_times(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | KafkaFailure | None]:
        self._call("first_record_times")
        return {tp: self.first_times.get(tp) for tp in tps}

    # What the cluster runs (None: unknown, so groups are read as before).
    features: ClusterFeatures | None = None

    def cluster_features(self) -> ClusterFeatures | None:
        self._call("cluster_features")
        return self.features

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        out = {}
        for group, tps in wanted.items():
            self._call(f"committed:{group}")
            default = GroupType.CONSUMER if group in self.commits else GroupType.NONE
            out[group] = GroupRead(
                self.group_types.get(group, default),
                {tp: self.commits.get(group, {}).get(tp) for tp in tps},
            )
        return out

    def average_record_bytes(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, float]:
        return dict.fromkeys(ranges, 100.0)

    def placements(self) -> dict[str, tuple[str, dict[int, frozenset[int]]]]:
        self._call("placements")
        out: dict[str, tuple[str, dict[int, frozenset[int]]]] = {}
        for tp in self.logs:
            out.setdefault(tp.topic, ("", {}))[1][tp.partition] = frozenset({1})
        return out

    def broker_configs(self) -> dict[int, dict[str, str]]:
        self._call("broker_configs")
        return {}

    def first_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], count: int
    ) -> dict[TopicPartition, list[tuple[int, str | None]]]:
        """Records exist from the log start to the high watermark, keyed key-<offset>."""
        self._call("first_keys")
        out: dict[TopicPartition, list[tuple[int, str | None]]] = {}
        for tp, (start, end) in ranges.items():
            first, hw = self.logs[tp]
            offsets = range(max(start, first), min(end, hw, start + count))
            out[tp] = [(o, f"key-{o}") for o in offsets]
        return out

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        self._call("delete_records")
        self.deletes.append(dict(cuts))
        out: dict[TopicPartition, int | KafkaFailure] = {}
        for tp, off in cuts.items():
            start, end = self.logs[tp]
            policy = self.configs.get(tp.topic, {}).get("cleanup.policy", "delete")
            if broker_refuses_delete(policy, self.features):
                out[tp] = KafkaFailure("POLICY_VIOLATION", "compact only", False)
            elif off > end or off < -1:
                out[tp] = KafkaFailure("OFFSET_OUT_OF_RANGE", f"{off} vs {end}", False)
            else:
                self.logs[tp][0] = max(start, end if off == -1 else off)
                out[tp] = self.logs[tp][0]
        return out


class Store:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)


def spec_of(**fields: Any) -> dict[str, Any]:
    return {"cluster": {"bootstrapServers": "k:9092"}, "topics": {"names": ["t"]}, **fields}


def due(store: Store, key: str = "ns/p", **fields: Any) -> Due:
    raw = spec_of(**fields)
    return Due(PolicyRun(key, dict(store.status), 1, store, lambda: NOW), raw, parse(raw))


def env(kafka: FakeKafka, spark: Any = None, line: int = 2000) -> Environment:
    return Environment(
        connection=lambda s, _ns: (s.bootstrap_servers, {}),
        connect=lambda _b, _c: kafka,
        spark=spark,
        in_process_max_partitions=line,
        retry_delay=15,
    )


def run_one(
    kafka: FakeKafka,
    store: Store,
    others: Mapping[str, PolicySpec] | None = None,
    purges: PurgeLedger | None = None,
    **fields: Any,
) -> RunOutcome:
    environment = replace(env(kafka), purges=purges)
    outcomes = run_batch([due(store, **fields)], others or {}, environment, lambda: NOW)
    return outcomes["ns/p"]


def ready(store: Store) -> dict[str, Any]:
    conditions: dict[str, dict[str, Any]] = {c["type"]: c for c in store.status["conditions"]}
    return conditions["Ready"]
