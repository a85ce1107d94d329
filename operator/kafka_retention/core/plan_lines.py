"""A plan as JSON lines: what the Spark job writes (`--output`, or the run's ConfigMaps
in pod modes) and the operator reads back.

One line per plan row ("partition"), skipped topic, tombstone scan row and group (with
the type it was read as); in a batch, each line names the policy it belongs to. A
row's keys are PlanRow's camelCase form (core.plan_row), the keys plans have always had.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core.plan_row import PlanRow, TombstoneRow

# Rows, skipped topics, tombstone rows, and the type each group was read as.
PlanParts = tuple[list[PlanRow], dict[str, str], list[TombstoneRow], dict[str, str]]


def to_json_lines(
    rows: Sequence[PlanRow],
    skipped: Mapping[str, str],
    tombstones: Sequence[TombstoneRow],
    policy: str | None = None,
    group_types: Mapping[str, str] | None = None,
) -> str:
    """One JSON line per plan row, skipped topic, tombstone row and group (with the type
    it was read as); with `policy`, each line names the policy of a batch it belongs to."""
    tag = {} if policy is None else {"policy": policy}
    lines = [_line({"kind": "partition", **tag, **r.to_json()}) for r in rows]
    lines += [
        _line({"kind": "skipped", **tag, "topic": t, "reason": why})
        for t, why in sorted(skipped.items())
    ]
    lines += [_line({"kind": "tombstones", **tag, **r.to_json()}) for r in tombstones]
    lines += [
        _line({"kind": "group", **tag, "group": g, "type": t})
        for g, t in sorted((group_types or {}).items())
    ]
    return "".join(line + "\n" for line in lines)


def _line(item: Mapping[str, Any]) -> str:
    # No blanks after separators: a row of 100,000 with both groups' key samples is some
    # 1,750 bytes rather than 1,900, which keeps the largest plan the project runs within
    # chunks.MAX_DECODED_BYTES with the headroom it promises (test_payload_bounds).
    return json.dumps(item, separators=(",", ":"))


def from_json_lines(payload: str) -> PlanParts:
    """Rows, skipped topics, tombstone rows and group types back from to_json_lines'."""
    return by_policy(payload).get("", ([], {}, [], {}))


def by_policy(payload: str) -> dict[str, PlanParts]:
    """A batch's lines back, per policy (lines without a policy under ""). A row that is
    not a PlanRow's (or TombstoneRow's) JSON raises ValueError: the payload may be a
    tenant's forgery."""
    out: dict[str, PlanParts] = {}
    for line in payload.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        kind = item.pop("kind")
        rows, skipped, tombstones, types = out.setdefault(item.pop("policy", ""), ([], {}, [], {}))
        if kind == "partition":
            rows.append(PlanRow.from_json(item))
        elif kind == "skipped":
            skipped[item["topic"]] = item["reason"]
        elif kind == "tombstones":
            tombstones.append(TombstoneRow.from_json(item))
        elif kind == "group":
            types[item["group"]] = item["type"]
    return out
