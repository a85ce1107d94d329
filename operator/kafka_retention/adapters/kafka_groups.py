"""Where groups are, for the Kafka adapter: which type each named group is and its
position, consumer and classic groups through librdkafka (a consumer handle's committed
offsets), share and streams groups through the group reader (Kafka's Java Admin).

KafkaAdmin takes these methods from GroupReads; they need only its client, its
connection's properties and its timeout."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupType, KafkaException
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient

from kafka_retention.adapters import group_reader
from kafka_retention.adapters.kafka_calls import connection_key, failure, wait
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import KafkaUnavailable
from kafka_retention.core.java_client import Unmappable

# Partitions per ListConsumerGroupOffsets request (KafkaAdmin.committed).
COMMITTED_PER_REQUEST = 5_000
# Consumer groups read at once, each through its own consumer handle: a purge or batch
# naming several groups waits for the slowest, not for their sum.
GROUPS_AT_ONCE = 8
# How long one read of a cluster's features serves every caller with the same connection:
# they change only when an administrator finalizes a new level (an upgrade), and every
# policy run and purge asks. A failed read is remembered for less, so an unreachable
# cluster or a missing reader costs one wait a minute, not one a caller.
FEATURES_FRESH_S = 300.0
FEATURES_FAILED_S = 60.0
# Connection digest -> (when read, what was read; None: the read failed).
_features: dict[str, tuple[float, ClusterFeatures | None]] = {}
_features_lock = threading.Lock()
log = logging.getLogger(__name__)


class GroupReads:
    """Group types and positions; mixed into KafkaAdmin, which sets these attributes."""

    _admin: AdminClient
    _bootstrap: str
    _client_config: dict[str, str]
    _config: dict[str, Any]
    _timeout: float

    def _unavailable(self, message: str) -> KafkaUnavailable:
        raise NotImplementedError

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> dict[str, GroupRead]:
        """Each group's type and position on its partitions, whatever the type: the
        committed offset of a consumer, classic or streams group, the share-partition
        start offset of a share group; None where it has none.

        The type is discovered, never declared. Groups librdkafka lists as consumer or
        classic groups are read here (`committed`); the rest, share and streams groups and
        ids no group has, go to the group reader (Kafka's Java Admin; librdkafka has no
        share- or streams-group admin calls). An id no group has is read as before, as a
        consumer group that never committed (the consumer handle sees a commit that
        landed since). With no reader installed, a group that is not a listed consumer
        group cannot be read, and this raises rather than guess."""
        asked = {g: sorted(set(tps)) for g, tps in wanted.items()}
        if not asked:
            return {}
        listed = self._consumer_group_types()
        out: dict[str, GroupRead] = {}
        others = {g: tps for g, tps in asked.items() if g not in listed}
        if others:
            out.update(self._read_with_reader(others))
        mine = [g for g in asked if g not in out or out[g].type is GroupType.NONE]
        if mine:
            with ThreadPoolExecutor(min(GROUPS_AT_ONCE, len(mine))) as pool:
                read = list(pool.map(lambda g: self.committed(g, asked[g]), mine))
            for group, positions in zip(mine, read, strict=True):
                out[group] = GroupRead(listed.get(group, GroupType.NONE), positions)
        return out

    def cluster_features(self) -> ClusterFeatures | None:
        """What the cluster runs (finalized feature levels: metadata.version, group.version,
        share.version, streams.version), or None when it cannot be read (no group reader
        installed, or the cluster did not answer): callers then go on as before. One read
        serves every caller with the same connection, credentials included, for
        FEATURES_FRESH_S."""
        key = connection_key(self._bootstrap, self._client_config)
        now = time.monotonic()
        with _features_lock:
            cached = _features.get(key)
        if cached is not None:
            fresh = FEATURES_FRESH_S if cached[1] is not None else FEATURES_FAILED_S
            if now - cached[0] < fresh:
                return cached[1]
        features: ClusterFeatures | None = None
        reader = group_reader.shared()
        if reader is not None:
            try:
                properties = group_reader.admin_properties(
                    self._bootstrap, self._client_config, self._timeout
                )
                features = reader.read_features(properties, self._timeout)
            # Whatever went wrong (the reader's JVM would not start, say), callers go on
            # as they did before features were read: never fail a run for it.
            except Exception as err:
                log.warning("features of cluster %s unreadable: %s", self._bootstrap, err)
        if features is not None and features.metadata_level is None:
            # No metadata.version: a broker still starting, or an answer that is not one.
            # Unreadable, rather than a cluster with no share or streams groups.
            log.warning("cluster %s reported no metadata.version", self._bootstrap)
            features = None
        with _features_lock:
            for stale in [k for k, (t, _) in _features.items() if now - t > FEATURES_FRESH_S]:
                del _features[stale]
            _features[key] = (now, features)
        return features

    def _consumer_group_types(self) -> dict[str, GroupType]:
        """Consumer and classic groups by id, as librdkafka lists them (share and streams
        groups it leaves out). A broker that does not answer leaves its groups out: they
        are then asked of the group reader, which lists them again."""
        try:
            listing = wait(
                self._admin.list_consumer_groups(request_timeout=self._timeout),
                self._timeout + 5,
            )
        except Exception:
            return {}
        types: dict[str, GroupType] = {}
        for group in listing.valid:
            if group.type == ConsumerGroupType.CONSUMER:
                types[group.group_id] = GroupType.CONSUMER
            elif group.type == ConsumerGroupType.CLASSIC:
                types[group.group_id] = GroupType.CLASSIC
        return types

    def _read_with_reader(self, asked: Mapping[str, list[TopicPartition]]) -> dict[str, GroupRead]:
        reader = group_reader.shared()
        names = ", ".join(sorted(asked))
        if reader is None:
            raise KafkaUnavailable(
                f"group(s) {names} are not consumer groups librdkafka lists; share and "
                f"streams groups are read with the group reader, which is not installed "
                f"here (set {group_reader.ENV} to its jars: `make setup` builds them, the "
                f"image has them)"
            )
        try:
            properties = group_reader.admin_properties(
                self._bootstrap, self._client_config, self._timeout
            )
        except Unmappable as err:
            raise KafkaUnavailable(
                f"group(s) {names}: the group reader (Kafka's Java client) has no "
                f"equivalent of client property {err}"
            ) from err
        try:
            return reader.read(properties, asked, self._timeout)
        except group_reader.GroupReaderError as err:
            raise KafkaUnavailable(f"positions of group(s) {names}: {err}") from err

    def committed(
        self, group: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offset per partition; None where it has committed none.

        Read through a consumer handle of the group, not the AdminClient: when the group's
        coordinator moves (a broker restarts, or the controller moves leadership back to
        the preferred replica), it answers NOT_COORDINATOR, and librdkafka (2.16 and
        earlier; its issue 5040) handles that in an AdminClient by handing a
        coordinator query to the consumer-group handle an AdminClient does not have: a
        NULL dereference that kills the whole process. A consumer's group handle looks
        the coordinator up again and retries. The handle never subscribes, so it never
        joins the group or commits for it.

        Asked COMMITTED_PER_REQUEST partitions at a time: the coordinator answers one
        request for tens of thousands of partitions slower than the request timeout on a
        busy cluster (50,000 in one request timed out at 15 s on the local stack)."""
        wanted = [KTP(tp.topic, tp.partition) for tp in tps]
        out: dict[TopicPartition, int | None] = {}
        if not wanted:
            return out
        try:
            reader = Consumer(
                {
                    **self._config,
                    "group.id": group,
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    # Offsets a transaction has not committed yet are not commits: the
                    # coordinator leaves them out without waiting, as the AdminClient's
                    # default asked (read_committed would wait for the transaction).
                    "isolation.level": "read_uncommitted",
                }
            )
        except KafkaException as exc:
            raise self._unavailable(f"committed offsets of group {group}: {exc}") from exc
        try:
            for i in range(0, len(wanted), COMMITTED_PER_REQUEST):
                try:
                    answers = reader.committed(
                        wanted[i : i + COMMITTED_PER_REQUEST], timeout=self._timeout
                    )
                except Exception as exc:
                    raise self._unavailable(
                        f"committed offsets of group {group}: {failure(exc)}"
                    ) from exc
                for ktp in answers:
                    if ktp.error is not None:
                        raise self._unavailable(f"committed offsets of group {group}: {ktp.error}")
                    out[TopicPartition(ktp.topic, ktp.partition)] = (
                        int(ktp.offset) if ktp.offset >= 0 else None
                    )
        finally:
            reader.close()
        return out
