"""Which scan a RecordErasure gets: Spark from --erasure-spark-min-records offsets on
(local mode), the in-process scan below it, without Spark's Kafka source, in the pod
modes, and when the Spark scan fails (logged in one bounded line)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import kopf
import pytest

from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.adapters.spark_erasure import (
    MAX_FAILURE_TEXT,
    SparkErasureAdmin,
    offsets_spanned,
)
from kafka_retention.cli import main
from kafka_retention.config import ERASURE_SPARK_MIN_RECORDS, SparkConfig
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.plan_request import Connection
from kafka_retention.handlers.erasure import admin_maker

A, B = TopicPartition("orders", 0), TopicPartition("orders", 1)
RANGES = {A: (10, 60), B: (0, 50)}  # 100 offsets
DIGEST = "ab" * 32
SESSION = object()


class Job:
    def __init__(self, answer: Any = None) -> None:
        self.calls: list[tuple[Any, Connection, dict[TopicPartition, tuple[int, int]]]] = []
        self.answer = answer

    def __call__(
        self,
        spark: Any,
        conn: Connection,
        ranges: Mapping[TopicPartition, tuple[int, int]],
        digests: AbstractSet[str],
        /,
    ) -> dict[TopicPartition, PartitionScan]:
        self.calls.append((spark, conn, dict(ranges)))
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer is not None:
            return dict(self.answer)
        return {tp: PartitionScan(tp, s, e, examined=e - s) for tp, (s, e) in ranges.items()}


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> list[Mapping[TopicPartition, Any]]:
    """ErasureAdmin.scan_keys, recorded instead of reading Kafka."""
    seen: list[Mapping[TopicPartition, Any]] = []

    def scan_keys(self: ErasureAdmin, ranges: Any, digests: Any) -> dict[TopicPartition, Any]:
        seen.append(ranges)
        return {tp: PartitionScan(tp, s, e) for tp, (s, e) in ranges.items()}

    monkeypatch.setattr(ErasureAdmin, "scan_keys", scan_keys)
    return seen


def admin(job: Job, min_records: int, usable: bool = True) -> SparkErasureAdmin:
    return SparkErasureAdmin(
        "127.0.0.1:1",
        {"security.protocol": "PLAINTEXT"},
        job=job,
        usable=lambda spark, conn: usable,
        min_records=min_records,
        session=lambda: SESSION,
        min_partition_offsets=1,
    )


def test_offsets_spanned_counts_every_range_and_no_empty_one() -> None:
    assert offsets_spanned({**RANGES, TopicPartition("t", 2): (5, 5)}) == 100


def test_a_scan_spanning_the_threshold_runs_on_spark_with_the_admins_connection(
    in_process: list[Any],
) -> None:
    job = Job()
    found = admin(job, 100).scan_keys(RANGES, {DIGEST})
    assert [(s, c, r) for s, c, r in job.calls] == [
        (SESSION, Connection("127.0.0.1:1", {"security.protocol": "PLAINTEXT"}), RANGES)
    ]
    assert found[A] == PartitionScan(A, 10, 60, examined=50)
    assert in_process == []


def test_a_scan_below_the_threshold_stays_in_process(in_process: list[Any]) -> None:
    job = Job()
    admin(job, 101).scan_keys(RANGES, {DIGEST})
    assert job.calls == []
    assert in_process == [RANGES]


def test_without_a_usable_kafka_source_the_scan_stays_in_process(in_process: list[Any]) -> None:
    job = Job()
    admin(job, 0, usable=False).scan_keys(RANGES, {DIGEST})
    assert (job.calls, in_process) == ([], [RANGES])


def test_a_failed_spark_scan_is_done_again_in_process_and_logged_in_one_bounded_line(
    in_process: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    error = RuntimeError(
        "An error occurred while calling o123.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted " + "x" * 2000 + "\n\tat org.apache..."
    )
    found = admin(Job(error), 0).scan_keys(RANGES, {DIGEST})
    assert in_process == [RANGES]
    assert found == {tp: PartitionScan(tp, s, e) for tp, (s, e) in RANGES.items()}
    (line,) = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert "org.apache.spark.SparkException: Job aborted" in line
    assert "o123" not in line
    assert len(line) < MAX_FAILURE_TEXT + 100


def test_only_long_partitions_go_to_spark_and_the_short_ones_are_read_in_process(
    in_process: list[Any],
) -> None:
    """Spark's source pays a task and a consumer per partition: many short partitions are
    faster in process, even when the ranges together pass the threshold."""
    long, short = TopicPartition("big", 0), TopicPartition("small", 0)
    ranges = {long: (0, 20_000), short: (0, 500)}
    job = Job()
    made = SparkErasureAdmin(
        "127.0.0.1:1", {}, job=job, usable=lambda s, c: True, min_records=10_000,
        session=lambda: SESSION, min_partition_offsets=10_000,
    )  # fmt: skip
    found = made.scan_keys(ranges, {DIGEST})
    assert [r for _, _, r in job.calls] == [{long: (0, 20_000)}]
    assert in_process == [{short: (0, 500)}]
    assert set(found) == {long, short}


def test_many_short_partitions_stay_in_process_whatever_their_total(
    in_process: list[Any],
) -> None:
    ranges = {TopicPartition("t", p): (0, 600) for p in range(2_000)}  # 1.2M offsets
    job = Job()
    made = SparkErasureAdmin(
        "127.0.0.1:1", {}, job=job, usable=lambda s, c: True, min_records=1_000_000,
        session=lambda: SESSION,
    )  # fmt: skip
    made.scan_keys(ranges, {DIGEST})
    assert job.calls == []
    assert in_process == [ranges]


def test_a_cancelled_spark_scan_is_not_done_again_in_process(in_process: list[Any]) -> None:
    """The operator stopping cancels the session's jobs: a whole in-process rescan then
    would outlive the handler; the partitions answer a retriable failure instead."""
    error = RuntimeError(
        "An error occurred while calling o9.collectToPython.\n"
        ": org.apache.spark.SparkException: Job 7 cancelled because SparkContext was shut down"
    )
    found = admin(Job(error), 0).scan_keys(RANGES, {DIGEST})
    assert in_process == []
    failed = {tp: f for tp, f in found.items() if isinstance(f, KafkaFailure)}
    assert {tp: (f.code, f.retriable) for tp, f in failed.items()} == {
        A: ("SPARK_CANCELLED", True),
        B: ("SPARK_CANCELLED", True),
    }


def test_a_session_that_does_not_start_leaves_the_scan_in_process(
    in_process: list[Any],
) -> None:
    def no_session() -> Any:
        raise RuntimeError("Java gateway process exited before sending its port number")

    job = Job()
    made = SparkErasureAdmin(
        "127.0.0.1:1", {}, job=job, usable=lambda s, c: True, min_records=0, session=no_session
    )
    made.scan_keys(RANGES, {DIGEST})
    assert (job.calls, in_process) == ([], [RANGES])


def test_a_partition_the_spark_scan_left_out_is_no_answer_not_an_empty_scan() -> None:
    found = admin(Job({A: PartitionScan(A, 10, 60)}), 0).scan_keys(RANGES, {DIGEST})
    assert isinstance(found[A], PartitionScan)
    failure = found[B]
    assert isinstance(failure, KafkaFailure)
    assert (failure.code, failure.retriable) == ("NO_ANSWER", True)


def test_local_mode_wires_the_spark_admin_with_the_configured_threshold() -> None:
    make = admin_maker(SparkConfig(mode="local", erasure_min_records=7))
    made = make("127.0.0.1:1", {})
    assert isinstance(made, SparkErasureAdmin)
    assert made._min_records == 7


@pytest.mark.parametrize("mode", ["kubernetes", "spark-operator"])
def test_pod_modes_keep_the_in_process_scan(mode: Any) -> None:
    made = admin_maker(SparkConfig(mode=mode))("127.0.0.1:1", {})
    assert type(made) is ErasureAdmin


@pytest.mark.parametrize(
    ("flags", "line"),
    [([], ERASURE_SPARK_MIN_RECORDS), (["--erasure-spark-min-records", "1"], 1)],
)
def test_the_erasure_spark_line_comes_from_its_flag(
    flags: list[str], line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, object] = {}
    monkeypatch.delenv("KAFKA_RETENTION_SPARK_MODE", raising=False)
    monkeypatch.setattr(kopf, "run", lambda **kwargs: seen.update(kwargs))
    assert main(["run", "-A", *flags]) == 0
    memo = seen["memo"]
    assert isinstance(memo, kopf.Memo)
    assert memo.config.spark.erasure_min_records == line
