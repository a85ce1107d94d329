"""`kafka-retention purge` and Kafka's own kafka-delete-records.sh (DeleteRecordsCommand)
run on the same offset JSON file, so a test can hold the one against the other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from devstack import paths
from tests.helpers.kafka import Kafka

Run = subprocess.CompletedProcess[str]


def offset_json(tmp_path: Path, topic: str, cuts: dict[int, int]) -> Path:
    """An --offset-json-file as kafka-delete-records.sh reads it."""
    path = tmp_path / f"{topic}.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": p, "offset": o} for p, o in cuts.items()
                ],
            }
        )
    )
    return path


def ours(bootstrap: str, offsets: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`kafka-retention purge` with kafka-delete-records.sh's arguments."""
    exe = Path(sys.executable).with_name("kafka-retention")
    return _delete_records([str(exe), "purge"], bootstrap, offsets, extra)


def reference(bootstrap: str, offsets: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Kafka's own DeleteRecordsCommand (kafka-delete-records.sh) on the same input."""
    command = ["java", "-Xmx256m", "-cp", f"{paths.kafka_libs()}/*"]
    return _delete_records(
        [*command, "org.apache.kafka.tools.DeleteRecordsCommand"], bootstrap, offsets, extra
    )


def _delete_records(
    command: list[str], bootstrap: str, offsets: Path, extra: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    """One run of a command that takes kafka-delete-records.sh's arguments."""
    return subprocess.run(
        [*command, "--bootstrap-server", bootstrap, "--offset-json-file", str(offsets), *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def ours_and_reference(
    kafka: Kafka,
    server: str,
    tmp_path: Path,
    records: dict[int, int],
    cuts: dict[int, int],
    *extra: str,
) -> tuple[tuple[str, Run], tuple[str, Run]]:
    """Two topics of the same records, one purged by ours and one by Kafka's tool, with
    the same cuts and arguments, through `server`: ((mine, our run), (theirs, Kafka's))."""
    mine, theirs = kafka.topic(records), kafka.topic(records)
    done = ours(server, offset_json(tmp_path, mine, cuts), *extra)
    return (mine, done), (theirs, reference(server, offset_json(tmp_path, theirs, cuts), *extra))
