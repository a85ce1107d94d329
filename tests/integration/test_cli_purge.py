"""`kafka-retention purge` takes kafka-delete-records.sh's input and ends where it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.stack import Stack
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.purge_cli import offset_json, ours, ours_and_reference


@pytest.mark.stack
def test_same_offset_json_gives_the_same_log_starts_as_kafka_delete_records(
    stack: Stack, kafka: Kafka, tmp_path: Path
) -> None:
    (mine, done), (theirs, ref) = ours_and_reference(
        kafka, kafka.bootstrap, tmp_path, {0: 50, 1: 50, 2: 50}, {0: 10, 1: -1, 2: 0}
    )
    assert done.returncode == 0, done.stderr
    assert ref.returncode == 0, ref.stderr
    assert log_starts(kafka.admin, mine, 3) == log_starts(kafka.admin, theirs, 3) == [10, 50, 0]
    assert f"partition: {mine}-0\tlow_watermark: 10" in done.stdout
    assert f"partition: {mine}-1\tlow_watermark: 50" in done.stdout


@pytest.mark.stack
def test_failure_exits_non_zero_and_names_the_partition(kafka: Kafka, tmp_path: Path) -> None:
    topic = kafka.topic({0: 20, 1: 20})
    done = ours(kafka.bootstrap, offset_json(tmp_path, topic, {0: 5, 1: 500}))
    assert done.returncode == 1
    assert f"partition: {topic}-1\terror: OFFSET_OUT_OF_RANGE" in done.stdout
    assert f"partition: {topic}-0\tlow_watermark: 5" in done.stdout
    assert log_starts(kafka.admin, topic, 2) == [5, 0]


@pytest.mark.stack
def test_dry_run_prints_the_plan_and_deletes_nothing(kafka: Kafka, tmp_path: Path) -> None:
    topic = kafka.topic({0: 20})
    done = ours(kafka.bootstrap, offset_json(tmp_path, topic, {0: -1}), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would_delete_to: 20\trecords: 20" in done.stdout
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_malformed_offset_json_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"partitions": [{"topic": "t", "partition": 0}]}')
    done = ours("127.0.0.1:1", bad)
    assert done.returncode == 2
    assert "partitions[0] needs exactly topic, partition, offset" in done.stderr
