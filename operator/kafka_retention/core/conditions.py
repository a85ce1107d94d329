"""metav1.Condition bookkeeping and the CamelCase reasons this operator uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

ConditionStatus = Literal["True", "False", "Unknown"]


class Reason(StrEnum):
    # Ready
    PLANNED = "Planned"
    INVALID_SPEC = "InvalidSpec"
    KAFKA_UNAVAILABLE = "KafkaUnavailable"
    PLAN_FAILED = "PlanFailed"
    TOO_MANY_PARTITIONS = "TooManyPartitions"
    SECRET_UNAVAILABLE = "SecretUnavailable"  # noqa: S105 - a reason, not a password
    # spec.cluster.strimzi names a Kafka, listener or KafkaUser that is missing or not
    # ready; the message names the field.
    CLUSTER_UNRESOLVED = "ClusterUnresolved"
    # Tenancy (KafkaClusterBinding): the resource may not do this on that cluster, the
    # binding it names is missing or broken, the cluster answered with another id than
    # the binding's, or a quota of the binding is exceeded. Messages name the field.
    NOT_PERMITTED = "NotPermitted"
    BINDING_UNAVAILABLE = "BindingUnavailable"
    CLUSTER_ID_MISMATCH = "ClusterIdMismatch"
    QUOTA_EXCEEDED = "QuotaExceeded"
    # RetentionPolicy GroupsReadable: a named group answers as no group at all on a
    # cluster that cannot have share or streams groups (core.cluster_features), or every
    # named group was read.
    GROUP_TYPE_UNSUPPORTED = "GroupTypeUnsupported"
    GROUPS_READ = "GroupsRead"
    # Succeeded
    IN_PROGRESS = "InProgress"
    PURGED = "Purged"
    NOTHING_TO_DELETE = "NothingToDelete"
    DRY_RUN_COMPLETED = "DryRunCompleted"
    PARTIALLY_FAILED = "PartiallyFailed"
    FAILED = "Failed"
    # RetentionPolicy Ready after a run, and Degraded when every partition went well
    RUN_SUCCEEDED = "RunSucceeded"
    ALL_APPLIED = "AllApplied"
    # RetentionPolicy OnSchedule
    ON_TIME = "OnTime"
    LATE = "Late"
    # Ready, when the API server refused to store the object's state
    STATE_NOT_PERSISTED = "StateNotPersisted"
    # RecordPurge Ready once its stored plan was applied
    PLAN_APPLIED = "PlanApplied"
    # RecordPurge Ready and Succeeded when its stored plan, read back, is not one its spec
    # and binding allow (a topic or partition it does not name, a cut above what it asks,
    # more partitions than partitionsPerPurge): nothing is deleted.
    PLAN_REJECTED = "StoredPlanRejected"
    # RetentionPolicy DataLoss (spec.notify)
    UNCONSUMED_RECORDS_DELETED = "UnconsumedRecordsDeleted"
    NO_LOSS = "NoLoss"
    # RetentionPolicy AtRisk (spec.notify)
    UNREAD_AT_RISK = "UnreadRecordsAtRisk"
    NO_RISK = "NoRisk"
    # RetentionPolicy TombstonesAtRisk (spec.tombstones)
    TOMBSTONES_AT_RISK = "TombstonesAtRisk"
    TOMBSTONES_SAFE = "TombstonesSafe"
    # RetentionPolicy OrphansFound (spec.orphanPartitions)
    ORPHANS_FOUND = "OrphanDirectoriesFound"
    NO_ORPHANS = "NoOrphanDirectories"
    # OrphansFound when removals were held (core.orphans.Block; ClusterIdMismatch too):
    # a log dir's meta.properties names another broker, no cluster.id, or is missing; the
    # metadata lists no topics; a broker would lose too large a share of its directories.
    NODE_ID_MISMATCH = "NodeIdMismatch"
    CLUSTER_ID_MISSING = "ClusterIdMissing"
    META_PROPERTIES_MISSING = "MetaPropertiesMissing"
    NO_TOPICS_IN_METADATA = "NoTopicsInMetadata"
    REMOVAL_CAP_REACHED = "RemovalCapReached"
    # RecordErasure Erased: how far the erasure of its keys has come (core.erasure_states)
    TOMBSTONED = "Tombstoned"
    VALUES_ERASED = "ValuesErased"
    KEY_ERASED = "KeyErased"
    NOTHING_FOUND = "NothingFound"
    AWAITING_COMPACTION = "AwaitingCompaction"
    AWAITING_SEGMENT_ROLL = "AwaitingSegmentRoll"
    AWAITING_RETENTION = "AwaitingRetention"
    # a listed key was written again after its tombstone
    KEY_REWRITTEN = "KeyRewritten"
    # a topic the erasure names does not exist, or its pattern matches none: it ends
    # (Failed) rather than sign a receipt for topics it never read
    TOPIC_NOT_FOUND = "TopicNotFound"
    # onDeleteTopics: cut: records deleted just past the last matches, verification next
    RECORDS_CUT = "RecordsCut"
    # a protected group has not read past a partition's last match: no cut there
    CUT_HELD = "CutHeld"
    # the cuts would remove more of other keys' records than spec.maxCollateralRecords
    COLLATERAL_ABOVE_LIMIT = "CollateralAboveLimit"
    # RecordErasure DeadlineAtRisk: the topics' configs cannot meet spec.deadline
    ERASURE_DEADLINE_AT_RISK = "ErasureDeadlineAtRisk"
    ERASURE_DEADLINE_MET = "ErasureDeadlineMet"
    # RecordErasure ReceiptSigned
    RECEIPT_SIGNED = "ReceiptSigned"
    SIGNING_KEY_UNAVAILABLE = "SigningKeyUnavailable"
    LEDGER_BEHIND = "LedgerBehind"  # the receipt signed, not recorded in the ledger yet
    # RemoteDeletionPending (tiered topics, KIP-405), of a RecordPurge and a RetentionPolicy:
    # remote segments wholly below a cut's log start that the brokers' remote log metadata
    # does not show deleted yet; none left; none below the cut at all; the metadata could
    # not be read; or (a purge) still pending or unreadable after its watch ended.
    REMOTE_SEGMENTS_PENDING = "RemoteSegmentsPending"
    REMOTE_SEGMENTS_DELETED = "RemoteSegmentsDeleted"
    NO_REMOTE_SEGMENTS_BELOW_CUT = "NoRemoteSegmentsBelowCut"
    REMOTE_LOG_UNREADABLE = "RemoteLogUnreadable"
    REMOTE_DELETION_UNCONFIRMED = "RemoteDeletionUnconfirmed"


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ms_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC to the millisecond, for times a later run measures from (a
    purge's status.timings, a cut's time before a remote deletion)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: Any) -> datetime | None:
    """A time status holds (either form above), or None when it holds none readable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: ConditionStatus,
    reason: Reason,
    message: str,
    generation: int | None,
    now: datetime,
) -> list[dict[str, Any]]:
    """A new condition list with `type_` set; lastTransitionTime moves only when the
    status does, as metav1 prescribes."""
    out: list[dict[str, Any]] = []
    previous: Mapping[str, Any] | None = None
    for cond in conditions or []:
        if cond.get("type") == type_:
            previous = cond
        else:
            out.append(dict(cond))
    changed = previous is None or previous.get("status") != status
    entry: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": str(reason),
        "message": message[:32768],
        "lastTransitionTime": timestamp(now)
        if changed or previous is None
        else previous.get("lastTransitionTime", timestamp(now)),
    }
    if generation is not None:
        entry["observedGeneration"] = generation
    out.append(entry)
    return sorted(out, key=lambda c: str(c["type"]))


