"""The Kafka adapter: the only module that imports confluent-kafka.

It answers in the planning core's plain types, turns client exceptions into
`KafkaFailure` values (per partition) or `KafkaUnavailable` (the cluster as a whole), and
keeps every call bounded by a timeout, so a reconcile never hangs on a dead cluster.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Message,
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

from kafka_retention.adapters import group_reader
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable, OffsetKind
from kafka_retention.core.java_client import Unmappable, java_properties

# Errors that go away by themselves (leader moves, brokers restarting, slow networks), by
# code: librdkafka's names differ from Kafka's (code 6 is NOT_LEADER_FOR_PARTITION here,
# NOT_LEADER_OR_FOLLOWER in the protocol), and an error built from a result, not raised by
# the client, answers retriable() with False. The broker codes are those the Java client
# treats as retriable (RetriableException) that a DeleteRecords, ListOffsets or
# offset-fetch can return; UNKNOWN_TOPIC_OR_PART is not among them on purpose: a topic
# deleted under a purge is a failure to report, not to wait out.
_RETRIABLE_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
        KafkaError._RESOLVE,
        # "Failed to query partition leaders: No leaders found" while metadata catches up
        # with a leader change; the topic itself was checked to exist before.
        KafkaError._NOENT,
        KafkaError.LEADER_NOT_AVAILABLE,  # 5
        KafkaError.NOT_LEADER_FOR_PARTITION,  # 6, NOT_LEADER_OR_FOLLOWER
        KafkaError.REQUEST_TIMED_OUT,  # 7
        KafkaError.REPLICA_NOT_AVAILABLE,  # 9
        KafkaError.NETWORK_EXCEPTION,  # 13
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,  # 14
        KafkaError.COORDINATOR_NOT_AVAILABLE,  # 15
        KafkaError.NOT_COORDINATOR,  # 16
        KafkaError.NOT_ENOUGH_REPLICAS,  # 19
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,  # 20
        KafkaError.NOT_CONTROLLER,  # 41
        KafkaError.KAFKA_STORAGE_ERROR,  # 56
        KafkaError.FENCED_LEADER_EPOCH,  # 74
        KafkaError.UNKNOWN_LEADER_EPOCH,  # 75
        KafkaError.OFFSET_NOT_AVAILABLE,  # 78
        KafkaError.THROTTLING_QUOTA_EXCEEDED,  # 89
    }
)
# Per-record bytes the log spends besides key, value and headers (varints, attributes,
# a share of the batch header): a rough constant, good enough for an estimate.
RECORD_OVERHEAD_BYTES = 16


def _failure(exc: BaseException) -> KafkaFailure:
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(err, KafkaError):
        return KafkaFailure(
            err.name(), err.str(), err.retriable() or err.code() in _RETRIABLE_CODES
        )
    timeout = isinstance(exc, TimeoutError)
    # A future's TimeoutError carries no text: say what it means rather than nothing.
    message = str(exc) or ("no answer from the cluster in time" if timeout else repr(exc))
    return KafkaFailure(type(exc).__name__, message, timeout)


def offset_answer(offset: int, value: int, empty: int | None) -> int | KafkaFailure:
    """One partition's ListOffsets answer. -1 is Kafka's "no record at or after that
    time" (`empty` stands in for it where given). Anything lower is no answer at all:
    librdkafka gives -1001 when the partition's leader did not answer (frozen, killed,
    moving). Taken as a fact it would read as a log start of -1001, or, for a timestamp
    cut, as "every record is older", a cut at the high watermark: it is a retriable
    failure instead."""
    if offset < -1:
        return KafkaFailure(
            "OFFSET_UNKNOWN", f"ListOffsets gave no offset ({offset}): no leader answered", True
        )
    if offset == -1 and empty is not None:
        return empty
    return value


# Partitions per ListConsumerGroupOffsets request (KafkaAdmin.committed).
COMMITTED_PER_REQUEST = 5_000
# Partitions per ListOffsets and DeleteRecords request; a call sends all its requests at
# once and waits for them together. The client merges each broker's answer into the
# request's results at a cost that grows with the square of the partitions in the
# request: on the local stack, 20,000 partitions took 1.8 s as one ListOffsets request
# and 0.45 s as twenty of 1,000; DeleteRecords 1.5 s against 0.14 s.
PARTITIONS_PER_REQUEST = 1_000


def _wait(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


def _submit(request: Callable[[list[KTP], Future[Any]], None], items: list[KTP]) -> Future[Any]:
    """Send one request; its future completes with every partition's answer at once, by
    partition (a result, or that partition's KafkaError), or fails as a whole.

    This is the future the client's C layer completes. The public AdminClient calls wrap
    it in one more future per partition: at 10,000 partitions, making, completing and
    waiting on those cost many times the request itself (measured on 2 cores: 0.15 s a
    call for the futures alone, 13 ms to send the request)."""
    future: Future[Any] = Future()
    future.set_running_or_notify_cancel()
    request(items, future)
    return future


def _requests(tps: list[TopicPartition]) -> list[list[TopicPartition]]:
    """The partitions of one call split into requests of PARTITIONS_PER_REQUEST."""
    step = PARTITIONS_PER_REQUEST
    return [tps[i : i + step] for i in range(0, len(tps), step)]


# The requests of one call: the partitions each asks, and its future.
Sent = list[tuple[list[TopicPartition], Future[Any]]]


def _answers(
    sent: Sent, timeout: float, value: Callable[[Any], int | KafkaFailure]
) -> dict[TopicPartition, int | KafkaFailure]:
    """Every partition's answer from the requests of one call: value(its result), its
    own error, its request's failure as a whole, or NO_ANSWER where a reply left it out."""
    out: dict[TopicPartition, int | KafkaFailure] = {}
    for asked, future in sent:
        try:
            answers: dict[KTP, Any] = _wait(future, timeout)
        except Exception as exc:  # the whole request failed: so did each of its partitions
            out.update(dict.fromkeys(asked, _failure(exc)))
            continue
        for ktp, result in answers.items():
            tp = TopicPartition(ktp.topic, ktp.partition)
            if isinstance(result, KafkaError):
                out[tp] = _failure(KafkaException(result))
            else:
                out[tp] = value(result)
        _unanswered(asked, out)
    return out


def _failed(exc: BaseException) -> Future[Any]:
    """A future that has already failed with exc: a request that could not be sent."""
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


def _unanswered(
    asked: Iterable[TopicPartition], out: dict[TopicPartition, int | KafkaFailure]
) -> dict[TopicPartition, int | KafkaFailure]:
    """Every partition asked gets an answer: one the reply left out is a retriable
    failure, never a silent gap a caller could read as "nothing to do"."""
    for tp in asked:
        if tp not in out:
            out[tp] = KafkaFailure("NO_ANSWER", "the reply did not cover this partition", True)
    return out


def _stored_size(msg: Message) -> int:
    size = len(msg.key() or b"") + len(msg.value() or b"") + RECORD_OVERHEAD_BYTES
    headers = msg.headers() or []
    pairs = list(headers.items()) if isinstance(headers, dict) else headers
    for key, value in pairs:
        size += len(key) + len(value or b"")
    return size


def kafka_uuid(value: object) -> str:
    """A topic id as Kafka writes it (partition.metadata, kafka-topics.sh): URL-safe base64
    without padding. librdkafka prints the standard alphabet ('+', '/') instead."""
    return str(value).replace("+", "-").replace("/", "_").rstrip("=")


class ConnectionCause:
    """Why connections fail, as librdkafka tells only its error callback: a refused
    password, an untrusted certificate, a TLS alert. Taken once, so an old failure is not
    blamed for a later, unrelated error."""

    # Words of librdkafka's _TRANSPORT texts that are about TLS itself; the broker's name
    # (ssl://..., sasl_ssl://...) is in every text and says nothing.
    TLS_WORDS = ("handshake", "certificate", "tls alert", "SSL routines")

    def __init__(self) -> None:
        self._cause: str | None = None

    def remember(self, err: KafkaError) -> None:
        text = err.str()
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL) or (
            err.code() == KafkaError._TRANSPORT and any(w in text for w in self.TLS_WORDS)
        ):
            self._cause = f"{err.name()}: {text}"

    def take(self) -> str | None:
        cause, self._cause = self._cause, None
        return cause


