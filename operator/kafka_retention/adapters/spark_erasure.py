"""RecordErasure scans on Spark: ErasureAdmin whose scan_keys runs the Spark erasure scan
(spark-jobs' retention_jobs.erasure_scan, handed in by the handler as the plan job is)
on the operator's local session when the ranges hold enough records to pay Spark's
start-up back; below that, and for everything else (topics, configs, bounds,
tombstones), it is ErasureAdmin itself.

Only local mode: the scan runs in this process's JVM, so its answer never passes through
an object a tenant can write. Pod runs are not built for erasure: in the pod modes the
handler keeps the in-process scan (handlers/erasure.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from kafka_retention.adapters import spark as launcher
from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.core.erasure_scan import PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.plan_request import Connection

log = logging.getLogger(__name__)

# What the log line of a failed Spark scan quotes: the first line of the Java exception,
# bounded (a stack trace names classes, not records).
MAX_FAILURE_TEXT = 500
# A partition goes to Spark only with at least this many offsets: Spark's Kafka source
# runs a task with a consumer of its own for each partition (about 0.3 s each here:
# kafka_source.LONG_RANGE), so many short partitions are faster read in process.
MIN_PARTITION_OFFSETS = 10_000


class ErasureScanJob(Protocol):
    """retention_jobs.erasure_scan.scan_keys on a SparkSession of this process."""

    def __call__(
        self,
        spark: Any,
        conn: Connection,
        ranges: Mapping[TopicPartition, tuple[int, int]],
        digests: AbstractSet[str],
        /,
    ) -> dict[TopicPartition, PartitionScan]: ...


class SourceCheck(Protocol):
    """Whether Spark's Kafka source serves this connection (kafka_source.usable)."""

    def __call__(self, spark: Any, conn: Connection, /) -> bool: ...


def offsets_spanned(ranges: Mapping[TopicPartition, tuple[int, int]]) -> int:
    """Records a scan reads at most: the offsets of every range (compaction's gaps and
    transaction markers make the records fewer, never more)."""
    return sum(max(0, end - start) for start, end in ranges.values())


class SparkErasureAdmin(ErasureAdmin):
    """ErasureAdmin with scan_keys on Spark from `min_records` offsets spanned on."""

    def __init__(
        self,
        bootstrap_servers: str,
        client_config: Mapping[str, str] | None,
        *,
        job: ErasureScanJob,
        usable: SourceCheck,
        min_records: int,
        session: Callable[[], Any] = launcher.local_session,
        min_partition_offsets: int = MIN_PARTITION_OFFSETS,
        **kwargs: Any,
    ) -> None:
        super().__init__(bootstrap_servers, dict(client_config or {}), **kwargs)
        self._job, self._usable = job, usable
        self._min_records, self._session = min_records, session
        # Never above the threshold itself: an operator told to scan from 1 record on
        # Spark (the e2e tests, a trial) scans every partition there.
        self._min_partition = min(min_partition_offsets, min_records)

    def scan_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], digests: AbstractSet[str]
    ) -> dict[TopicPartition, PartitionScan | KafkaFailure]:
        """The long partitions (min_partition_offsets or more) on Spark when together they
        span at least min_records offsets and Spark's Kafka source serves the connection,
        the others in this process; else all in this process. A Spark scan that fails
        (the session does not start, a task fails) is done again in this process, whole:
        the in-process scan is the reference, and an erasure must not stall on Spark. One
        that was cancelled (the operator stopping) is not: its partitions answer a
        retriable failure and the erasure's next run scans again."""
        long = {tp: r for tp, r in ranges.items() if r[1] - r[0] >= self._min_partition}
        spanned = offsets_spanned(long)
        if not long or spanned < self._min_records:
            return super().scan_keys(ranges, digests)
        short = {tp: r for tp, r in ranges.items() if tp not in long}
        out = self._on_spark(long, digests, spanned)
        if short:
            out.update(super().scan_keys(short, digests))
        return out

    def _on_spark(
        self,
        ranges: Mapping[TopicPartition, tuple[int, int]],
        digests: AbstractSet[str],
        spanned: int,
    ) -> dict[TopicPartition, PartitionScan | KafkaFailure]:
        conn = Connection(self._bootstrap, dict(self._client_config))
        started = time.monotonic()
        try:
            spark = self._session()
            if not self._usable(spark, conn):
                # kafka_source.usable has logged why (no jars, a property Java lacks).
                return super().scan_keys(ranges, digests)
            found = self._job(spark, conn, ranges, digests)
        except Exception as err:  # py4j's and Spark's errors have no common base
            if "cancelled" in str(err).lower() or "canceled" in str(err).lower():
                # The session's jobs were cancelled (the operator stops): scanning
                # everything again in process now would outlive the handler.
                log.info("erasure scan on Spark cancelled: %s", _first_line(err))
                why = KafkaFailure("SPARK_CANCELLED", _first_line(err), True)
                return dict.fromkeys(ranges, why)
            log.warning(
                "erasure scan on Spark failed, scanning in process instead: %s", _first_line(err)
            )
            return super().scan_keys(ranges, digests)
        log.info(
            "erasure scan on Spark: %d partitions, %d offsets in %.1f s",
            len(ranges),
            spanned,
            time.monotonic() - started,
        )
        out: dict[TopicPartition, PartitionScan | KafkaFailure] = dict(found)
        missing = KafkaFailure("NO_ANSWER", "the Spark scan gave no result", True)
        out.update({tp: missing for tp in ranges if tp not in out})
        return out


def _first_line(err: BaseException) -> str:
    lines: Sequence[str] = [line.strip() for line in str(err).splitlines() if line.strip()]
    # py4j: "An error occurred while calling ...", then ": " and the Java exception.
    java = next((line[2:] for line in lines if line.startswith(": ")), None)
    text = java or (lines[0] if lines else type(err).__name__)
    return text[:MAX_FAILURE_TEXT]
