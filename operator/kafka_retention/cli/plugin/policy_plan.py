"""`kubectl kafka-retention plan` for a RetentionPolicy: what its next run would delete
now, per topic, without deleting anything.

As for a purge, the operator plans it, not the plugin: a copy of the policy with
spec.dryRun true is created beside it (the operator's tenancy and the binding apply to the
copy as to the policy), its first run's status is read back, and the copy is deleted. The
copy keeps the rules that decide cuts and drops the watches: a dry run still raises
delete.retention.ms for spec.tombstones and scans broker volumes for spec.orphanPartitions,
and neither is a question `plan` asks.

A policy's run keeps no per-partition plan (status holds a summary per topic), so the
answer is per topic: partitions and records its cuts would move past, the rule that
proposed them and what limited them. The same policy, with the same peers, cuts what
the copy reports: a same-namespace copy has the policy's own rules, so as a peer it holds
nothing back that the policy itself would not."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.cli.plugin import dry_copy, text
from kafka_retention.core.resources import RETENTION_POLICIES

# The spec fields of watches that act beyond planning a cut (see the module's comment).
_WATCHES = ("tombstones", "orphanPartitions", "notify")
# Ready reasons that end the copy without a run: its spec or its tenancy was refused.
_REFUSED = frozenset(
    {
        "InvalidSpec",
        "NotPermitted",
        "BindingUnavailable",
        "ClusterIdMismatch",
        "QuotaExceeded",
        "SecretUnavailable",
        "ClusterUnresolved",
    }
)


def dry_run_copy(document: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The RetentionPolicy the operator runs for `document`: its cutting rules with dryRun
    true."""
    return dry_copy.dry_run_copy(document, namespace, "RetentionPolicy", _WATCHES)


def refusal(obj: Mapping[str, Any]) -> str | None:
    """Why the copy was refused before any run, from its Ready condition; None if not."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "False" and c.get("reason") in _REFUSED:
            return f"{c.get('reason')}: {c.get('message')}"
    return None


def ran(obj: Mapping[str, Any]) -> bool:
    return bool(((obj.get("status") or {}).get("lastRun") or {}).get("completedAt"))


def run(document: Mapping[str, Any], asking: dry_copy.Asking) -> dict[str, Any]:
    """Have the operator run `document` (a RetentionPolicy) once as a dry-run copy; the
    copy once its run completed. The copy is deleted whatever happens."""
    with dry_copy.planned(
        asking,
        RETENTION_POLICIES,
        dry_run_copy(document, asking.namespace),
        done=ran,
        refused=refusal,
        waiting=lambda _obj: "waiting for its first run",
    ) as obj:
        return obj


def topics(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per topic of the copy's run: partitions and records its cuts would move past, the
    rule that proposed them and what limited them, in topic order."""
    out = []
    for t in (obj.get("status") or {}).get("topics") or []:
        cut = t.get("cut") or {}
        limits = [f"{lim.get('guard')}: {lim.get('detail')}" for lim in cut.get("limits") or []]
        out.append(
            {
                "topic": t.get("name"),
                "partitions": int(t.get("partitions") or 0),
                "partitionsCut": int(cut.get("partitionsCut") or 0),
                "records": int(cut.get("records") or 0),
                "rule": cut.get("rule") or "none",
                "limitedBy": limits,
            }
        )
    return sorted(out, key=lambda t: str(t["topic"]))


def render(obj: Mapping[str, Any], document: Mapping[str, Any], output: str) -> str:
    rows = topics(obj)
    if output == "json":
        name = (document.get("metadata") or {}).get("name")
        total = sum(t["records"] for t in rows)
        return json.dumps({"policy": name, "records": total, "topics": rows}, indent=2) + "\n"
    if output == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["topic", "partitions", "partitionsCut", "records", "rule"])
        for t in rows:
            writer.writerow(
                [t["topic"], t["partitions"], t["partitionsCut"], t["records"], t["rule"]]
            )
        return buf.getvalue()
    return table(rows)


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    header = ["TOPIC", "PARTITIONS", "CUT", "RECORDS", "RULE", "LIMITED BY"]
    body = [
        [
            str(t["topic"]),
            text.count(t["partitions"]),
            text.count(t["partitionsCut"]),
            text.count(t["records"]),
            str(t["rule"]),
            "; ".join(t["limitedBy"]) or "-",
        ]
        for t in rows
    ]
    records = sum(int(t["records"]) for t in rows)
    cut = sum(int(t["partitionsCut"]) for t in rows)
    words = (
        f"would delete {text.count(records)} records from "
        f"{text.plural(cut, 'partition')} on {text.plural(len(rows), 'topic')}"
    )
    return text.table(header, body) + words + "\n"
