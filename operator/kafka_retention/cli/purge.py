"""`kafka-retention purge`: kafka-delete-records.sh's interface over the same service.

Reads the tool's offset JSON ({"partitions": [{"topic", "partition", "offset"}],
"version": 1}), runs the RecordPurge service with an in-memory status, and prints per
partition low watermarks and errors the way the reference tool does. On a terminal, the
status.progress the service writes is shown as it goes (partitions done of total).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.cli.common import Progress, UsageError, read_properties
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_entry import from_lines
from kafka_retention.core.purge_states import Phase, State
from kafka_retention.services import purge as service


class MemoryStore:
    """Status kept in a dict, and the plan in memory: the CLI has no object to write them
    to; the process itself is what a retry resumes."""

    def __init__(self, shown: Callable[[Mapping[str, Any]], None] = lambda _: None) -> None:
        self.status: dict[str, Any] = {}
        self.blobs: dict[str, str] = {}
        self._shown = shown  # hears of each status.progress written

    def patch(self, status: Mapping[str, Any]) -> None:
        self.status.update(status)
        if status.get("progress"):
            self._shown(status["progress"])

    def save(self, suffix: str, payload: str) -> dict[str, Any]:
        self.blobs[suffix] = payload
        return {"configMap": f"memory:{suffix}", "bytes": len(payload)}

    def load(self, suffix: str) -> str | None:
        return self.blobs.get(suffix)


def read_offset_json(path: Path) -> list[dict[str, Any]]:
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    parts = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(parts, list) or not parts:
        raise UsageError(
            f'{path} needs a non-empty "partitions" list, as in '
            '{"partitions": [{"topic": "t", "partition": 0, "offset": 10}], '
            '"version": 1}'
        )
    for i, p in enumerate(parts):
        if not isinstance(p, dict) or set(p) - {"topic", "partition", "offset"} or len(p) != 3:
            raise UsageError(f"{path}: partitions[{i}] needs exactly topic, partition, offset")
    return parts


# The least time between two progress lines: the status is in memory, the line cheap.
PROGRESS_EVERY_S = 0.5


def progress_line(progress: Mapping[str, Any]) -> str:
    """status.progress in words: `deleting: 20000 of 100000 partitions`."""
    total = progress.get("partitionsTotal")
    if total is None:
        return str(progress["stage"])
    return f"{progress['stage']}: {progress.get('partitionsDone', 0)} of {total} partitions"


def run_purge(
    bootstrap: str,
    offsets: Path,
    command_config: Path | None,
    dry_run: bool,
    allow_internal: bool,
    out: TextIO = sys.stdout,
    attempts: int = 6,
    progress: Progress | None = None,
) -> int:
    spec = {
        "cluster": {"bootstrapServers": bootstrap},
        "partitions": read_offset_json(offsets),
        "dryRun": dry_run,
        "allowInternalTopics": allow_internal,
    }
    extra = read_properties(command_config) if command_config else None
    shown = progress if progress is not None else Progress()
    store = MemoryStore(lambda p: shown.stage(progress_line(p)))

    def connect(request: PurgeRequest) -> KafkaAdmin:
        return KafkaAdmin(request.bootstrap_servers, extra)

    print("Executing records delete operation", file=out, flush=True)

    def attempt() -> service.Outcome:
        return service.reconcile(
            service.Purge(
                spec=spec,
                status=dict(store.status),
                generation=None,
                store=store,
                blobs=store,
                connect=connect,
                now=lambda: datetime.now(UTC),
                progress_every_s=PROGRESS_EVERY_S,
                # Status is this process's memory: each stage is shown on the terminal
                # at once, with no API server to spare a write.
                planning_shown_after_s=0,
                describe_cluster=False,
            )
        )

    # A retriable failure (a leader moving, a broker restarting) says how long to wait.
    for tried in range(1, attempts + 1):
        try:
            outcome = attempt()
            break
        except service.Retry as pending:
            shown.clear()
            if tried == attempts:
                print(f"Error: gave up after {attempts} attempts: {pending}", file=sys.stderr)
                _print_results(store, out)
                return 1
            print(f"retrying in {pending.delay:.0f}s: {pending}", file=sys.stderr, flush=True)
            time.sleep(pending.delay)
    shown.clear()
    if outcome.invalid_field is not None:
        print(f"Error: {outcome.message}", file=sys.stderr)
        return 1
    print(
        "Records delete operation completed:"
        if not dry_run
        else "Dry run completed (nothing deleted):",
        file=out,
    )
    _print_results(store, out)
    return 0 if outcome.phase == Phase.SUCCEEDED else 1


def _print_results(store: MemoryStore, out: TextIO) -> None:
    # Status folds large results per topic; the CLI prints every partition.
    stored = store.load("results")
    entries = (
        [e.to_status() for e in from_lines(stored)]
        if stored is not None
        else store.status.get("results", [])
    )
    out.write("".join(_result_line(e) + "\n" for e in entries))


def _result_line(e: Mapping[str, Any]) -> str:
    name = f"{e['topic']}-{e['partition']}"
    if e.get("error"):
        return f"partition: {name}\terror: {e['error']}"
    if e.get("state") == State.DRY_RUN:
        estimate = e.get("bytesToDeleteEstimate")
        return (
            f"partition: {name}\tlow_watermark: {e['logStartBefore']}\t"
            f"would_delete_to: {e['requestedOffset']}\trecords: {e['recordsToDelete']}"
            + (f"\tbytes_estimate: {estimate}" if estimate is not None else "")
        )
    return f"partition: {name}\tlow_watermark: {e.get('lowWatermark')}"
