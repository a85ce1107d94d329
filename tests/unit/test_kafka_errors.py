"""Which Kafka errors are waited out and which are reported: classified by code, on the
client library's own error objects (their names differ from Kafka's protocol names)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_retention.adapters.kafka import KafkaFailure, _failure, offset_answer

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
