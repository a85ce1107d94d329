"""What a RecordPurge reports (stage 7's content): totals, and results bounded in size for
status (every failure listed up to a bound; successes folded per topic once there are
many). The full per-partition results go to the purge's own ConfigMaps."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import State

# Up to this many partitions, and this many bytes of JSON, status lists each one; past
# either, successes are folded into one entry per topic. Failures are listed one by one
# up to MAX_FAILURES_LISTED and the same bytes; topics up to MAX_TOPICS_LISTED (a topic
# name has at most 249 characters). Together they keep status under 256 KiB, far below
# etcd's 1.5 MiB, whatever the names, errors and notes.
MAX_LISTED_RESULTS = 1000
MAX_LISTED_BYTES = 128 * 1024
MAX_FAILURES_LISTED = 200
MAX_TOPICS_LISTED = 200


def summary(entries: Sequence[PurgeEntry]) -> dict[str, int]:
    out = {
        "partitions": sum(1 for e in entries if e.partition >= 0 or e.state == State.FAILED),
        "purged": sum(1 for e in entries if e.state == State.PURGED),
        "failed": sum(1 for e in entries if e.state == State.FAILED),
        "recordsDeleted": sum(e.records_deleted or 0 for e in entries),
    }
    if any(e.state == State.DRY_RUN for e in entries):
        out["recordsToDelete"] = sum(e.records_to_delete or 0 for e in entries)
        out["bytesToDeleteEstimate"] = sum(e.bytes_to_delete_estimate or 0 for e in entries)
    return out


def status_results(entries: Sequence[PurgeEntry]) -> tuple[list[dict[str, Any]], bool]:
    """The results status holds, and whether they were folded (then every partition's
    outcome goes to the results ConfigMaps beside them)."""
    results = fold_results(entries)
    folded = len(results) != len(entries) or any(
        r["partition"] < 0 and str(r.get("note", "")).startswith(("summary of", "... and"))
        for r in results
    )
    return results, folded


def fold_results(
    entries: Sequence[PurgeEntry],
    limit: int = MAX_LISTED_RESULTS,
    max_failures: int = MAX_FAILURES_LISTED,
    max_topics: int = MAX_TOPICS_LISTED,
    max_bytes: int = MAX_LISTED_BYTES,
) -> list[dict[str, Any]]:
    """Status-sized results: all entries when few and small; else the failures (up to a
    bound, the rest counted in one entry) and one summary entry per topic (the largest
    first)."""
    if len(entries) <= limit:
        listed_all = [e.to_status() for e in entries]
        if len(json.dumps(listed_all)) <= max_bytes:
            return listed_all
    failed = [e.to_status() for e in entries if e.state == State.FAILED]
    listed = _first(failed, max_failures, max_bytes)
    folded: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e.state == State.FAILED:
            continue
        agg = folded.setdefault(
            e.topic,
            {
                "topic": e.topic,
                "partition": -1,
                "state": str(e.state),
                "recordsDeleted": 0,
                "recordsToDelete": 0,
                "partitions": 0,
            },
        )
        agg["partitions"] += 1
        agg["recordsDeleted"] += e.records_deleted or 0
        agg["recordsToDelete"] += e.records_to_delete or 0
    topics = sorted(folded.values(), key=lambda a: (-a["recordsDeleted"], a["topic"]))
    for agg in topics:
        agg["note"] = f"summary of {agg.pop('partitions')} partitions"
    out = listed
    if len(failed) > len(listed):
        out.append(_more(len(failed) - len(listed), "failed partitions", State.FAILED))
    out += topics[:max_topics]
    if len(topics) > max_topics:
        rest = topics[max_topics:]
        more = _more(len(rest), "topics", rest[0]["state"])
        more["recordsDeleted"] = sum(a["recordsDeleted"] for a in rest)
        out.append(more)
    return out


def _first(
    entries: Sequence[Mapping[str, Any]], count: int, max_bytes: int
) -> list[dict[str, Any]]:
    """The first entries, at most `count` of them and `max_bytes` of JSON."""
    out: list[dict[str, Any]] = []
    size = 0
    for e in entries[:count]:
        size += len(json.dumps(e))
        if size > max_bytes:
            break
        out.append(dict(e))
    return out


def _more(count: int, what: str, state: str) -> dict[str, Any]:
    return {
        "topic": "",
        "partition": -1,
        "state": str(state),
        "note": f"... and {count} more {what}: see the results ConfigMaps (status.resultsRef)",
    }


def topics_deleted(entries: Sequence[PurgeEntry]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in entries:
        if e.records_deleted:
            out[e.topic] = out.get(e.topic, 0) + e.records_deleted
    return out