class KafkaAdmin:
    def __init__(
        self,
        bootstrap_servers: str,
        client_config: Mapping[str, str] | None = None,
        timeout: float = 15.0,
    ) -> None:
        self._bootstrap, self._client_config = bootstrap_servers, dict(client_config or {})
        self._cause = ConnectionCause()
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
            found = _wait(
                self._admin.describe_cluster(request_timeout=self._timeout), self._timeout + 5
            )
        except (KafkaException, TimeoutError) as exc:
            raise self._unavailable(f"describe cluster: {_failure(exc)}") from exc
        if not found.cluster_id:
            raise KafkaUnavailable("describe cluster: the cluster gave no id")
        return str(found.cluster_id)

    def topic_names(self) -> list[str]:
        try:
            meta = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._unavailable(str(_failure(exc))) from exc
        return sorted(meta.topics)

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        try:
            meta = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._unavailable(str(_failure(exc))) from exc
        out: dict[str, list[int] | KafkaFailure] = {}
        for topic in topics:
            tmeta = meta.topics.get(topic)
            if tmeta is None:
                out[topic] = KafkaFailure(
                    "UNKNOWN_TOPIC_OR_PARTITION", f"topic {topic} does not exist", False
                )
            elif tmeta.error is not None:
                out[topic] = _failure(KafkaException(tmeta.error))
            else:
                out[topic] = sorted(tmeta.partitions)
        return out

    def placements(self) -> dict[str, tuple[str, dict[int, frozenset[int]]]]:
        """Every topic (internal ones too) with its topic id and each partition's replica
        brokers. All or nothing: an orphan check must never take a topic it could not
        describe for a topic that does not exist, so any failure raises KafkaUnavailable."""
        names = self.topic_names()
        out: dict[str, tuple[str, dict[int, frozenset[int]]]] = {}
        for i in range(0, len(names), 500):
            chunk = TopicCollection(names[i : i + 500])
            try:
                futures = self._admin.describe_topics(chunk, request_timeout=self._timeout)
                for name, fut in futures.items():
                    desc = _wait(fut, self._timeout)
                    out[name] = (
                        kafka_uuid(desc.topic_id),
                        {p.id: frozenset(n.id for n in p.replicas) for p in desc.partitions},
                    )
            except Exception as exc:
                raise self._unavailable(f"describing topics: {_failure(exc)}") from exc
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
                    entries = _wait(fut, self._timeout)
                    out[broker] = {
                        k: str(e.value) for k, e in entries.items() if e.value is not None
                    }
            return out
        except Exception as exc:
            raise self._unavailable(f"describing brokers: {_failure(exc)}") from exc

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str] | KafkaFailure]:
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        if not resources:
            return {}
        futures = self._admin.describe_configs(resources, request_timeout=self._timeout)
        out: dict[str, dict[str, str] | KafkaFailure] = {}
        for res, fut in futures.items():
            try:
                entries = _wait(fut, self._timeout)
                out[res.name] = {k: str(e.value) for k, e in entries.items()}
            except Exception as exc:
                out[res.name] = _failure(exc)
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
                _wait(fut, self._timeout)
        except Exception as exc:
            return _failure(exc)
        return None

    def record_times_at(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> dict[TopicPartition, int]:
        """The timestamp of the first record in each [start, end) (a group's next unread
        record, where compaction may have removed the exact offset); partitions with none
        are left out."""
        reader = RecordReader(self._bootstrap, self._client_config)
        try:
            return {tp: rec.timestamp_ms for tp, rec in reader.read_many(ranges, first_only=True)}
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

    def _send_list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec]) -> Sent:
        """Every request of the call in flight: (the partitions it asks, its future)."""
        request = partial(_AdminClientImpl.list_offsets, self._admin, request_timeout=self._timeout)
        sent: Sent = []
        for part in _requests(list(specs)):
            items = [KTP(tp.topic, tp.partition, int(specs[tp]._value)) for tp in part]
            try:
                sent.append((part, _submit(request, items)))
            except KafkaException as exc:
                raise self._unavailable(str(_failure(exc))) from exc
        return sent

    def _offset_answers(
        self,
        sent: Sent,
        field: str = "offset",
        empty: int | None = None,
    ) -> dict[TopicPartition, int | KafkaFailure]:
        return _answers(
            sent,
            self._timeout,
            lambda info: offset_answer(int(info.offset), int(getattr(info, field)), empty),
        )

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
        for group, tps in asked.items():
            found = out.get(group)
            if found is not None and found.type is not GroupType.NONE:
                continue
            kind = listed.get(group, GroupType.NONE)
            out[group] = GroupRead(kind, self.committed(group, tps))
        return out

    def _consumer_group_types(self) -> dict[str, GroupType]:
        """Consumer and classic groups by id, as librdkafka lists them (share and streams
        groups it leaves out). A broker that does not answer leaves its groups out: they
        are then asked of the group reader, which lists them again."""
        try:
            listing = _wait(
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
            properties = java_properties(self._bootstrap, self._client_config)
        except Unmappable as err:
            raise KafkaUnavailable(
                f"group(s) {names}: the group reader (Kafka's Java client) has no "
                f"equivalent of client property {err}"
            ) from err
        properties.pop("isolation.level", None)  # a consumer's setting, not an Admin's
        properties["default.api.timeout.ms"] = str(int(self._timeout * 1000))
        properties.setdefault("request.timeout.ms", str(int(self._timeout * 1000)))
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
                        f"committed offsets of group {group}: {_failure(exc)}"
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
        sent: Sent = []
        parts = _requests(list(cuts))
        for i, part in enumerate(parts):
            items = [KTP(tp.topic, tp.partition, cuts[tp]) for tp in part]
            try:
                sent.append((part, _submit(request, items)))
            except KafkaException as exc:
                if not sent:
                    raise self._unavailable(str(_failure(exc))) from exc
                # Requests already sent may delete: their answers are still read below,
                # and every partition not sent fails with the reason.
                sent.append(([tp for rest in parts[i:] for tp in rest], _failed(exc)))
                break
        return _answers(sent, self._timeout * 2, lambda result: int(result.low_watermark))

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


@dataclass(frozen=True)
class RecordInfo:
    offset: int
    timestamp_ms: int
    key: bytes | None
    size: int  # estimated stored bytes: key + value + headers + RECORD_OVERHEAD_BYTES
    tombstone: bool  # a null value: a delete marker on a compacted topic


MAX_KEY_CHARS = 200


def key_text(key: bytes | None) -> str | None:
    """A record key as status and events show it: UTF-8 where it is, escaped bytes where
    not, cut at MAX_KEY_CHARS (keys can be large binary blobs)."""
    return None if key is None else key.decode("utf-8", "backslashreplace")[:MAX_KEY_CHARS]


class RecordReader:
    """Reads records by offset range with one assign-only consumer (it never joins a group
    or commits). Used by the Spark scans on executors and by byte estimates."""

    def __init__(
        self,
        bootstrap_servers: str,
        client_config: Mapping[str, str] | None = None,
        idle_timeout: float = 10.0,
    ) -> None:
        self._consumer = Consumer(
            {
                **(client_config or {}),
                "bootstrap.servers": bootstrap_servers,
                "group.id": f"kafka-retention-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "fetch.max.bytes": 16 * 1024 * 1024,
                "max.partition.fetch.bytes": 8 * 1024 * 1024,
                "log_level": 0,
            }
        )
        self._idle_timeout = idle_timeout

    def read(self, tp: TopicPartition, start: int, end: int) -> Iterator[RecordInfo]:
        """Records with offsets in [start, end); fewer where retention or compaction removed
        some. Raises KafkaUnavailable when nothing arrives for the idle timeout."""
        for _, record in self.read_many({tp: (start, end)}):
            yield record

    def read_many(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], first_only: bool = False
    ) -> Iterator[tuple[TopicPartition, RecordInfo]]:
        """Records of several partitions at once, each within its own [start, end).

        One assignment for all of them: a slice of hundreds of partitions costs one fetch
        round per broker rather than one consumer round trip per partition. A partition
        that reached its end is paused so the fetcher stops reading it. With first_only,
        each partition yields only its first record in range (a point lookup that still
        works where compaction removed the exact offset).
        """
        open_ranges = {tp: r for tp, r in ranges.items() if r[1] > r[0]}
        if not open_ranges:
            return
        assigned = [KTP(tp.topic, tp.partition, start) for tp, (start, _) in open_ranges.items()]
        self._consumer.assign(assigned)
        # A pause outlives unassign in librdkafka: a partition paused by an earlier read
        # of this reader would otherwise deliver nothing now.
        self._consumer.resume(assigned)
        try:
            last_progress = time.monotonic()
            while open_ranges:
                # consume() waits out its timeout unless the batch fills: keep it short so
                # a point lookup costs milliseconds, while bulk reads still fill batches.
                batch = self._consumer.consume(num_messages=5000, timeout=0.05)
                if not batch and time.monotonic() - last_progress > self._idle_timeout:
                    pending = ", ".join(str(tp) for tp in list(open_ranges)[:5])
                    raise KafkaUnavailable(
                        f"no records from {pending} for {self._idle_timeout:.0f}s"
                    )
                for msg in batch:
                    tp = TopicPartition(str(msg.topic()), int(msg.partition() or 0))
                    if tp not in open_ranges:
                        continue
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            self._done(open_ranges, tp)
                            continue
                        raise KafkaUnavailable(f"reading {tp}: {err.str()}")
                    last_progress = time.monotonic()
                    offset = int(msg.offset() or 0)
                    end = open_ranges[tp][1]
                    if offset >= end:
                        self._done(open_ranges, tp)
                        continue
                    yield (
                        tp,
                        RecordInfo(
                            offset,
                            int(msg.timestamp()[1]),
                            msg.key(),
                            _stored_size(msg),
                            msg.value() is None,
                        ),
                    )
                    if first_only or offset == end - 1:
                        self._done(open_ranges, tp)
        finally:
            self._consumer.unassign()

    def _done(self, open_ranges: dict[TopicPartition, tuple[int, int]], tp: TopicPartition) -> None:
        del open_ranges[tp]
        self._consumer.pause([KTP(tp.topic, tp.partition)])

    def close(self) -> None:
        self._consumer.close()


def average_record_sizes(
    reader: RecordReader, ranges: Mapping[TopicPartition, tuple[int, int]], sample: int
) -> dict[TopicPartition, float]:
    """Average stored bytes of the first `sample` records of each [start, end) range."""
    wanted = {tp: (start, min(end, start + sample)) for tp, (start, end) in ranges.items()}
    sizes: dict[TopicPartition, list[int]] = {tp: [] for tp in wanted}
    for tp, record in reader.read_many(wanted):
        sizes[tp].append(record.size)
    return {tp: sum(found) / len(found) for tp, found in sizes.items() if found}
