"""How the Kafka adapter talks to librdkafka: which errors go away by themselves, how a
call's partitions are sent as requests and their answers gathered, one answer per
partition asked, and why a connection failed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as KTP

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure

# Errors that go away by themselves (leader moves, brokers restarting, slow networks), by
# code: librdkafka's names differ from Kafka's (code 6 is NOT_LEADER_FOR_PARTITION here,
# NOT_LEADER_OR_FOLLOWER in the protocol), and an error built from a result, not raised by
# the client, answers retriable() with False. The broker codes are those the Java client
# treats as retriable (RetriableException) that a DeleteRecords, ListOffsets or
# offset-fetch can return; UNKNOWN_TOPIC_OR_PART is not among them on purpose: a topic
# deleted under a purge is a failure to report, not to wait out.
RETRIABLE_CODES = frozenset(
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


def failure(exc: BaseException) -> KafkaFailure:
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(err, KafkaError):
        return KafkaFailure(err.name(), err.str(), err.retriable() or err.code() in RETRIABLE_CODES)
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


# Partitions per ListOffsets and DeleteRecords request; a call sends all its requests at
# once and waits for them together. The client merges each broker's answer into the
# request's results at a cost that grows with the square of the partitions in the
# request: on the local stack, 20,000 partitions took 1.8 s as one ListOffsets request
# and 0.45 s as twenty of 1,000; DeleteRecords 1.5 s against 0.14 s.
PARTITIONS_PER_REQUEST = 1_000


def wait(future: Future[Any], timeout: float) -> Any:
    return future.result(timeout=timeout)


def submit(request: Callable[[list[KTP], Future[Any]], None], items: list[KTP]) -> Future[Any]:
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


def requests(tps: list[TopicPartition]) -> list[list[TopicPartition]]:
    """The partitions of one call split into requests of PARTITIONS_PER_REQUEST."""
    step = PARTITIONS_PER_REQUEST
    return [tps[i : i + step] for i in range(0, len(tps), step)]


# The requests of one call: the partitions each asks, and its future.
Sent = list[tuple[list[TopicPartition], Future[Any]]]


def answers(
    sent: Sent, timeout: float, value: Callable[[Any], int | KafkaFailure]
) -> dict[TopicPartition, int | KafkaFailure]:
    """Every partition's answer from the requests of one call: value(its result), its
    own error, its request's failure as a whole, or NO_ANSWER where a reply left it out."""
    out: dict[TopicPartition, int | KafkaFailure] = {}
    for asked, future in sent:
        try:
            got: dict[KTP, Any] = wait(future, timeout)
        except Exception as exc:  # the whole request failed: so did each of its partitions
            out.update(dict.fromkeys(asked, failure(exc)))
            continue
        for ktp, result in got.items():
            tp = TopicPartition(ktp.topic, ktp.partition)
            if isinstance(result, KafkaError):
                out[tp] = failure(KafkaException(result))
            else:
                out[tp] = value(result)
        unanswered(asked, out)
    return out


def failed(exc: BaseException) -> Future[Any]:
    """A future that has already failed with exc: a request that could not be sent."""
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


def unanswered(
    asked: Iterable[TopicPartition], out: dict[TopicPartition, int | KafkaFailure]
) -> dict[TopicPartition, int | KafkaFailure]:
    """Every partition asked gets an answer: one the reply left out is a retriable
    failure, never a silent gap a caller could read as "nothing to do"."""
    for tp in asked:
        if tp not in out:
            out[tp] = KafkaFailure("NO_ANSWER", "the reply did not cover this partition", True)
    return out


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


def connection_key(bootstrap: str, client_config: Mapping[str, str]) -> str:
    """A cache key for what one connection may read: the whole connection, credentials
    included, so no caller is served a read made with another's access; a digest, so a
    process-long cache holds no key or password."""
    return hashlib.sha256(repr((bootstrap, sorted(client_config.items()))).encode()).hexdigest()
