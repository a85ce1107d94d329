"""The evidence of an erasure: per (partition, digest) where the key was found, the
tombstone written there or the cuts of the partition, and each phase's scan (offsets and
counts: never a key). It is folded into status (at most EVIDENCE_LIMIT entries and
STATUS_EVIDENCE_BYTES) and, when it outgrows that, kept whole in the erasure's
ConfigMaps; the receipt is built from it.

The ConfigMaps live in the tenant's namespace, so what comes back from them is checked
against the SHA-256 of the payload that status.evidenceRef recorded when it was saved
(status is the operator's), and every entry's shape: anything else is EvidenceLost, and
the erasure starts again from a full scan (the log is the truth)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kafka_retention.core.conditions import timestamp
from kafka_retention.core.erasure_scan import DigestHits, PartitionScan, WrittenTombstone
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.facts import TopicPartition
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services.ports import BlobStore

EVIDENCE_LIMIT = 1000  # the CRD's maxItems of status.evidence
# What status.evidence may take as JSON: a spec of 10,000 digests is about 780 KB and etcd
# takes 1.5 MiB an object, so the evidence (entries of up to MAX_SCANS scans, about 860 B
# each) gets this much and the rest lives only in the ConfigMaps.
STATUS_EVIDENCE_BYTES = 400_000
_DIGEST = re.compile(r"[0-9a-f]{64}")
# One scan per phase is kept; rewrites (KEY_REWRITTEN) each add one, so this bounds them.
MAX_SCANS = 6
KEY_REWRITTEN = "KeyRewritten"
# Cuts kept per entry: the first and the rounds after rewrites (pipeline bounds them).
MAX_CUTS = 4
_CUT_COUNTS = ("offset", "lowWatermark", "collateralRecords", "collateralBytes")

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


def with_partition_scans(
    evidence: Sequence[Mapping[str, Any]], scans: Mapping[TopicPartition, PartitionScan], at: str
) -> list[Entry]:
    """The evidence with the final scan of each partition (KeyErased) in an entry of the
    partition without a digest: the receipt shows every partition that scan read."""
    entries = [dict(e) for e in evidence]
    where = {tp_of(e): i for i, e in enumerate(entries) if not e.get("digest")}
    for tp, found in sorted(scans.items()):
        record = scan_record(Phase.KEY_ERASED, at, found, None)
        record["matches"] = found.matches
        if tp in where:
            entries[where[tp]] = add_scan(entries[where[tp]], record)
        else:
            entries.append({"topic": tp.topic, "partition": tp.partition, "scans": [record]})
    return entries


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


def with_cut(
    entry: Mapping[str, Any],
    offset: int,
    low_watermark: int,
    at: str,
    collateral: tuple[int, int],
) -> Entry:
    """The entry with a cut of its partition: the offset asked, the low watermark Kafka
    answered, when, and the other keys' records and bytes below it at this run's scan.
    Each round is kept (a key written again after a cut is cut again, MAX_CUTS at most)."""
    record = {
        "offset": offset,
        "lowWatermark": low_watermark,
        "at": at,
        "collateralRecords": collateral[0],
        "collateralBytes": collateral[1],
    }
    cuts = [dict(c) for c in entry.get("cuts") or []]
    return {**entry, "cuts": [*cuts, record][-MAX_CUTS:]}


def last_cut(entry: Mapping[str, Any]) -> int | None:
    """The offset of the entry's latest cut (None: its partition was never cut)."""
    cuts = entry.get("cuts") or []
    return int(cuts[-1]["offset"]) if cuts else None


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
        moments = [(str(s.get("phase")), str(s.get("at"))) for s in entry.get("scans") or []]
        moments += [(Phase.CUT, str(c.get("at"))) for c in entry.get("cuts") or []]
        for phase, at in moments:
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
    """Every entry: status's own, or the whole set from the ConfigMaps it points at,
    checked against the checksum status recorded. Anything that does not check out
    raises EvidenceLost (never a ValueError or KeyError of stored data)."""
    ref = status.get("evidenceRef")
    if not ref:
        return _entries(status.get("evidence") or [])
    if not isinstance(ref, Mapping) or not isinstance(ref.get("sha256"), str):
        raise EvidenceLost("status.evidenceRef names no checksum")
    try:
        payload = blobs.load("evidence")
    except SinkError as err:
        raise EvidenceLost(f"the stored evidence is damaged ({err})") from err
    if payload is None:
        raise EvidenceLost("the stored evidence is gone")
    if hashlib.sha256(payload.encode()).hexdigest() != ref["sha256"]:
        raise EvidenceLost("the stored evidence does not match the checksum status recorded")
    try:
        loaded = json.loads(payload)
    except ValueError as err:
        raise EvidenceLost(f"the stored evidence is not JSON ({err.__class__.__name__})") from None
    return _entries(loaded)


