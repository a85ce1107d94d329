"""`kubectl kafka-retention status`: one row per RetentionPolicy, RecordPurge and
RecordErasure, built from their status alone (pure: the objects come in as the API server
returns them)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kafka_retention.cli.plugin import text
from kafka_retention.core import erasure_states
from kafka_retention.core.purge_states import FINAL_PHASES

POLICY = "RetentionPolicy"
PURGE = "RecordPurge"
ERASURE = "RecordErasure"
KIND_ORDER = (POLICY, PURGE, ERASURE)

# Notes the planning core writes on a purge's partitions (core/rules.py) that name what
# lowered a cut.
_LOWERED_BY_GROUP = re.compile(r"committed offset of (\S+)$")
_UNCOMMITTED_GROUP = re.compile(r"protected group (\S+) has no committed offset")
_HIGH_WATERMARK = "lowered to the high watermark"


def holders(status: Mapping[str, Any]) -> list[tuple[str, int]]:
    """Who held a policy's cuts back in its last run (status.topics[].heldBackBy), summed
    over topics, the most partitions first; each as the words a table cell shows."""
    per: dict[str, int] = {}
    for topic in status.get("topics") or []:
        for held in topic.get("heldBackBy") or []:
            per[holder_name(held)] = per.get(holder_name(held), 0) + int(
                held.get("partitions") or 0
            )
    return sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))


def holder_name(held: Mapping[str, Any]) -> str:
    """A heldBackBy entry in a few words: `group billing (analytics)`, `policy p (ns)`."""
    namespace = held.get("namespace") or "?"
    if held.get("group"):
        return f"group {held['group']} ({namespace})"
    if held.get("policy"):
        return f"policy {held['policy']} ({namespace})"
    return f"a policy ({namespace})"


def limits(status: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The guards that limited a policy's cuts (status.topics[].cut.limits), summed over
    topics, the most partitions first."""
    per: dict[str, int] = {}
    for topic in status.get("topics") or []:
        for limit in (topic.get("cut") or {}).get("limits") or []:
            guard = str(limit.get("guard") or "?")
            per[guard] = per.get(guard, 0) + int(limit.get("partitions") or 0)
    return sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))


def purge_holders(results: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """What lowered a purge's cuts, from its results' notes: protected groups and the high
    watermark, with the partitions each lowered."""
    per: dict[str, int] = {}
    for result in results:
        for note in str(result.get("note") or "").split("; "):
            found = _LOWERED_BY_GROUP.search(note) or _UNCOMMITTED_GROUP.search(note)
            name = (
                f"group {found.group(1)}"
                if found
                else "high watermark"
                if note.startswith(_HIGH_WATERMARK)
                else None
            )
            if name:
                per[name] = per.get(name, 0) + 1
    return sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))


def _held_cell(found: Sequence[tuple[str, int]], shown: int = 2) -> str:
    cells = [f"{name}: {text.plural(n, 'partition')}" for name, n in found[:shown]]
    if len(found) > shown:
        cells.append(f"+{len(found) - shown} more")
    return ", ".join(cells) or "-"


