"""Which Kafka errors are waited out and which are reported: classified by code, on the
client library's own error objects (their names differ from Kafka's protocol names)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_retention.adapters.kafka import _failure

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