def _entries(loaded: Any) -> list[Entry]:
    if not isinstance(loaded, list):
        raise EvidenceLost("the stored evidence is not a list")
    for i, entry in enumerate(loaded):
        why = _malformed(entry)
        if why is not None:
            raise EvidenceLost(f"stored evidence entry {i}: {why}")
    return [dict(e) for e in loaded]


def _int(value: Any) -> bool:
    return type(value) is int


def _malformed(entry: Any) -> str | None:
    """What is wrong with an entry as read back (None: its shape is one save wrote)."""
    if not isinstance(entry, dict):
        return "not an object"
    if not isinstance(entry.get("topic"), str) or not entry["topic"]:
        return "no topic"
    if not _int(entry.get("partition")) or entry["partition"] < 0:
        return "no partition"
    digest = entry.get("digest")
    if digest is not None and (not isinstance(digest, str) or not _DIGEST.fullmatch(digest)):
        return "a digest that is not 64 lowercase hexadecimal characters"
    tombstone = entry.get("tombstone")
    if tombstone is not None and (
        not isinstance(tombstone, dict)
        or not _int(tombstone.get("offset"))
        or not isinstance(tombstone.get("timestamp"), str)
    ):
        return "a tombstone without offset and time"
    cuts = entry.get("cuts")
    if cuts is not None and (
        not isinstance(cuts, list)
        or not all(
            isinstance(c, dict)
            and all(_int(c.get(k)) for k in _CUT_COUNTS)
            and isinstance(c.get("at"), str)
            for c in cuts
        )
    ):
        return "a cut without its offsets, counts and time"
    scans = entry.get("scans")
    if not isinstance(scans, list):
        return "no scans"
    for s in scans:
        if not isinstance(s, dict) or not all(isinstance(s.get(k), str) for k in ("phase", "at")):
            return "a scan without phase and time"
        counts = ("fromOffset", "toOffset", "recordsExamined", "matches")
        if not all(_int(s.get(k)) for k in counts):
            return "a scan without its offsets and counts"
        if "lastMatchOffset" in s and not _int(s["lastMatchOffset"]):
            return "a scan with a bad lastMatchOffset"
    return None


def save(evidence: Sequence[Mapping[str, Any]], blobs: BlobStore) -> Mapping[str, Any] | None:
    """Where the whole evidence is when status cannot hold it (None: status holds it
    all), with the SHA-256 and size of the payload as saved (the ConfigMaps' own
    checksum is of the gzipped bytes, and their manifest is the tenant's to rewrite):
    load checks what comes back against it. A refusal raises WriteRefused."""
    if len(fold(evidence)) == len(evidence):
        return None
    payload = json.dumps(list(evidence), sort_keys=True)
    ref = blobs.save("evidence", payload)
    data = payload.encode()
    return {
        **ref,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "partitions": len(evidence),
    }


def fold(evidence: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What status holds of the evidence: the first entries, within EVIDENCE_LIMIT
    entries and STATUS_EVIDENCE_BYTES."""
    out: list[dict[str, Any]] = []
    used = 2
    for entry in evidence[:EVIDENCE_LIMIT]:
        used += len(json.dumps(entry)) + 2
        if used > STATUS_EVIDENCE_BYTES:
            break
        out.append(dict(entry))
    return out


def digests_found(evidence: Iterable[Mapping[str, Any]]) -> int:
    return len({e["digest"] for e in evidence if e.get("digest")})
