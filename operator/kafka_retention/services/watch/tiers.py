"""Tiered topics a policy matches (KIP-405): the retention in force on the brokers' disks
and in remote storage, the bytes in each place, and whether remote segments below the
log start are still waiting for deletion (condition RemoteDeletionPending).

DeleteRecords moves a partition's log start at once; the remote segments wholly below it
are deleted later by the leader's remote log manager (KAFKA-15410), and only the remote
log metadata says when (core.tiers.RemoteLog). A policy that cut a tiered partition
watches that at each of its runs, no timer of its own: RemoteDeletionPending is True while
such segments are not DELETE_FINISHED, False once none are (with how long the last took
after the cut), Unknown while the metadata cannot be read. Nothing here fails a run: a
read that fails is said in status.tiers.error and in the condition.

The reads are shared by a batch (`BatchTiers`): the topics' local bytes (DescribeLogDirs)
and the whole remote log metadata, each read once per batch on its cluster, when the
first policy with tiered topics asks, which is after its cut.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.tiers import (
    RETENTION_SETTINGS,
    BelowCuts,
    RemoteLog,
    below_cuts,
    is_tiered,
)

log = logging.getLogger(__name__)

CONDITION = "RemoteDeletionPending"
# Partitions named in RemoteDeletionPending's message; the counts cover all of them.
MAX_PARTITIONS_NAMED = 3
# status fields of each retention setting (core.tiers.RETENTION_SETTINGS), in its order.
SETTING_FIELDS = dict(
    zip(
        RETENTION_SETTINGS,
        ("retentionMs", "retentionBytes", "localRetentionMs", "localRetentionBytes"),
        strict=True,
    )
)


def tier_settings(config: Mapping[str, str] | None) -> dict[str, str] | None:
    """A tiered topic's retention settings as its configs say them (defaults included,
    as DescribeConfigs answers); None for a topic that is not tiered."""
    if not is_tiered(dict(config or {})):
        return None
    return {k: str(config[k]) for k in RETENTION_SETTINGS if config and k in config}


@runtime_checkable
class TierReader(Protocol):
    """The part of services.ports.TieredKafka a policy's status needs. A connection
    without it (the unit tests' fakes of the other services) reports tiers unreadable."""

    def local_bytes(self, topics: Iterable[str]) -> Mapping[str, int]: ...

    def remote_log(self) -> RemoteLog: ...

    def topic_ids(self, topics: Iterable[str]) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class TierRead:
    """What a batch read of its tiered topics: None where a read failed, and why."""

    local: Mapping[str, int] | None
    remote: RemoteLog | None
    local_error: str | None = None
    remote_error: str | None = None
    # The topics' ids: the remote log names segments by them (none read: by name alone).
    topic_ids: Mapping[str, str] = field(default_factory=dict)

    def error(self) -> str | None:
        said = [e for e in (self.local_error, self.remote_error) if e]
        return "; ".join(said) or None


def _why(what: str, err: BaseException) -> str:
    return f"{what}: {str(err).splitlines()[0][:300] if str(err) else type(err).__name__}"


class BatchTiers:
    """The tier reads of one batch: local bytes of every tiered topic its policies match,
    and the remote log metadata. Read once, by the first policy that asks (the batch's
    policies are applied on a few threads at once), never raising."""

    def __init__(self, kafka: object, topics: Iterable[str]) -> None:
        self._kafka = kafka
        self._topics = sorted(set(topics))
        self._lock = threading.Lock()
        self._read: TierRead | None = None

    def read(self) -> TierRead:
        with self._lock:
            if self._read is None:
                self._read = self._read_now()
            return self._read

    def _read_now(self) -> TierRead:
        kafka = self._kafka
        if not isinstance(kafka, TierReader):
            why = "this connection cannot read tiered storage"
            return TierRead(None, None, f"local bytes: {why}", f"remote log: {why}")
        local: Mapping[str, int] | None = None
        remote: RemoteLog | None = None
        local_error = remote_error = None
        # Any failure, not only KafkaUnavailable: the status of a run that deleted must be
        # written whatever these reads (which decide nothing) run into.
        try:
            local = dict(kafka.local_bytes(self._topics))
        except Exception as err:
            log.warning("local bytes of tiered topics unreadable: %s", err)
            local_error = _why("local bytes (DescribeLogDirs)", err)
        ids: Mapping[str, str] = {}
        try:
            remote = kafka.remote_log()
            ids = dict(kafka.topic_ids(self._topics))
        except Exception as err:
            log.warning("remote log metadata unreadable: %s", err)
            remote_error = _why("remote log metadata", err)
        return TierRead(local, remote, local_error, remote_error, ids)


@dataclass(frozen=True)
class PolicyTiers:
    """A policy's tiered topics, with their retention settings (from the configs its
    batch's topic selection read), and the batch's shared reads."""

    settings: Mapping[str, Mapping[str, str]]
    reads: BatchTiers


@dataclass
class TierReport:
    """status.topics[].tiered per topic, status.tiers, RemoteDeletionPending (None when
    the policy has not cut a tiered partition since it watches them), and for the
    metrics: the remote segments and bytes pending deletion (None: unknown), and how long
    the deletion took after the cut, given at the run that found it complete."""

    topics: dict[str, dict[str, Any]]
    status: dict[str, Any]
    condition: cond.Condition | None
    pending_segments: int | None
    pending_bytes: int | None
    deletion_lag_s: float | None = None


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def watch(
    status: Mapping[str, Any],
    tiers: PolicyTiers | None,
    rows: Sequence[PlanRow],
    moved: Mapping[TopicPartition, tuple[int, int]],
    cut_at: datetime | None,
) -> TierReport | None:
    """The policy's tiered topics after its run. `moved`: (log start before, after) of the
    partitions it cut; `cut_at`: when its deletes were sent (None: it sent none). None when
    the policy matches no tiered topic."""
    if tiers is None:
        return None
    by_topic: dict[str, list[PlanRow]] = {}
    for row in rows:
        if row.topic in tiers.settings:
            by_topic.setdefault(row.topic, []).append(row)
    if not by_topic:
        return None
    read = tiers.reads.read()
    previous = status.get("tiers") or {}
    cut_now = cut_at is not None and any(
        tp.topic in by_topic and after > before for tp, (before, after) in moved.items()
    )
    since = cut_at if cut_now else cond.parse_timestamp(previous.get("lastCutAt"))
    since_ms = int(since.timestamp() * 1000) if since is not None else None
    pending = BelowCuts()
    if read.remote is not None:
        starts = {
            TopicPartition(r.topic, r.partition): r.log_start_offset
            for _, rows_of in sorted(by_topic.items())
            for r in rows_of
        }
        # A partition's log start after this run: where it cut, what the plan read.
        cuts = {tp: moved[tp][1] if tp in moved else start for tp, start in starts.items()}
        pending = below_cuts(
            read.remote,
            {tp: c for tp, c in cuts.items() if c is not None},
            since_ms,
            read.topic_ids,
        )
    topics: dict[str, dict[str, Any]] = {}
    totals = {"local": 0, "remote": 0}
    for topic, topic_rows in sorted(by_topic.items()):
        entry: dict[str, Any] = {}
        for key, value in tiers.settings[topic].items():
            number = _int(value)
            if number is not None:
                entry[SETTING_FIELDS[key]] = number
        if read.local is not None:
            entry["localBytes"] = int(read.local.get(topic, 0))
            totals["local"] += entry["localBytes"]
        if read.remote is not None:
            topic_id = read.topic_ids.get(topic)
            remote_bytes = sum(
                read.remote.remote_bytes(TopicPartition(r.topic, r.partition), topic_id)
                for r in topic_rows
            )
            entry["remoteBytes"] = remote_bytes
            entry["remoteBytesPendingDeletion"] = pending.pending_bytes_of.get(topic, 0)
            totals["remote"] += remote_bytes
        topics[topic] = entry
    known = read.remote is not None
    summary: dict[str, Any] = {
        "topics": len(by_topic),
        "localBytes": totals["local"] if read.local is not None else None,
        "remoteBytes": totals["remote"] if known else None,
        "remoteBytesPendingDeletion": pending.pending_bytes if known else None,
        "remoteSegmentsPendingDeletion": pending.pending if known else None,
        "lastCutAt": cond.ms_timestamp(since) if since is not None else None,
        # A merge patch keeps fields it does not name: null clears an old error.
        "error": read.error(),
    }
    was = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)
    condition = _condition(read, pending, since) if cut_now or was is not None else None
    # The lag is given once: at the run that finds the deletion complete after a cut (its
    # own, or an earlier one that left segments waiting), not at every later run.
    done_now = cut_now or (was is not None and was.get("status") != "False")
    lag = _took(pending, since) if condition and condition.status == "False" and done_now else None
    return TierReport(
        topics,
        {"tiers": summary},
        condition,
        pending.pending if known else None,
        pending.pending_bytes if known else None,
        lag,
    )


