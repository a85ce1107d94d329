"""What the services need from the outside, as protocols: the adapters satisfy them, and
unit tests pass in-memory fakes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.erasure_scan import PartitionScan, TombstoneWrite, WrittenTombstone
from kafka_retention.core.facts import GroupRead, TopicPartition
from kafka_retention.core.failures import KafkaFailure, OffsetKind
from kafka_retention.core.orphans import Entry, LogDirIdentity
from kafka_retention.core.tiers import RemoteLog, TierOffsets


class StatusStore(Protocol):
    """A resource's status; a write the API server refuses raises
    core.failures.WriteRefused."""

    def patch(self, status: Mapping[str, Any]) -> None: ...


class PolicyStore(StatusStore, Protocol):
    """A policy's status store that remembers what it wrote (adapters.policy_status): the
    next run starts from it even before the watch delivers it back. A refused write
    raises core.failures.WriteRefused."""

    status: dict[str, Any]


# (namespace, name, status as last seen) -> the policy's store.
PolicyStores = Callable[[str, str, Mapping[str, Any]], PolicyStore]


class BlobStore(Protocol):
    """Where state too large for status goes (a purge's plan and results), by name. A
    refused save raises core.failures.WriteRefused; a damaged set on load,
    kube_objects.chunks.SinkError."""

    def save(self, suffix: str, payload: str) -> dict[str, Any]: ...
    def load(self, suffix: str) -> str | None: ...


class KafkaCutter(Protocol):
    """Enough Kafka to check a cut with fresh offsets, apply it and read it back."""

    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> Mapping[TopicPartition, int | KafkaFailure]: ...
    def log_bounds(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[
        Mapping[TopicPartition, int | KafkaFailure], Mapping[TopicPartition, int | KafkaFailure]
    ]: ...
    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> Mapping[str, GroupRead]: ...
    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> Mapping[TopicPartition, int | KafkaFailure]: ...
    def cluster_features(self) -> ClusterFeatures | None:
        """What the cluster runs; None when it cannot be read."""
        ...


class KafkaPlanner(KafkaCutter, Protocol):
    """Plus what a purge plans from without Spark: metadata, configs, times, sizes."""

    def topic_partitions(self, topics: Iterable[str]) -> Mapping[str, list[int] | KafkaFailure]: ...
    def topic_configs(
        self, topics: Iterable[str]
    ) -> Mapping[str, Mapping[str, str] | KafkaFailure]: ...
    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> Mapping[TopicPartition, int | KafkaFailure]: ...
    def average_record_bytes(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> Mapping[TopicPartition, float]: ...


class OrphanKafka(Protocol):
    """What the orphan check reads from the cluster: every topic's id and replicas, the
    brokers' settings (log.dirs, log.retention.*), and the cluster's id, which each log
    dir's meta.properties must name."""

    def placements(self) -> Mapping[str, tuple[str, Mapping[int, AbstractSet[int]]]]: ...
    def broker_configs(self) -> Mapping[int, Mapping[str, str]]: ...
    def cluster_id(self) -> str: ...


class PolicyKafka(KafkaPlanner, OrphanKafka, Protocol):
    """Plus the topic list, which RetentionPolicies select from by name and pattern;
    first-record times, which name the cause of a loss; record times at offsets, which
    give a group's time lag; one topic setting raised (tombstone safety); and the first
    keys of a range, sampled before a cut removes records a watched group has not read;
    and the id the cluster gives itself, which tells clusters apart whatever their names."""

    def topic_names(self) -> list[str]: ...
    def cluster_id(self) -> str: ...
    def first_record_times(
        self, tps: Iterable[TopicPartition]
    ) -> Mapping[TopicPartition, int | KafkaFailure | None]: ...
    def record_times_at(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> Mapping[TopicPartition, int]: ...
    def set_topic_config(self, topic: str, key: str, value: str) -> KafkaFailure | None: ...
    def first_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], count: int
    ) -> Mapping[TopicPartition, list[tuple[int, str | None]]]: ...


class BrokerVolumes(Protocol):
    """A broker's log dirs as the orphan check reaches them (adapters.broker_volumes)."""

    def identity(self, log_dir: str) -> LogDirIdentity | None: ...
    def list(self, log_dir: str) -> list[Entry]: ...
    def remove(self, log_dir: str, name: str) -> None: ...


class ErasureKafka(KafkaCutter, Protocol):
    """What a RecordErasure needs of Kafka (adapters.kafka_erasure.ErasureAdmin): which
    topics and partitions there are, how they are cleaned, where each listed key occurs,
    tombstones written with the exact key bytes found; for onDeleteTopics: cut, what a
    RecordPurge cuts with (KafkaCutter: fresh offsets, group positions, DeleteRecords),
    and the groups there are, whose positions say who has not read a match yet."""

    def cluster_id(self) -> str: ...
    def topic_names(self) -> list[str]: ...
    def topic_partitions(self, topics: Iterable[str]) -> Mapping[str, list[int] | KafkaFailure]: ...
    def topic_configs(
        self, topics: Iterable[str]
    ) -> Mapping[str, Mapping[str, str] | KafkaFailure]: ...
    def group_ids(self) -> list[str]:
        """The ids of the cluster's consumer groups (consumer and classic: the groups
        librdkafka lists), sorted."""
        ...

    def scan_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], digests: AbstractSet[str]
    ) -> Mapping[TopicPartition, PartitionScan | KafkaFailure]:
        """Every record of each range [start, end) read (uncommitted ones too) and
        matched against the digests of their keys."""
        ...

    def write_tombstones(
        self, writes: Iterable[TombstoneWrite]
    ) -> Mapping[tuple[TopicPartition, str], WrittenTombstone | KafkaFailure]:
        """A tombstone (null value) per write, to its partition exactly, with the key bytes
        read back at its key_offset and checked against its digest."""
        ...


class TieredKafka(Protocol):
    """Where a tiered topic's records are (adapters.kafka_tiers.TierReads, on KafkaAdmin):
    KIP-405's offsets per partition, the brokers' local bytes, and the remote log
    metadata's segments. Each raises core.failures.KafkaUnavailable when it cannot say."""

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> Mapping[TopicPartition, TierOffsets]:
        """Earliest local, latest tiered and earliest pending upload of each partition."""
        ...

    def local_bytes(self, topics: Iterable[str]) -> Mapping[str, int]:
        """Each topic's bytes on the brokers' disks, every replica counted."""
        ...

    def remote_log(self) -> RemoteLog:
        """Every remote segment's latest state, as the brokers recorded it."""
        ...

    def topic_ids(self, topics: Iterable[str]) -> Mapping[str, str]:
        """Each topic's id: the remote log names segments by it, and a topic deleted and
        made again under its name has a new one."""
        ...
