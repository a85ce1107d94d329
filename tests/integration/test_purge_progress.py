"""Progress of a purge on the stack: the status.progress a RecordPurge's run writes as its
rounds of deletes are answered, what the API server keeps of it, and the command line's
progress, shown on a terminal and never in piped output."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from devstack.stack import Stack
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.cli.purge import MemoryStore
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_states import Phase
from kafka_retention.services import purge as service
from tests.helpers.cli import policy_file
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.purge_cli import offset_json, ours

pytestmark = pytest.mark.stack


def test_a_purge_reports_partitions_done_of_total_as_its_rounds_are_answered(
    kafka: Kafka,
) -> None:
    topic = kafka.topic(dict.fromkeys(range(60), 5))
    shown: list[Mapping[str, Any]] = []
    store = MemoryStore(shown.append)  # hears of each status.progress written

    def connect(request: PurgeRequest) -> KafkaAdmin:
        return KafkaAdmin(request.bootstrap_servers)

    outcome = service.reconcile(
        service.Purge(
            spec={
                "cluster": {"bootstrapServers": kafka.bootstrap},
                "topics": [{"name": topic, "before": {"highWatermark": True}}],
            },
            status={},
            generation=1,
            store=store,
            blobs=store,
            connect=connect,
            now=lambda: datetime.now(UTC),
            progress_every_s=0,  # every report written: the test sees each round
            delete_round=20,
            planning_shown_after_s=0,  # and the Planning phase, however quick
        )
    )
    assert outcome.phase == Phase.SUCCEEDED, outcome.message
    assert [(p["stage"], p["partitionsDone"]) for p in shown] == [
        ("planning", 0),
        ("storing", 0),
        ("deleting", 0),
        ("deleting", 20),
        ("deleting", 40),
    ]
    assert {p.get("partitionsTotal") for p in shown[1:]} == {60}
    assert store.status["progress"] is None  # the outcome clears it
    assert store.status["phase"] == Phase.SUCCEEDED
    assert log_starts(kafka.admin, topic, 60) == [5] * 60


def test_the_api_server_keeps_a_purges_progress_and_refuses_an_unknown_stage(
    stack: Stack, namespace: str
) -> None:
    purge = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": "progressing", "namespace": namespace},
        "spec": {
            "cluster": {"bootstrapServers": "127.0.0.1:39091"},
            "partitions": [{"topic": "orders", "partition": 0, "offset": 1}],
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(purge))
    progress = {
        "stage": "deleting",
        "partitionsDone": 20000,
        "partitionsTotal": 100000,
        "updatedAt": "2026-11-28T12:00:00Z",
    }

    def patch(status: Mapping[str, Any]) -> subprocess.CompletedProcess[str]:
        return stack.kubectl(
            *("patch", "recordpurge", "progressing", "-n", namespace),
            *("--subresource=status", "--type=merge", "-p", json.dumps({"status": status})),
            check=False,
        )

    summary = {"partitions": 100000, "purged": 0, "failed": 0, "recordsDeleted": 0}
    done = patch({"phase": "Purging", "summary": summary, "progress": progress})
    assert done.returncode == 0, done.stderr
    got = json.loads(
        stack.kubectl("get", "recordpurge", "progressing", "-n", namespace, "-o", "json").stdout
    )
    assert got["status"]["progress"] == progress  # not pruned: the schema has the field
    wide = stack.kubectl("get", "recordpurge", "progressing", "-n", namespace).stdout
    header, row = (line.split() for line in wide.splitlines())
    assert header[5:7] == ["PROGRESS", "DONE"], wide
    assert row[5:7] == ["deleting", "20000"], wide

    bad = patch({"progress": {**progress, "stage": "thinking"}})
    assert bad.returncode != 0
    assert "status.progress.stage" in bad.stderr


def test_piped_purge_prints_only_what_kafka_delete_records_prints(
    kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 10, 1: 10, 2: 10})
    done = ours(kafka.bootstrap, offset_json(tmp_path, topic, {0: 4, 1: 4, 2: -1}))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 4",
        f"partition: {topic}-1\tlow_watermark: 4",
        f"partition: {topic}-2\tlow_watermark: 10",
    ]


def on_a_terminal(args: list[str], out: Path, timeout: float) -> tuple[int, str, str]:
    """`kafka-retention ARGS` with stderr on a terminal (a pty) and stdout in a file, as
    `kafka-retention ... > out` run by hand: (exit status, what the terminal showed,
    stdout)."""
    exe = Path(sys.executable).with_name("kafka-retention")
    leader, follower = pty.openpty()
    screen = b""
    try:
        with out.open("w") as stdout:
            proc = subprocess.Popen([str(exe), *args], stdout=stdout, stderr=follower)
        os.close(follower)
        deadline = time.monotonic() + timeout
        # Read as it comes: a terminal holds little, and a writer to a full one waits.
        while time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # closed by the command's exit, and drained
                    break
                if not chunk:
                    break
                screen += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(leader)
    return code, screen.decode(errors="replace"), out.read_text()


def test_purge_on_a_terminal_shows_partitions_done_of_total_then_clears_the_line(
    kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 10, 1: 10, 2: 10})
    offsets = offset_json(tmp_path, topic, {0: 4, 1: 4, 2: -1})
    args = ["purge", "--bootstrap-server", kafka.bootstrap, "--offset-json-file", str(offsets)]
    code, err, out = on_a_terminal(args, tmp_path / "out.txt", timeout=120)
    assert code == 0, err
    assert "planning" in err
    assert "deleting: 0 of 3 partitions" in err
    assert "\n" not in err, err  # one line, rewritten
    assert err.rstrip(" ").endswith("\r"), err  # and cleared before the results
    assert out.splitlines()[-1] == f"partition: {topic}-2\tlow_watermark: 10"


def test_plan_on_a_terminal_shows_its_stages_on_one_line_and_prints_the_table(
    kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 30, 1: 30})
    group = kafka.group_at(topic, "g", {0: 12, 1: 30})
    rule = f"deleteConsumed: {{groups: [{group}]}}"
    policy = policy_file(tmp_path / "policy.yaml", kafka.bootstrap, topic, rule)
    code, err, out = on_a_terminal(["plan", "-f", str(policy)], tmp_path / "out.txt", 300)
    assert code == 0, err
    shown = [line for line in err.split("\r") if line.startswith("[")]
    assert any("starting Spark (local mode)" in line for line in shown), err
    assert any("computing cuts" in line for line in shown), err
    assert "nothing was deleted" in out
    assert "computing cuts" not in out