def _took(pending: BelowCuts, since: datetime | None) -> float | None:
    """Seconds from the cut to the last remote segment below it deleted, as the brokers
    recorded it (their clock against this operator's: never below 0)."""
    return None if since is None else pending.lag_s(int(since.timestamp() * 1000))


def _condition(read: TierRead, pending: BelowCuts, since: datetime | None) -> cond.Condition:
    after = f" since the cut at {cond.timestamp(since)}" if since is not None else ""
    if read.remote is None:
        return cond.Condition(
            CONDITION,
            "Unknown",
            Reason.REMOTE_LOG_UNREADABLE,
            f"cannot tell whether remote segments below the log start are deleted{after}: "
            f"{read.remote_error}",
        )
    if pending.pending:
        parts = pending.partitions_pending
        named = ", ".join(str(tp) for tp in parts[:MAX_PARTITIONS_NAMED])
        more = (
            f" and {len(parts) - MAX_PARTITIONS_NAMED} more"
            if len(parts) > MAX_PARTITIONS_NAMED
            else ""
        )
        return cond.Condition(
            CONDITION,
            "True",
            Reason.REMOTE_SEGMENTS_PENDING,
            f"{pending.pending} remote segment(s) ({pending.pending_bytes} bytes) wholly below the "
            f"log start of {len(parts)} partition(s) ({named}{more}) not deleted yet{after}: "
            "the brokers' remote log manager deletes them, and frees their remote storage, "
            "at its next tasks",
        )
    took = ""
    seconds = _took(pending, since)
    if seconds is not None:
        took = (
            f"; the last of the {pending.deleted} deleted{after} was deleted "
            f"{seconds:.1f}s after it"
        )
    return cond.Condition(
        CONDITION,
        "False",
        Reason.REMOTE_SEGMENTS_DELETED,
        f"no remote segment below the log start is waiting for deletion{took}",
    )
