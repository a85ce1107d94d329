"""Which Kafka errors are waited out and which are reported: classified by code, on the
client library's own error objects (their names differ from Kafka's protocol names)."""

from __future__ import annotations

import weakref

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kafka_calls import ConnectionCause, offset_answer
from kafka_retention.adapters.kafka_calls import failure as _failure
from kafka_retention.core.failures import KafkaFailure

# The codes a leader move produces during DeleteRecords, as seen on the real stack with a
# broker frozen for 15 s: librdkafka names code 6 NOT_LEADER_FOR_PARTITION.
LEADER_MOVES = [6, 74, 75, 5]


@pytest.mark.parametrize("code", LEADER_MOVES)
def test_leader_moves_are_retriable_whatever_the_library_calls_them(code: int) -> None:
    err = KafkaError(code)
    assert err.retriable() is False  # built from a result, as per-partition errors are
    failure = _failure(KafkaException(err))
    assert failure.retriable is True, failure


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.OFFSET_OUT_OF_RANGE,
        KafkaError.POLICY_VIOLATION,
        KafkaError.INVALID_REQUEST,
    ],
)
def test_errors_that_do_not_pass_by_themselves_are_reported(code: int) -> None:
    failure = _failure(KafkaException(KafkaError(code)))
    assert failure.retriable is False, failure
    assert failure.code == KafkaError(code).name()


def test_a_local_timeout_is_retriable_and_a_foreign_exception_is_not() -> None:
    assert _failure(KafkaException(KafkaError(KafkaError._TIMED_OUT))).retriable is True
    assert _failure(ValueError("boom")).retriable is False
    assert _failure(TimeoutError("slow")).retriable is True


def test_an_offset_below_minus_one_is_no_answer_and_is_retried() -> None:
    """-1001 came back for the partitions of a frozen leader in CI, and was taken as their
    log start (the purge reported 10,310 records deleted instead of 300)."""
    answer = offset_answer(-1001, -1001, None)
    assert isinstance(answer, KafkaFailure)
    assert answer.retriable
    assert answer.code == "OFFSET_UNKNOWN"
    # Even where -1 means "no record at or after the time", -1001 does not.
    assert isinstance(offset_answer(-1001, -1, -1), KafkaFailure)


def test_minus_one_is_no_record_at_or_after_the_time_and_offsets_pass_through() -> None:
    assert offset_answer(-1, -1, None) == -1
    assert offset_answer(-1, 1234, -1) == -1  # no timestamp to give: the stand-in
    assert offset_answer(0, 0, None) == 0
    assert offset_answer(42, 1_700_000_000_000, -1) == 1_700_000_000_000


def test_a_timeout_without_text_still_says_what_happened() -> None:
    """concurrent.futures raises TimeoutError() with no message: the condition read
    'KafkaUnavailable: TimeoutError: ' and nothing after the colon."""
    failure = _failure(TimeoutError())
    assert str(failure) == "TimeoutError: no answer from the cluster in time"
    assert _failure(TimeoutError("ListOffsets after 15s")).message == "ListOffsets after 15s"


def test_only_what_explains_a_failed_connection_is_kept_and_only_once() -> None:
    cause = ConnectionCause()
    # Every transport text names the broker, ssl://... on a TLS listener: not a TLS fault.
    cause.remember(KafkaError(KafkaError._TRANSPORT, "ssl://127.0.0.1:9093/1: Connect refused"))
    assert cause.take() is None
    cause.remember(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: failed"))
    cause.remember(KafkaError(KafkaError._ALL_BROKERS_DOWN, "3/3 brokers are down"))
    assert cause.take() == "_AUTHENTICATION: SASL authentication error: failed"
    assert cause.take() is None  # an old failure is not blamed for the next error
    cause.remember(KafkaError(KafkaError._TRANSPORT, "ssl://h:1/1: ssl/tls alert bad certificate"))
    assert cause.take() == "_TRANSPORT: ssl://h:1/1: ssl/tls alert bad certificate"


def test_an_admin_client_goes_when_its_last_reference_goes() -> None:
    """The error callback must not tie the client into a reference cycle: librdkafka's
    threads and sockets would stay until a garbage collection."""
    admin = KafkaAdmin("127.0.0.1:1")
    gone = weakref.ref(admin)
    del admin
    assert gone() is None


def test_a_socket_timeout_the_user_set_is_kept() -> None:
    """Java's request.timeout.ms becomes socket.timeout.ms: dropping it in silence would
    connect differently from what the properties file says."""
    assert KafkaAdmin("127.0.0.1:1")._config["socket.timeout.ms"] == 15000
    mine = KafkaAdmin("127.0.0.1:1", {"socket.timeout.ms": "45000"})
    assert mine._config["socket.timeout.ms"] == "45000"


def test_a_partition_the_reply_leaves_out_is_a_retriable_failure_not_a_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The adapter reads the client's one reply for all partitions; a partition missing
    from it must still be answered, or a caller could take "no answer" for "no cut"."""
    from concurrent.futures import Future

    from confluent_kafka import TopicPartition as KTP

    from kafka_retention.adapters import kafka_calls
    from kafka_retention.core.facts import TopicPartition

    class LowWatermark:
        low_watermark = 7

    def reply(request: object, items: list[KTP]) -> Future[object]:
        done: Future[object] = Future()
        done.set_result({items[0]: LowWatermark()})  # the second partition is left out
        return done

    monkeypatch.setattr(kafka_calls, "submit", reply)
    admin = KafkaAdmin("127.0.0.1:1", timeout=1)
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    out = admin.delete_records({a: 7, b: 9})
    assert out[a] == 7
    missing = out[b]
    assert isinstance(missing, KafkaFailure)
    assert (missing.code, missing.retriable) == ("NO_ANSWER", True)