def _row(
    obj: Mapping[str, Any],
    kind: str,
    held: Sequence[tuple[str, int]],
    figures: Mapping[str, Any],
    cells: Sequence[str],
    wide: Sequence[str],
) -> dict[str, Any]:
    """A row: what every kind shows around the kind's own figures and cells."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    dry = bool((obj.get("spec") or {}).get("dryRun"))
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    return {
        "namespace": namespace,
        "kind": kind,
        "name": name,
        **figures,
        "dryRun": dry,
        "heldBackBy": [{"by": by, "partitions": n} for by, n in held],
        "conditions": _conditions(status),
        "cells": [
            namespace,
            kind,
            name,
            *cells,
            _held_cell(held),
            text.conditions_line(status.get("conditions")),
        ],
        "wide": [*wide, _cluster(obj), "yes" if dry else "no"],
    }


def policy_row(obj: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    status = obj.get("status") or {}
    last = status.get("lastRun") or {}
    figures = {
        "lastRun": last.get("completedAt"),
        "partitionsCut": last.get("partitionsCut"),
        "recordsDeleted": last.get("recordsDeleted"),
        "recordsDeletedTotal": status.get("recordsDeletedTotal"),
        "bytesDeletedEstimate": last.get("bytesReclaimedEstimate"),
        "nextRun": status.get("nextRunAt"),
    }
    cells = [
        text.relative(last.get("completedAt"), now),
        text.count(last.get("recordsDeleted")),
        text.count(status.get("recordsDeletedTotal")),
        text.size(last.get("bytesReclaimedEstimate")),
        text.relative(status.get("nextRunAt"), now),
    ]
    cut = f"{text.count(last.get('partitionsCut'))}/{text.count(last.get('partitionsPlanned'))}"
    wide = [str(status.get("topicCount", "-")), cut]
    return _row(obj, POLICY, holders(status) or limits(status), figures, cells, wide)


def purge_row(obj: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    status = obj.get("status") or {}
    summary = status.get("summary") or {}
    phase = status.get("phase") or "Pending"
    deleted = summary.get("recordsDeleted")
    cell = text.count(deleted)
    if (obj.get("spec") or {}).get("dryRun") and summary.get("recordsToDelete") is not None:
        cell = f"would {text.count(summary.get('recordsToDelete'))}"
    figures = {
        "lastRun": status.get("completedAt"),
        "phase": phase,
        "partitionsCut": summary.get("purged"),
        "recordsDeleted": deleted,
        "recordsDeletedTotal": deleted,
        "recordsToDelete": summary.get("recordsToDelete"),
        "bytesDeletedEstimate": summary.get("bytesToDeleteEstimate"),
        "nextRun": None,
    }
    cells = [
        text.relative(status.get("completedAt"), now) if status.get("completedAt") else phase,
        cell,
        cell,
        text.size(summary.get("bytesToDeleteEstimate")),
        "-" if phase in FINAL_PHASES else phase,
    ]
    cut = f"{text.count(summary.get('purged'))}/{text.count(summary.get('partitions'))}"
    held = purge_holders(status.get("results") or [])
    return _row(obj, PURGE, held, figures, cells, ["-", cut])


def erasure_row(obj: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """An erasure: the records with its keys still in the logs, and while it runs its
    phase and when the last copy is expected to go; once done, its receipt (JSON) and
    ReceiptSigned (conditions). Digests, counts and times only: status holds no key."""
    status = obj.get("status") or {}
    summary = status.get("summary") or {}
    deadline = status.get("deadline") or {}
    phase = status.get("phase") or "Pending"
    remaining = summary.get("matchesRemaining")
    figures = {
        "lastRun": status.get("completedAt"),
        "phase": phase,
        "topics": summary.get("topics"),
        "matchesRemaining": remaining,
        "tombstonesWritten": summary.get("tombstonesWritten"),
        "expectedKeyErasedAt": deadline.get("expectedKeyErasedAt"),
        "requestedBy": deadline.get("requestedBy"),
        "receipt": (status.get("receipt") or {}).get("sha256"),
        "nextRun": None,
    }
    ongoing = phase not in erasure_states.FINAL_PHASES
    expected = deadline.get("expectedKeyErasedAt")
    cells = [
        text.relative(status.get("completedAt"), now) if status.get("completedAt") else phase,
        "-" if remaining is None else f"{text.count(remaining)} left",
        "-",
        "-",
        f"{phase}, gone {text.relative(expected, now)}" if ongoing and expected else "-",
    ]
    wide = [text.count(summary.get("topics")), "-"]
    return _row(obj, ERASURE, [], figures, cells, wide)


def _cluster(obj: Mapping[str, Any]) -> str:
    cluster = (obj.get("spec") or {}).get("cluster") or {}
    if cluster.get("clusterRef"):
        return f"binding {cluster['clusterRef']}"
    if (cluster.get("strimzi") or {}).get("kafka"):
        return f"strimzi {cluster['strimzi']['kafka']}"
    return str(cluster.get("bootstrapServers") or "-")


def _conditions(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: c.get(k) for k in ("type", "status", "reason", "message")}
        for c in text.ordered_conditions(status.get("conditions"))
    ]


HEADER = [
    "NAMESPACE",
    "KIND",
    "NAME",
    "LAST RUN",
    "DELETED",
    "TOTAL",
    "BYTES",
    "NEXT RUN",
    "HELD BACK BY",
    "CONDITIONS",
]
WIDE_HEADER = ["TOPICS", "CUT/PLANNED", "CLUSTER", "DRY RUN"]


def rows(
    policies: Sequence[Mapping[str, Any]],
    purges: Sequence[Mapping[str, Any]],
    now: datetime,
    erasures: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Every policy, purge and erasure, by namespace, then kind (in that order), then
    name."""
    found = [policy_row(p, now) for p in policies] + [purge_row(p, now) for p in purges]
    found += [erasure_row(e, now) for e in erasures]
    return sorted(found, key=lambda r: (r["namespace"], KIND_ORDER.index(r["kind"]), r["name"]))


def render(found: Sequence[Mapping[str, Any]], output: str) -> str:
    """The rows as a table (`table`, `wide`: a few more columns) or JSON (`json`)."""
    if output == "json":
        items = [{k: v for k, v in r.items() if k not in ("cells", "wide")} for r in found]
        return json.dumps({"items": items}, indent=2) + "\n"
    if output == "wide":
        # The wide columns go before the last, free-width one (conditions).
        header = HEADER[:-1] + WIDE_HEADER + HEADER[-1:]
        return text.table(header, [r["cells"][:-1] + r["wide"] + r["cells"][-1:] for r in found])
    return text.table(HEADER, [r["cells"] for r in found])
