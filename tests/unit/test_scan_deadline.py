"""A batch's record scans end at their time limit (retention_jobs.plan_job.scan_deadline):
a tombstone inventory over every compacted topic cannot hold the cluster's batch slot
for ever. One local SparkSession (the session fixture)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafka_retention.core.plan_request import PlanRequest, Scans
from retention_jobs import plan_job


def _slow(x: int) -> int:
    """A task that would hold a core for five minutes."""
    time.sleep(300)
    return x


def test_a_scan_past_its_time_limit_is_cancelled_and_ends_the_plan(spark: Any) -> None:
    sc = spark.sparkContext
    started = time.monotonic()
    with (
        pytest.raises(plan_job.ScanTimeoutError, match="time limit of 1s"),
        plan_job.scan_deadline(spark, 1.0),
    ):
        sc.parallelize(range(2), 2).map(_slow).collect()
    # Cancelled, tasks interrupted: not the five minutes the tasks asked for.
    assert time.monotonic() - started < 60
    assert set(sc.getJobTags()) == set()
    # The session serves the next batch.
    assert sc.parallelize(range(4), 2).sum() == 6


def test_scans_within_their_limit_run_and_leave_nothing_behind(spark: Any) -> None:
    sc = spark.sparkContext
    with plan_job.scan_deadline(spark, 60.0) as deadline:
        assert deadline.tag in set(sc.getJobTags())
        assert sc.parallelize(range(3), 1).sum() == 3
    assert set(sc.getJobTags()) == set()


def test_time_is_up_between_scans_the_next_one_is_not_started(spark: Any) -> None:
    deadline = plan_job.ScanDeadline(spark, 0.01)
    deadline.start()
    try:
        assert deadline.expired.wait(5)
    finally:
        deadline.stop()
    with pytest.raises(plan_job.ScanTimeoutError, match="nothing was deleted"):
        deadline.check()


def test_the_limit_travels_with_the_request_to_pod_runs() -> None:
    request = PlanRequest(PlanRequest.for_policies("k:9092", {}, {}, 0).connection, (), 0)
    assert request.scans.time_limit_s == 1800.0
    limited = PlanRequest(request.connection, (), 0, Scans(tombstones=True, time_limit_s=5.0))
    assert PlanRequest.from_json(limited.to_json()).scans.time_limit_s == 5.0