@dataclass(frozen=True)
class Condition:
    """A condition as a check judged it, before `stamp` dates it: the watches say what
    they found and the run, which knows the generation and the time, writes it."""

    type: str
    status: ConditionStatus
    reason: Reason
    message: str


def stamp(
    conditions: Sequence[Mapping[str, Any]] | None,
    found: Condition,
    generation: int | None,
    now: datetime,
) -> list[dict[str, Any]]:
    return set_condition(
        conditions, found.type, found.status, found.reason, found.message, generation, now
    )


class EventReason(StrEnum):
    """Reasons of the Kubernetes Events the operator posts."""

    INVALID_SPEC = "InvalidSpec"
    PARTITION_FAILED = "PartitionFailed"
    # RecordPurge
    PURGE_STARTED = "PurgeStarted"
    PURGE_PENDING = "PurgePending"
    PURGE_SUCCEEDED = "PurgeSucceeded"
    REMOTE_SEGMENTS_DELETED = "RemoteSegmentsDeleted"
    REMOTE_DELETION_UNCONFIRMED = "RemoteDeletionUnconfirmed"
    # RetentionPolicy
    RUN_FAILED = "RunFailed"
    RECORDS_DELETED = "RecordsDeleted"
    UNCONSUMED_RECORDS_DELETED = "UnconsumedRecordsDeleted"
    TOMBSTONES_AT_RISK = "TombstonesAtRisk"
    DELETE_RETENTION_RAISED = "DeleteRetentionRaised"
    ORPHAN_REMOVED = "OrphanDirectoryRemoved"
    # RecordErasure (digests and counts only: never a key)
    ERASURE_STARTED = "ErasureStarted"
    TOMBSTONES_WRITTEN = "TombstonesWritten"
    VALUES_ERASED = "ValuesErased"
    KEY_ERASED = "KeyErased"
    ERASURE_RECEIPT = "ErasureReceipt"
    RECORDS_CUT = "RecordsCut"
    CUT_HELD = "CutHeld"
    ERASURE_DEADLINE_AT_RISK = "ErasureDeadlineAtRisk"
