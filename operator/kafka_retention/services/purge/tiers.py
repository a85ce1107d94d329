"""A RecordPurge on tiered topics (KIP-405): where each cut partition's records are, and
whether the remote segments below its cut are deleted yet.

DeleteRecords moves the log start at once (the broker's answer, which verifies the cut as
for any topic), but the remote segments wholly below the cut are deleted later by the
leader's remote log manager (KAFKA-15410): until then they still take remote space. So a
purge that cut a tiered topic says, beside Succeeded, condition RemoteDeletionPending:

    True  RemoteSegmentsPending ..... segments below the cuts not DELETE_FINISHED yet
    False RemoteSegmentsDeleted ..... all of them are, with the time it took
    False NoRemoteSegmentsBelowCut .. no remote segment lay wholly below a cut
    Unknown RemoteLogUnreadable ..... the remote log metadata could not be read
    Unknown RemoteDeletionUnconfirmed  still not deleted (or unreadable) after the watch
                                      limit, or no longer checkable: checks stop

It is judged from the brokers' own remote log metadata (TieredKafka.remote_log, read from
Kafka), never from the remote store. `after_cut` judges it when the purge ends (stage 7);
while it is True or RemoteLogUnreadable, the handler's timer calls `follow`, which reads
the remote log again and never deletes anything: the cut was made once, by the purge.

Status stays small: status.tiered holds counts and times, and at most MAX_LISTED
partitions' offsets; every tiered partition's offsets (log start, earliest local, latest
tiered, earliest pending upload, high watermark, the cut) go to the purge's `tiers`
ConfigMaps, which `follow` reads its cuts back from.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeGuard, runtime_checkable

from kafka_retention.core.conditions import Condition, Reason, ms_timestamp, parse_timestamp
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaUnavailable, Unresolved, WriteRefused
from kafka_retention.core.purge import PurgeRequest, parse_spec
from kafka_retention.core.purge_entry import PurgeEntry
from kafka_retention.core.purge_states import State
from kafka_retention.core.specs import SpecError
from kafka_retention.core.tiers import BelowCuts, RemoteLog, TierOffsets, below_cuts, is_tiered
from kafka_retention.kube_objects.chunks import SinkError
from kafka_retention.services import tenancy
from kafka_retention.services.ports import BlobStore, KafkaPlanner, TieredKafka
from kafka_retention.services.purge.inputs import Purge
from kafka_retention.services.purge.timings import took

log = logging.getLogger(__name__)

CONDITION = "RemoteDeletionPending"
# The purge's ConfigMap set of every tiered partition's offsets (BlobStore suffix).
BLOB = "tiers"
# Partitions whose offsets status.tiered lists itself (the ConfigMaps have all of them).
MAX_LISTED = 10
# Seconds between checks: the handler's timer ticks this often, and a check is due when
# a tenth of the time since the cut has passed since the last one (at most MAX_CHECK_S):
# each check reads the whole remote log metadata topic.
CHECK_EVERY_S = 5.0
MAX_CHECK_S = 60.0
# The reasons under which the timer keeps checking.
WATCHED = frozenset({Reason.REMOTE_SEGMENTS_PENDING, Reason.REMOTE_LOG_UNREADABLE})


@runtime_checkable
class TierReads(TieredKafka, Protocol):
    """A Kafka connection that can also say where tiered records are (KafkaAdmin is one);
    the fakes of the other purge tests are not, and their purges never look."""


class _TieredPlanner(KafkaPlanner, TierReads, Protocol):
    """A purge's connection that is also a TierReads."""


@dataclass(frozen=True)
class Place:
    """One tiered partition after the cut: where its records are (None: not known)."""

    topic: str
    partition: int
    cut: int  # the log start the DeleteRecords answered
    log_start: int | None = None
    high_watermark: int | None = None
    earliest_local: int | None = None
    latest_tiered: int | None = None
    pending_upload: int | None = None
    topic_id: str | None = None  # the topic's id at the cut (remote segments name it)

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"topic": self.topic, "partition": self.partition, "cut": self.cut}
        for key, value in (
            ("logStart", self.log_start),
            ("highWatermark", self.high_watermark),
            ("earliestLocal", self.earliest_local),
            ("latestTiered", self.latest_tiered),
            ("earliestPendingUpload", self.pending_upload),
            ("topicId", self.topic_id),
        ):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, item: Any) -> Place:
        # A line of the purge's own ConfigMaps, which a tenant can rewrite: anything but an
        # object of the right fields is refused as unreadable, never trusted or crashed on.
        if not isinstance(item, Mapping):
            raise ValueError(f"not a tiered partition's line: {str(item)[:200]}")
        topic, partition, cut = item.get("topic"), item.get("partition"), item.get("cut")
        if not isinstance(topic, str) or not _offset(partition) or not _offset(cut):
            raise ValueError(f"not a tiered partition's line: {str(item)[:200]}")
        topic_id = item.get("topicId")
        return cls(topic, partition, cut, topic_id=topic_id if isinstance(topic_id, str) else None)


