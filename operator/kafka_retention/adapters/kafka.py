"""The Kafka adapter (this module's KafkaAdmin, with kafka_calls, kafka_groups,
kafka_records, kafka_erasure and kafka_writes beside it): the only modules that import
confluent-kafka.

It answers in the planning core's plain types, turns client exceptions into
`KafkaFailure` values (per partition) or `KafkaUnavailable` (the cluster as a whole), and
keeps every call bounded by a timeout, so a reconcile never hangs on a dead cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from confluent_kafka import (
    KafkaException,
    TopicCollection,
)
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    OffsetSpec,
    ResourceType,
)
from confluent_kafka.cimpl import _AdminClientImpl

from kafka_retention.adapters import kafka_calls as calls
from kafka_retention.adapters.kafka_groups import GroupReads
from kafka_retention.adapters.kafka_records import RecordReader, average_record_sizes, key_text
from kafka_retention.adapters.kafka_tiers import TierReads
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable, OffsetKind


class KafkaAdmin(GroupReads, TierReads):
    """The cluster as the services need it (ports.PolicyKafka): metadata, configs,
    offsets, group positions (GroupReads), where tiered records are (TierReads), deletes,
    and bounded record reads."""

    def __init__(
        self,
        bootstrap_servers: str,
        client_config: Mapping[str, str] | None = None,
        timeout: float = 15.0,
    ) -> None:
        self._bootstrap, self._client_config = bootstrap_servers, dict(client_config or {})
        self._cause = calls.ConnectionCause()
        self._config: dict[str, Any] = {
            # The user's socket timeout (Java's request.timeout.ms maps to it) wins.
            "socket.timeout.ms": int(timeout * 1000),
            **(client_config or {}),
            "bootstrap.servers": bootstrap_servers,
            # librdkafka logs every failed connect to stderr; failures reach us as errors.
            "log_level": 0,
            # Why a connection failed (a refused password, an untrusted certificate)
            # reaches only this callback; a request just times out or says _TRANSPORT.
            # A holder, not a bound method: the client would otherwise keep this object
            # (and itself) alive in a cycle until the garbage collector ran.
            "error_cb": self._cause.remember,
        }
        self._timeout = timeout
        self._admin = AdminClient(self._config)

    def _unavailable(self, message: str) -> KafkaUnavailable:
        """KafkaUnavailable with the connection's own failure, when librdkafka gave one."""
        self._admin.poll(0)  # serves error_cb
        cause = self._cause.take()
        if cause and cause not in message:
            message = f"{message} (connection: {cause})"
        return KafkaUnavailable(message)

    # --- metadata ---------------------------------------------------------------------

    def cluster_id(self) -> str:
        """The id the cluster gives itself: the same through every listener and every
        spelling of its bootstrap servers, so it tells clusters apart where names cannot."""
        try:
            found = calls.wait(
                self._admin.describe_cluster(request_timeout=self._timeout), self._timeout + 5
            )
        except (KafkaException, TimeoutError) as exc:
            raise self._unavailable(f"describe cluster: {calls.failure(exc)}") from exc
        if not found.cluster_id:
            raise KafkaUnavailable("describe cluster: the cluster gave no id")
        return str(found.cluster_id)

    def topic_names(self) -> list[str]:
        try:
            meta = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._unavailable(str(calls.failure(exc))) from exc
        return sorted(meta.topics)

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        try:
            meta = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._unavailable(str(calls.failure(exc))) from exc
        out: dict[str, list[int] | KafkaFailure] = {}
        for topic in topics:
            tmeta = meta.topics.get(topic)
            if tmeta is None:
                out[topic] = KafkaFailure(
                    "UNKNOWN_TOPIC_OR_PARTITION", f"topic {topic} does not exist", False
                )
            elif tmeta.error is not None:
                out[topic] = calls.failure(KafkaException(tmeta.error))
            else:
                out[topic] = sorted(tmeta.partitions)
        return out

    def placements(self) -> dict[str, tuple[str, dict[int, frozenset[int]]]]:
        """Every topic (internal ones too) with its topic id and each partition's replica
        brokers. All or nothing: an orphan check must never take a topic it could not
        describe for a topic that does not exist, so any failure raises KafkaUnavailable."""
        return {
            name: (
                calls.kafka_uuid(desc.topic_id),
                {p.id: frozenset(n.id for n in p.replicas) for p in desc.partitions},
            )
            for name, desc in self._describe(self.topic_names()).items()
        }

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Each topic's id (a topic deleted and made again under its name has a new one);
        raises KafkaUnavailable when any cannot be described."""
        described = self._describe(sorted(set(topics)))
        return {name: calls.kafka_uuid(desc.topic_id) for name, desc in described.items()}

    def _describe(self, names: Sequence[str]) -> dict[str, Any]:
        """DescribeTopics of `names`, 500 a request; any failure raises KafkaUnavailable."""
        out: dict[str, Any] = {}
        for i in range(0, len(names), 500):
            chunk = TopicCollection(list(names[i : i + 500]))
            try:
                futures = self._admin.describe_topics(chunk, request_timeout=self._timeout)
                for name, fut in futures.items():
                    out[name] = calls.wait(fut, self._timeout)
            except Exception as exc:
                raise self._unavailable(f"describing topics: {calls.failure(exc)}") from exc
        return out

    def broker_configs(self) -> dict[int, dict[str, str]]:
        """Each live broker's configuration (log.dirs, log.retention.*), by node id."""
        out: dict[int, dict[str, str]] = {}
        try:
            for broker in sorted(self._admin.list_topics(timeout=self._timeout).brokers):
                # librdkafka takes one BROKER resource per request.
                resource = ConfigResource(ResourceType.BROKER, str(broker))
                futures = self._admin.describe_configs([resource], request_timeout=self._timeout)
                for fut in futures.values():
                    entries = calls.wait(fut, self._timeout)
                    out[broker] = {
                        k: str(e.value) for k, e in entries.items() if e.value is not None
                    }
            return out
        except Exception as exc:
            raise self._unavailable(f"describing brokers: {calls.failure(exc)}") from exc

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str] | KafkaFailure]:
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        if not resources:
            return {}
        futures = self._admin.describe_configs(resources, request_timeout=self._timeout)
        out: dict[str, dict[str, str] | KafkaFailure] = {}
        for res, fut in futures.items():
            try:
                entries = calls.wait(fut, self._timeout)
                out[res.name] = {k: str(e.value) for k, e in entries.items()}
            except Exception as exc:
                out[res.name] = calls.failure(exc)
        return out

    def set_topic_config(self, topic: str, key: str, value: str) -> KafkaFailure | None:
        """IncrementalAlterConfigs SET of one topic setting, leaving the others as they
        are; the failure, if Kafka refused."""
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        try:
            futures = self._admin.incremental_alter_configs(
                [resource], request_timeout=self._timeout
            )
            for fut in futures.values():
                calls.wait(fut, self._timeout)
        except Exception as exc:
            return calls.failure(exc)
        return None

    def record_times_at(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, int]:
        """The timestamp of the first record in each [start, end) (a group's next unread
        record, where compaction may have removed the exact offset); partitions with none
        are left out."""
        reader = RecordReader(self._bootstrap, self._client_config)
        try:
            return {tp: rec.timestamp_ms for tp, rec in reader.read_many(ranges, first=1)}
        finally:
            reader.close()

    # --- offsets ----------------------------------------------------------------------

    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> dict[TopicPartition, int | KafkaFailure]:
        # OffsetSpec's factories carry no annotations in confluent-kafka 2.16.
        earliest: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        latest: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        spec = earliest if kind == "earliest" else latest
        return self._list_offsets(dict.fromkeys(tps, spec))

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> dict[TopicPartition, int | KafkaFailure]:
        """Earliest offset whose timestamp is >= timestamp_ms; -1 when no record is."""
        spec = OffsetSpec.for_timestamp(timestamp_ms)
        return self._list_offsets(dict.fromkeys(tps, spec))

    def first_record_times(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | KafkaFailure | None]:
        """The timestamp of each partition's first record (None when it has none):
        ListOffsets for time 0 answers with the first record and its timestamp."""
        spec = OffsetSpec.for_timestamp(0)
        infos = self._list_offsets(dict.fromkeys(tps, spec), field="timestamp", empty=-1)
        return {tp: (None if v == -1 else v) for tp, v in infos.items()}

    def log_bounds(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, int | KafkaFailure], dict[TopicPartition, int | KafkaFailure]]:
        """(log starts, high watermarks): what `offsets` reads for "earliest" and "latest",
        with both requests in flight at once. A request carries one spec per partition, so
        the pair takes two requests, but one round trip rather than two."""
        earliest: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        latest: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        wanted = list(tps)
        starts, ends = dict.fromkeys(wanted, earliest), dict.fromkeys(wanted, latest)
        if not wanted:
            return {}, {}
        sent = [self._send_list_offsets(starts), self._send_list_offsets(ends)]
        return self._offset_answers(sent[0]), self._offset_answers(sent[1])

    def _list_offsets(
        self,
        specs: Mapping[TopicPartition, OffsetSpec],
        field: str = "offset",
        empty: int | None = None,
    ) -> dict[TopicPartition, int | KafkaFailure]:
        if not specs:
            return {}
        return self._offset_answers(self._send_list_offsets(specs), field, empty)

    def _send_list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec]) -> calls.Sent:
        """Every request of the call in flight: (the partitions it asks, its future)."""
        request = partial(_AdminClientImpl.list_offsets, self._admin, request_timeout=self._timeout)
        sent: calls.Sent = []
        for part in calls.requests(list(specs)):
            items = [KTP(tp.topic, tp.partition, int(specs[tp]._value)) for tp in part]
            try:
                sent.append((part, calls.submit(request, items)))
            except KafkaException as exc:
                raise self._unavailable(str(calls.failure(exc))) from exc
        return sent

    def _offset_answers(
        self,
        sent: calls.Sent,
        field: str = "offset",
        empty: int | None = None,
    ) -> dict[TopicPartition, int | KafkaFailure]:
        return calls.answers(
            sent,
            self._timeout,
            lambda info: calls.offset_answer(int(info.offset), int(getattr(info, field)), empty),
        )

    # --- deleting ---------------------------------------------------------------------

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaFailure]:
        """DeleteRecords for all partitions (the client groups each request's partitions
        by leader; the requests go out together); returns each partition's new low
        watermark or its failure."""
        if not cuts:
            return {}
        request = partial(
            _AdminClientImpl.delete_records,
            self._admin,
            request_timeout=self._timeout,
            operation_timeout=self._timeout,
        )
        sent: calls.Sent = []
        parts = calls.requests(list(cuts))
        for i, part in enumerate(parts):
            items = [KTP(tp.topic, tp.partition, cuts[tp]) for tp in part]
            try:
                sent.append((part, calls.submit(request, items)))
            except KafkaException as exc:
                if not sent:
                    raise self._unavailable(str(calls.failure(exc))) from exc
                # Requests already sent may delete: their answers are still read below,
                # and every partition not sent fails with the reason.
                sent.append(([tp for rest in parts[i:] for tp in rest], calls.failed(exc)))
                break
        return calls.answers(sent, self._timeout * 2, lambda result: int(result.low_watermark))

    # --- records ----------------------------------------------------------------------

    def first_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], count: int
    ) -> dict[TopicPartition, list[tuple[int, str | None]]]:
        """The first `count` records' (offset, key) of each [start, end): a bounded sample
        of what a cut will remove, read before it does."""
        wanted = {tp: (start, min(end, start + count)) for tp, (start, end) in ranges.items()}
        out: dict[TopicPartition, list[tuple[int, str | None]]] = {tp: [] for tp in wanted}
        reader = RecordReader(self._bootstrap, self._client_config)
        try:
            for tp, rec in reader.read_many(wanted):
                out[tp].append((rec.offset, key_text(rec.key)))
        finally:
            reader.close()
        return out

    def average_record_bytes(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], sample: int = 20
    ) -> dict[TopicPartition, float]:
        """Average stored size of up to `sample` records from the start of each range.

        Used only for byte estimates; partitions that yield nothing are left out.
        """
        reader = RecordReader(self._bootstrap, self._client_config)
        try:
            return average_record_sizes(reader, ranges, sample)
        finally:
            reader.close()
