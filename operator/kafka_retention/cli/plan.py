"""`kafka-retention plan -f POLICY.yaml`: run the plan pipeline locally, delete nothing."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from kafka_retention.cli.common import Progress, UsageError
from kafka_retention.core.plan_request import PlanRequest
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.policy.report import group_summary


def read_policy(path: Path) -> Mapping[str, Any]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not YAML: {exc}") from None
    policies = [d for d in docs if isinstance(d, dict) and d.get("kind") == "RetentionPolicy"]
    if len(policies) != 1:
        raise UsageError(f"{path} must hold exactly one RetentionPolicy (found {len(policies)})")
    spec = policies[0].get("spec")
    if not isinstance(spec, dict):
        raise UsageError(f"{path}: the RetentionPolicy has no spec")
    return spec


def run_plan(
    path: Path,
    output: Path | None,
    client_config: Mapping[str, str] | None,
    out: TextIO = sys.stdout,
    progress: Progress | None = None,
) -> int:
    """Plan and print; the stages go to `progress` (on a terminal, or with -v)."""
    from kafka_retention.adapters.spark import local_session
    from retention_jobs.plan_job import load, run

    try:
        policy = parse_policy_spec(read_policy(path))
    except SpecError as err:
        raise UsageError(f"{path}: {err}") from None
    if policy.strimzi is not None:
        # Resolving a Strimzi reference reads Kubernetes objects; this command reads Kafka only.
        raise UsageError(
            f"{path}: spec.cluster.strimzi is resolved by the operator; give "
            "spec.cluster.bootstrapServers (and --command-config) to plan from the command line"
        )
    shown = progress if progress is not None else Progress()
    shown.stage("starting Spark (local mode)")
    request = PlanRequest.for_policy(policy, dict(client_config or {}), int(time.time() * 1000))
    spark = local_session()
    with shown.ticking(lambda: spark_tasks(spark)):
        result = run(spark, request, shown.stage)
    shown.clear()
    _print_table(result.rows, out)
    for g in group_summary(result.rows, result.group_types):
        print(
            f"group {g.name}: read as {g.type}, a position on {g.with_position} of "
            f"{g.partitions} partitions, {g.records_behind} records behind",
            file=out,
        )
    for topic, why in sorted(result.skipped.items()):
        print(f"skipped {topic}: {why}", file=out)
    if output is not None:
        load(result, output)
        shown.stage(f"wrote {output}")
        shown.clear()
    print(
        f"{sum(r.records_to_delete or 0 for r in result.rows)} records "
        f"(~{sum(r.bytes_to_delete_estimate or 0 for r in result.rows)} bytes) would be "
        f"deleted from {sum(1 for r in result.rows if r.records_to_delete)} of "
        f"{len(result.rows)} partitions; nothing was deleted",
        file=out,
    )
    return 0


def spark_tasks(spark: Any) -> str | None:
    """How far Spark's running stages are, in tasks (each reads or scans a slice of the
    partitions): `3 of 8 Spark tasks`; None while no stage runs."""
    tracker = spark.sparkContext.statusTracker()
    stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
    running = [s for s in stages if s is not None]
    if not running:
        return None
    done = sum(s.numCompletedTasks for s in running)
    return f"{done} of {sum(s.numTasks for s in running)} Spark tasks"


def _print_table(rows: Sequence[PlanRow], out: TextIO) -> None:
    header = (
        "TOPIC",
        "PART",
        "LOG-START",
        "HW",
        "TARGET",
        "DELETE",
        "~BYTES",
        "RULE",
        "UNREAD-LOSS",
    )
    table = [header]
    for r in rows:
        losses = ", ".join(
            f"{g.group}:{g.unconsumed_to_delete}" for g in r.groups if g.unconsumed_to_delete
        )
        table.append(
            (
                r.topic,
                str(r.partition),
                str(r.log_start_offset),
                str(r.high_watermark),
                str(r.target_offset),
                str(r.records_to_delete),
                str(r.bytes_to_delete_estimate or 0),
                r.rule or "",
                losses or "-",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip(), file=out
        )
