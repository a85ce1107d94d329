"""Where a plan goes when the job runs as pods: ConfigMaps in the run's namespace, cut in
chunks with a checksummed manifest written last (kafka_retention.kube_objects.chunks)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.adapters import kube
from kafka_retention.kube_objects.chunks import sink_configmaps


def to_json_lines(
    rows: list[dict[str, Any]],
    skipped: Mapping[str, str],
    tombstones: list[dict[str, Any]],
    policy: str | None = None,
    group_types: Mapping[str, str] | None = None,
) -> str:
    """One JSON line per plan row, skipped topic, tombstone row and group (with the type
    it was read as); with `policy`, each line names the policy of a batch it belongs to."""
    tag = {} if policy is None else {"policy": policy}
    lines = [json.dumps({"kind": "partition", **tag, **r}) for r in rows]
    lines += [
        json.dumps({"kind": "skipped", **tag, "topic": t, "reason": why})
        for t, why in sorted(skipped.items())
    ]
    lines += [json.dumps({"kind": "tombstones", **tag, **r}) for r in tombstones]
    lines += [
        json.dumps({"kind": "group", **tag, "group": g, "type": t})
        for g, t in sorted((group_types or {}).items())
    ]
    return "".join(line + "\n" for line in lines)


# Rows, skipped topics, tombstone rows, and the type each group was read as.
PlanParts = tuple[list[dict[str, Any]], dict[str, str], list[dict[str, Any]], dict[str, str]]


def from_json_lines(payload: str) -> PlanParts:
    """Rows, skipped topics, tombstone rows and group types back from to_json_lines'."""
    return by_policy(payload).get("", ([], {}, [], {}))


def by_policy(payload: str) -> dict[str, PlanParts]:
    """A batch's lines back, per policy (lines without a policy under "")."""
    out: dict[str, PlanParts] = {}
    for line in payload.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        kind = item.pop("kind")
        rows, skipped, tombstones, types = out.setdefault(item.pop("policy", ""), ([], {}, [], {}))
        if kind == "partition":
            rows.append(item)
        elif kind == "skipped":
            skipped[item["topic"]] = item["reason"]
        elif kind == "tombstones":
            tombstones.append(item)
        elif kind == "group":
            types[item["group"]] = item["type"]
    return out


def read_configmap_key(namespace: str, name: str, key: str) -> str:
    """The run's request, read by the driver with its service account."""
    found = kube.read_configmap(namespace, name)
    data = (found or {}).get("data") or {}
    if key not in data:
        raise SystemExit(f"ConfigMap {namespace}/{name} has no key {key}")
    return str(data[key])


def write_configmaps(
    run: str, namespace: str, payload: str, owners: Sequence[Mapping[str, Any]] | None
) -> int:
    """Create (or replace) the run's plan ConfigMaps, gzipped (100,000 partitions take a
    few ConfigMaps instead of a hundred); returns how many were written."""
    objects = sink_configmaps(run, namespace, payload, owners=owners or (), compress=True)
    for obj in objects:  # parts first, the manifest last
        kube.write_configmap(obj)
    return len(objects)
