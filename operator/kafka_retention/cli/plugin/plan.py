"""`kubectl kafka-retention plan` for a RecordPurge: what it would delete now, without
deleting anything.

The operator plans it, not the plugin: a copy of the purge with spec.dryRun true is created
in the same namespace (so the operator's tenancy and the binding apply to it exactly as to
the purge), the plan it stores is read back, and the copy is deleted. The formatting is
pure: `offset_json` is kafka-delete-records.sh's --offset-json-file format, so a plan can be
checked by hand or fed to that tool."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka_retention.cli.plugin import dry_copy, text
from kafka_retention.cli.plugin.kube import PluginError
from kafka_retention.core.purge_states import FINAL_PHASES, Phase, State
from kafka_retention.core.resources import RECORD_PURGES
from kafka_retention.kube_objects.chunks import set_base


def dry_run_copy(document: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The RecordPurge the operator plans for `document`: its spec with dryRun true."""
    return dry_copy.dry_run_copy(document, namespace, "RecordPurge")


def folded(status: Mapping[str, Any]) -> bool:
    """Whether status.results holds per-topic summaries instead of every partition (then
    the results ConfigMaps hold them all)."""
    return any(
        r.get("partition") == -1 and str(r.get("note", "")).startswith(("summary of", "... and"))
        for r in status.get("results") or []
    )


def entries_of(obj: Mapping[str, Any], load: Callable[[str], str | None]) -> list[dict[str, Any]]:
    """Every partition's entry of a purge: status.results, or when those are folded, the
    results ConfigMaps (`load(suffix)` returns a stored set's JSON lines); while it is still
    purging, its stored plan. A purge whose results could not be stored beside its status
    has only the folded ones."""
    status = obj.get("status") or {}
    suffix = None
    if status.get("phase") == Phase.PURGING and status.get("planRef"):
        suffix = "plan"  # the results ConfigMaps are written when it finishes
    elif folded(status) and status.get("resultsRef"):
        suffix = "results"
    if suffix is None:
        return [dict(r) for r in status.get("results") or []]
    payload = load(suffix)
    if payload is None:
        raise PluginError(
            f"the {suffix} ConfigMaps of RecordPurge {obj['metadata']['name']} are gone"
        )
    try:
        return [json.loads(line) for line in payload.splitlines() if line.strip()]
    except ValueError as err:
        raise PluginError(f"the {suffix} ConfigMaps cannot be read: {err}") from None


def cuts(entries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The entries whose cut would delete records, in topic and partition order."""
    found = [
        e
        for e in entries
        if e.get("state") in (State.DRY_RUN, State.PLANNED)
        and e.get("requestedOffset") is not None
        and int(e.get("recordsToDelete") or 0) > 0
    ]
    return sorted(found, key=lambda e: (str(e["topic"]), int(e["partition"])))


def offset_json(entries: Sequence[Mapping[str, Any]]) -> str:
    """The cuts as kafka-delete-records.sh's --offset-json-file."""
    partitions = [
        {"topic": e["topic"], "partition": e["partition"], "offset": e["requestedOffset"]}
        for e in cuts(entries)
    ]
    return json.dumps({"partitions": partitions, "version": 1}, indent=2) + "\n"


def offset_csv(entries: Sequence[Mapping[str, Any]]) -> str:
    """The cuts as CSV: topic,partition,offset,records,bytes (bytes empty when the operator
    could not estimate them)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["topic", "partition", "offset", "records", "bytes"])
    for e in cuts(entries):
        estimate = e.get("bytesToDeleteEstimate")
        writer.writerow(
            [
                e["topic"],
                e["partition"],
                e["requestedOffset"],
                e.get("recordsToDelete"),
                "" if estimate is None else estimate,
            ]
        )
    return out.getvalue()


def plan_table(entries: Sequence[Mapping[str, Any]]) -> str:
    """Every partition of the plan, those that would delete nothing and those that could not
    be planned too, and the totals."""
    ordered = sorted(entries, key=lambda e: (str(e.get("topic")), int(e.get("partition", 0))))
    rows = []
    for e in ordered:
        why = "; ".join(str(e[k]) for k in ("reason", "note", "error") if e.get(k))
        offset = e.get("requestedOffset")
        rows.append(
            [
                str(e.get("topic")),
                "*" if e.get("partition") == -1 else str(e.get("partition")),
                text.count(e.get("logStartBefore")),
                "-" if offset is None else text.count(offset),
                text.count(e.get("recordsToDelete")),
                text.size(e.get("bytesToDeleteEstimate")),
                why or "-",
            ]
        )
    header = ["TOPIC", "PARTITION", "LOG START", "CUT AT", "RECORDS", "BYTES", "WHY"]
    moving = cuts(entries)
    records = sum(int(e.get("recordsToDelete") or 0) for e in moving)
    estimates = [e.get("bytesToDeleteEstimate") for e in moving]
    total = sum(int(b) for b in estimates if b is not None)
    failed = sum(1 for e in entries if e.get("state") == State.FAILED)
    words = (
        f"would delete {text.count(records)} records ({text.size(total)}) from "
        f"{text.plural(len(moving), 'partition')} of {len(entries):,}"
    )
    if failed:
        words += f"; {text.plural(failed, 'partition')} could not be planned"
    return text.table(header, rows) + words + "\n"


def render(entries: Sequence[Mapping[str, Any]], output: str) -> str:
    if output == "json":
        return offset_json(entries)
    if output == "csv":
        return offset_csv(entries)
    return plan_table(entries)


def run(
    document: Mapping[str, Any], asking: dry_copy.Asking
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Have the operator plan `document` (a RecordPurge) as a dry-run copy, and return the
    copy's entries and its final state; the copy is deleted whatever happens."""

    def phase(obj: Mapping[str, Any]) -> str:
        return str((obj.get("status") or {}).get("phase") or "waiting for the operator")

    with dry_copy.planned(
        asking,
        RECORD_PURGES,
        dry_run_copy(document, asking.namespace),
        done=lambda obj: phase(obj) in FINAL_PHASES,
        waiting=phase,
    ) as obj:
        base = set_base("RecordPurge", obj["metadata"]["name"])
        entries = entries_of(
            obj, lambda suffix: asking.cluster.configmap_set(asking.namespace, base, suffix)
        )
        return entries, obj


def failure(obj: Mapping[str, Any]) -> str | None:
    """Why the copy could not be planned at all, from its conditions; None if it was."""
    status = obj.get("status") or {}
    if status.get("phase") != Phase.FAILED:
        return None
    for c in text.ordered_conditions(status.get("conditions")):
        if text.failing(c):
            return f"{c.get('reason')}: {c.get('message')}"
    return "the operator ended the plan as Failed"
