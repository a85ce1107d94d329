"""The evidence of an erasure: per (partition, digest) where the key was found, the
tombstone written there and each phase's scan (offsets and counts: never a key). It is
folded into status (EVIDENCE_LIMIT entries) and, beyond that, kept whole in the
erasure's ConfigMaps; the receipt is built from it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kafka_retention.core.conditions import timestamp
from kafka_retention.core.erasure_scan import DigestHits, PartitionScan, WrittenTombstone
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.facts import TopicPartition
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services.ports import BlobStore

EVIDENCE_LIMIT = 1000
# One scan per phase is kept; rewrites (KEY_REWRITTEN) each add one, so this bounds them.
MAX_SCANS = 6
KEY_REWRITTEN = "KeyRewritten"

Entry = dict[str, Any]


class EvidenceLost(Exception):
    """The evidence a previous run stored in ConfigMaps cannot be read back."""


def tp_of(entry: Mapping[str, Any]) -> TopicPartition:
    return TopicPartition(str(entry["topic"]), int(entry["partition"]))


def scan_record(
    phase: str, at: str, found: PartitionScan, hits: DigestHits | None
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "phase": phase,
        "at": at,
        "fromOffset": found.start,
        "toOffset": found.end,
        "recordsExamined": found.examined,
        "matches": hits.records if hits is not None else 0,
    }
    if hits is not None and hits.records:
        record["lastMatchOffset"] = hits.last_offset
    return record


def first_scan(scans: Mapping[TopicPartition, PartitionScan], at: str) -> list[Entry]:
    """An entry for each (partition, digest) the first scan found."""
    return [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "digest": digest,
            "scans": [scan_record(Phase.SCANNING, at, found, hits)],
        }
        for tp, found in sorted(scans.items())
        for digest, hits in sorted(found.hits.items())
        if hits.records
    ]


def nothing_found(scans: Mapping[TopicPartition, PartitionScan], at: str) -> list[Entry]:
    """When no listed key is anywhere, the scan itself is the evidence: one entry per
    partition read, with no digest (none of them was found there)."""
    return [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "scans": [scan_record(Phase.SCANNING, at, found, None)],
        }
        for tp, found in sorted(scans.items())
    ]


def add_scan(entry: Mapping[str, Any], record: Mapping[str, Any]) -> Entry:
    """The entry with `record` in place of the earlier scan of its phase (a rewrite's is
    added instead), at most MAX_SCANS kept: the first scan and the latest ones."""
    scans = [dict(s) for s in entry.get("scans") or []]
    if record["phase"] != KEY_REWRITTEN:
        scans = [s for s in scans if s.get("phase") != record["phase"]]
    scans.append(dict(record))
    if len(scans) > MAX_SCANS:
        scans = scans[:1] + scans[len(scans) - MAX_SCANS + 1 :]
    return {**entry, "scans": scans}


def with_tombstone(entry: Mapping[str, Any], written: WrittenTombstone) -> Entry:
    """The entry with the tombstone written for it (its time as status holds times)."""
    moment = datetime.fromtimestamp(written.timestamp_ms / 1000, UTC)
    return {**entry, "tombstone": {"offset": written.offset, "timestamp": timestamp(moment)}}


def tombstone_ms(entry: Mapping[str, Any]) -> int | None:
    """When the entry's tombstone was written (ms), None without one."""
    written = (entry.get("tombstone") or {}).get("timestamp")
    if not isinstance(written, str):
        return None
    try:
        return int(datetime.fromisoformat(written.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def phases_reached(evidence: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each phase a scan recorded, and when first (the receipt's phases)."""
    reached: dict[str, str] = {}
    for entry in evidence:
        for s in entry.get("scans") or []:
            phase, at = str(s.get("phase")), str(s.get("at"))
            if phase not in reached or at < reached[phase]:
                reached[phase] = at
    return reached


def rewrites(entry: Mapping[str, Any]) -> int:
    """How often the key was found written again after its tombstone."""
    return sum(1 for s in entry.get("scans") or [] if s.get("phase") == KEY_REWRITTEN)


def last_match(entry: Mapping[str, Any]) -> int:
    """The offset of the last record with the key any scan of the entry saw (-1: none)."""
    return max((int(s.get("lastMatchOffset", -1)) for s in entry.get("scans") or []), default=-1)


def matches(entry: Mapping[str, Any]) -> int:
    """Records with the key at the entry's latest scan."""
    scans = entry.get("scans") or []
    return int(scans[-1].get("matches", 0)) if scans else 0


def load(status: Mapping[str, Any], blobs: BlobStore) -> list[Entry]:
    """Every entry: status's own, or the whole set from the ConfigMaps it points at."""
    if not status.get("evidenceRef"):
        return [dict(e) for e in status.get("evidence") or []]
    try:
        payload = blobs.load("evidence")
    except SinkError as err:
        raise EvidenceLost(f"the stored evidence is damaged ({err})") from err
    if payload is None:
        raise EvidenceLost("the stored evidence is gone")
    loaded = json.loads(payload)
    if not isinstance(loaded, list):
        raise EvidenceLost("the stored evidence is not a list")
    return [dict(e) for e in loaded]


def save(evidence: Sequence[Mapping[str, Any]], blobs: BlobStore) -> Mapping[str, Any] | None:
    """Where the whole evidence is when status cannot hold it (None: status holds it
    all). A refusal raises WriteRefused."""
    if len(evidence) <= EVIDENCE_LIMIT:
        return None
    return blobs.save("evidence", json.dumps(list(evidence), sort_keys=True))


def fold(evidence: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What status holds of the evidence."""
    return [dict(e) for e in evidence[:EVIDENCE_LIMIT]]


def digests_found(evidence: Iterable[Mapping[str, Any]]) -> int:
    return len({e["digest"] for e in evidence if e.get("digest")})