def _offset(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def to_lines(places: Sequence[Place]) -> str:
    return "".join(json.dumps(p.to_json(), separators=(",", ":")) + "\n" for p in places)


def from_lines(payload: str) -> list[Place]:
    return [Place.from_json(json.loads(line)) for line in payload.splitlines() if line.strip()]


def tally(log: RemoteLog, places: Sequence[Place], since: datetime) -> BelowCuts:
    """The segments below each partition's cut (of its topic's id at the cut, where
    known): those still to delete, and those deleted since the delete went out."""
    ids = {p.topic: p.topic_id for p in places if p.topic_id is not None}
    return below_cuts(log, {p.tp: p.cut for p in places}, _ms(since), ids)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def size(n: int) -> str:
    """Bytes as the messages say them: 950 B, 3.6 MB (decimal units)."""
    value, unit = float(n), "B"
    for bigger in ("kB", "MB", "GB", "TB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


def lag_s(found: BelowCuts, since: datetime) -> float:
    """How long the deletion took: from the delete going out to the broker's record of
    the last segment deleted (0 when none was, or the clocks disagree the other way)."""
    return found.lag_s(_ms(since)) or 0.0


def judge(found: BelowCuts, since: datetime) -> Condition:
    """RemoteDeletionPending from a tally of the remote log."""
    if found.pending:
        deleting = f", {found.deleting} of them being deleted" if found.deleting else ""
        done = f"; {found.deleted} deleted so far" if found.deleted else ""
        message = (
            f"{_many(found.pending, 'remote segment')} ({size(found.pending_bytes)}) below "
            f"the cut in {_many(len(found.partitions_pending), 'partition')}, not deleted yet by "
            f"the brokers' remote log manager{deleting}{done}; the log start moved already"
        )
        return Condition(CONDITION, "True", Reason.REMOTE_SEGMENTS_PENDING, message)
    if found.deleted:
        message = (
            f"deleted {_many(found.deleted, 'remote segment')} ({size(found.deleted_bytes)}) in "
            f"{took(round(lag_s(found, since) * 1000))}"
        )
        return Condition(CONDITION, "False", Reason.REMOTE_SEGMENTS_DELETED, message)
    message = "no remote segment lies wholly below the cuts: no remote deletion waits"
    return Condition(CONDITION, "False", Reason.NO_REMOTE_SEGMENTS_BELOW_CUT, message)


def _many(count: int, what: str) -> str:
    return f"{count} {what}" + ("" if count == 1 else "s")


def unreadable(err: Exception) -> Condition:
    message = (
        f"the remote log metadata cannot be read ({err}): whether the remote segments "
        "below the cut are deleted is not known; the cut itself is done"
    )
    return Condition(CONDITION, "Unknown", Reason.REMOTE_LOG_UNREADABLE, message[:2000])


@dataclass(frozen=True)
class RemoteReport:
    """What the handler turns into metrics and an Event."""

    condition: Condition
    pending: int  # segments below the cuts not deleted yet (0 when not known)
    pending_bytes: int
    lag_s: float | None  # set once the deletion is complete: how long it took
    changed: bool  # the condition's reason changed with this check

    @property
    def watching(self) -> bool:
        return self.condition.reason in WATCHED


@dataclass(frozen=True)
class TieredCut:
    """What a finished purge says of its tiered partitions: status.tiered and the
    condition (status.py writes both); a dry run has no condition and no report."""

    status: Mapping[str, Any]
    condition: Condition | None
    report: RemoteReport | None


def tiered_topics(configs: Mapping[str, Any]) -> frozenset[str]:
    """The topics whose configs (as read for the plan) enable remote storage."""
    return frozenset(t for t, c in configs.items() if isinstance(c, Mapping) and is_tiered(dict(c)))


def after_cut(
    kafka: KafkaPlanner,
    blobs: BlobStore,
    entries: Sequence[PurgeEntry],
    tiered: frozenset[str] | None,
    since: datetime,
    now: Callable[[], datetime],
) -> TieredCut | None:
    """Stage 7 for tiered topics: the purged partitions of tiered topics (`tiered`; None:
    read their configs now, as a resumed run must), where their records are now, their
    offsets stored in the `tiers` ConfigMaps, and RemoteDeletionPending judged from the
    remote log. None when the purge cut no tiered topic or the connection cannot say
    (a Kafka without the tier reads). Nothing here fails the purge: its cuts are done."""
    if not isinstance(kafka, TierReads):
        return None
    purged = [e for e in entries if e.state == State.PURGED and e.low_watermark is not None]
    if not purged:
        return None
    notes: list[str] = []
    if tiered is None:
        try:
            tiered = tiered_topics(kafka.topic_configs(sorted({e.topic for e in purged})))
        except KafkaUnavailable as err:
            log.warning("a purge's topic configs not read after its cut: %s", err)
            return None
    cut = [e for e in purged if e.topic in tiered]
    if not cut:
        return None
    places = _places(kafka, cut, notes)
    offsets_ref: Mapping[str, Any] | None = None
    try:
        offsets_ref = _save(blobs, places)
    except WriteRefused as err:
        notes.append(f"offsets not stored: HTTP {err.status} {err.reason}")
    try:
        remote = kafka.remote_log()
    except KafkaUnavailable as err:
        found, condition = None, unreadable(err)
    else:
        found = tally(remote, places, since)
        condition = judge(found, since)
    checked = now()
    status: dict[str, Any] = {
        "partitions": len(places),
        "since": ms_timestamp(since),
        "checkedAt": ms_timestamp(checked),
        "offsets": [p.to_json() for p in places[:MAX_LISTED]],
        **_counts(found, since),
    }
    if offsets_ref is not None:
        status["offsetsRef"] = {**offsets_ref, "partitions": len(places)}
    if notes:
        status["note"] = "; ".join(notes)[:2000]
    report = _report(condition, found, since, changed=True)
    return TieredCut(status, condition, report)


def dry_run(
    kafka: KafkaPlanner,
    blobs: BlobStore,
    entries: Sequence[PurgeEntry],
    tiered: frozenset[str],
    now: Callable[[], datetime],
) -> TieredCut | None:
    """A dry run on tiered topics: where each partition's records are beside its planned
    cut (below earliestLocal: a cut into the remote range), and the remote segments wholly
    below the planned cuts that a real purge would leave to the brokers to delete
    (remoteSegmentsBelowCut). No condition: nothing was cut."""
    if not isinstance(kafka, TierReads):
        return None
    planned = [
        e
        for e in entries
        if e.state == State.DRY_RUN and e.requested_offset is not None and e.topic in tiered
    ]
    if not planned:
        return None
    notes: list[str] = []
    places = _places(kafka, planned, notes)
    status: dict[str, Any] = {
        "partitions": len(places),
        "offsets": [p.to_json() for p in places[:MAX_LISTED]],
    }
    try:
        ref = _save(blobs, places)
        status["offsetsRef"] = {**ref, "partitions": len(places)}
    except WriteRefused as err:
        notes.append(f"offsets not stored: HTTP {err.status} {err.reason}")
    try:
        remote = kafka.remote_log()
    except KafkaUnavailable as err:
        notes.append(f"remote log metadata not read: {err}")
    else:
        below = tally(remote, places, now())
        status["remoteSegmentsBelowCut"] = below.pending
        status["remoteBytesBelowCut"] = below.pending_bytes
    status["checkedAt"] = ms_timestamp(now())
    if notes:
        status["note"] = "; ".join(notes)[:2000]
    return TieredCut(status, None, None)


def _save(blobs: BlobStore, places: Sequence[Place]) -> dict[str, Any]:
    """The offsets in the purge's `tiers` ConfigMaps, with the checksum status keeps: the
    ConfigMaps are in the purge's namespace, where a tenant may rewrite them (and their
    manifest); status, which only the operator writes, says what was stored."""
    payload = to_lines(places)
    return {**blobs.save(BLOB, payload), "sha256": hashlib.sha256(payload.encode()).hexdigest()}


def _places(kafka: _TieredPlanner, cut: Sequence[PurgeEntry], notes: list[str]) -> list[Place]:
    """Each partition's offsets now: its log bounds and its tier offsets, beside its cut
    (the log start the delete answered; a dry run's planned cut)."""
    tps = [e.tp for e in cut]
    starts: Mapping[TopicPartition, Any] = {}
    ends: Mapping[TopicPartition, Any] = {}
    tiers: Mapping[TopicPartition, TierOffsets] = {}
    try:
        starts, ends = kafka.log_bounds(tps)
    except KafkaUnavailable as err:
        notes.append(f"log bounds not read: {err}")
    try:
        tiers = kafka.tier_offsets(tps)
    except KafkaUnavailable as err:
        notes.append(f"tier offsets not read: {err}")
    ids: Mapping[str, str] = {}
    try:
        ids = kafka.topic_ids({e.topic for e in cut})
    except KafkaUnavailable as err:
        notes.append(f"topic ids not read (remote segments matched by name): {err}")
    out: list[Place] = []
    for e in sorted(cut, key=lambda e: (e.topic, e.partition)):
        where = tiers.get(e.tp)
        start, end = starts.get(e.tp), ends.get(e.tp)
        out.append(
            Place(
                e.topic,
                e.partition,
                int(e.low_watermark if e.low_watermark is not None else e.requested_offset or 0),
                start if isinstance(start, int) else None,
                end if isinstance(end, int) else None,
                where.earliest_local if where else None,
                where.latest_tiered if where else None,
                where.pending_upload if where else None,
                ids.get(e.topic),
            )
        )
    return out


def _counts(found: BelowCuts | None, since: datetime) -> dict[str, Any]:
    """status.tiered's counts from a tally (None: the remote log was not read)."""
    if found is None:
        return {}
    out: dict[str, Any] = {
        "remoteSegmentsPending": found.pending,
        "remoteBytesPending": found.pending_bytes,
        "remoteSegmentsDeleted": found.deleted,
        "remoteBytesDeleted": found.deleted_bytes,
    }
    if not found.pending and found.last_deleted_ms is not None:
        out["remoteDeletionSeconds"] = round(lag_s(found, since), 3)
    return out


def _report(
    condition: Condition, found: BelowCuts | None, since: datetime, *, changed: bool
) -> RemoteReport:
    done = condition.reason == Reason.REMOTE_SEGMENTS_DELETED and found is not None
    return RemoteReport(
        condition,
        found.pending if found else 0,
        found.pending_bytes if found else 0,
        lag_s(found, since) if done and found is not None else None,
        changed,
    )


# --- the follow-up: the handler's timer, while the condition is watched ----------------


def watched(status: Mapping[str, Any]) -> bool:
    """Whether a purge's remote deletion is still to be checked (the timer's filter)."""
    found = _condition(status)
    return found is not None and found.get("reason") in WATCHED


def _condition(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == CONDITION:
            return c
    return None


def due(status: Mapping[str, Any], now: datetime) -> bool:
    """Whether a check is due: a tenth of the time since the cut has passed since the
    last check (at least CHECK_EVERY_S, at most MAX_CHECK_S)."""
    tiered = status.get("tiered") or {}
    since, checked = parse_timestamp(tiered.get("since")), parse_timestamp(tiered.get("checkedAt"))
    if since is None or checked is None:
        return True
    every = min(MAX_CHECK_S, max(CHECK_EVERY_S, (now - since).total_seconds() / 10))
    # Half a tick early counts: the timer's ticks drift a little.
    return (now - checked).total_seconds() >= every - CHECK_EVERY_S / 2


def check(f: Purge) -> RemoteCheck | None:
    """Check the remote deletion of a finished purge once more: what status is to say
    (status.write_remote writes it); None when it is not watched or no check is due.
    Reads only: nothing is deleted."""
    if not watched(f.status):
        return None
    now = f.now()
    if not due(f.status, now):
        return None
    tiered = dict(f.status.get("tiered") or {})
    before = _condition(f.status) or {}
    since = parse_timestamp(tiered.get("since"))
    if since is None:
        return _checked(f, tiered, _unconfirmed("status.tiered.since is missing"), None, now)
    expired = (now - since).total_seconds() > f.remote_watch_s
    try:
        request = parse_spec(f.spec)
        if f.admit is not None:
            f.admit(f.spec, request)
        stored = _stored_places(f.blobs, request, tiered.get("offsetsRef"))
        kafka = f.connect(request)
        if not isinstance(kafka, TierReads):
            return _checked(f, tiered, _unconfirmed("this connection cannot read it"), None, now)
        remote = kafka.remote_log()
    except (SpecError, tenancy.Refused, _CutsLost) as err:
        return _checked(f, tiered, _unconfirmed(str(err)), None, now)
    except (KafkaUnavailable, Unresolved, tenancy.BindingUnavailable) as err:
        if expired:
            return _checked(f, tiered, _given_up(f, before, str(err)), None, now)
        if before.get("reason") == Reason.REMOTE_LOG_UNREADABLE:
            return _checked(f, tiered, unreadable(err), None, now)
        # Pending as last seen: a check that fails says so and is tried again.
        tiered["checkError"] = str(err)[:2000]
        kept = Condition(
            CONDITION, "True", Reason.REMOTE_SEGMENTS_PENDING, str(before.get("message", ""))
        )
        return _checked(f, tiered, kept, None, now)
    found = tally(remote, stored, since)
    condition = judge(found, since)
    if "checkError" in tiered:
        tiered["checkError"] = None  # a merge patch removes the field so
    if condition.reason in WATCHED and expired:
        condition = _given_up(f, before, condition.message)
    return _checked(f, tiered, condition, found, now)


class _CutsLost(Exception):
    """The stored cuts cannot be read back: the purge can no longer be checked."""


def _stored_places(blobs: BlobStore, request: PurgeRequest, ref: Any) -> list[Place]:
    """The cuts (with their topics' ids) as stored after the purge, as status's checksum
    says they were, and only on topics the (immutable, admitted) spec names. The
    ConfigMaps are in the purge's namespace, where a tenant may write: a lowered cut would
    report remote segments deleted that still wait."""
    if not isinstance(ref, Mapping) or not isinstance(ref.get("sha256"), str):
        raise _CutsLost("status.tiered.offsetsRef names no checksum")
    try:
        payload = blobs.load(BLOB)
    except SinkError as err:
        raise _CutsLost(f"the stored offsets are damaged ({err})") from err
    if payload is None:
        raise _CutsLost("the stored offsets (the purge's tiers ConfigMaps) are gone")
    if hashlib.sha256(payload.encode()).hexdigest() != ref["sha256"]:
        raise _CutsLost("the stored offsets do not match the checksum status recorded")
    try:
        places = from_lines(payload)
    except (ValueError, RecursionError) as err:  # json's errors are ValueErrors
        raise _CutsLost(f"the stored offsets cannot be read ({str(err)[:200]})") from err
    names = request.topic_names()
    return [p for p in places if p.topic in names]


def _unconfirmed(why: str) -> Condition:
    message = f"the remote deletion is no longer checked: {why}"
    return Condition(CONDITION, "Unknown", Reason.REMOTE_DELETION_UNCONFIRMED, message[:2000])


def _given_up(f: Purge, before: Mapping[str, Any], last: str) -> Condition:
    message = (
        f"not confirmed within {took(round(f.remote_watch_s * 1000))} of the cut, no longer "
        f"checked; last: {last or before.get('message', '')}"
    )
    return Condition(CONDITION, "Unknown", Reason.REMOTE_DELETION_UNCONFIRMED, message[:2000])


@dataclass(frozen=True)
class RemoteCheck:
    """A check's finding, for status.py to write: status.tiered and the condition."""

    tiered: Mapping[str, Any]
    condition: Condition
    now: datetime
    report: RemoteReport


def _checked(
    f: Purge,
    tiered: dict[str, Any],
    condition: Condition,
    found: BelowCuts | None,
    now: datetime,
) -> RemoteCheck:
    since = parse_timestamp(tiered.get("since")) or now
    tiered["checkedAt"] = ms_timestamp(now)
    tiered.update(_counts(found, since))
    before = _condition(f.status) or {}
    changed = before.get("reason") != condition.reason
    report = _report(condition, found, since, changed=changed)
    if found is None and condition.reason == Reason.REMOTE_SEGMENTS_PENDING:
        # A failed check: the last counts stand.
        pending = int(tiered.get("remoteSegmentsPending") or 0)
        pending_bytes = int(tiered.get("remoteBytesPending") or 0)
        report = RemoteReport(condition, pending, pending_bytes, None, changed)
    return RemoteCheck(tiered, condition, now, report)


__all__ = [
    "BLOB",
    "CONDITION",
    "Place",
    "RemoteCheck",
    "RemoteReport",
    "TierReads",
    "TieredCut",
    "after_cut",
    "check",
    "judge",
    "tally",
    "tiered_topics",
    "watched",
]
