"""Prometheus metrics of the operator, served by `kafka-retention run --metrics-port`."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

# Gauges that describe one policy's latest view. A deleted policy's must go with it: left
# at their last values they would keep AtRisk, TombstonesAtRisk, records-behind and the
# orphan panels showing a policy that no longer exists. Counters stay (their rates fall to
# zero).
_POLICY_GAUGES: list[Gauge] = []


def _per_resource(name: str, doc: str, *labels: str) -> Counter:
    """A counter of what one RecordPurge or RetentionPolicy did, labelled by its kind,
    namespace, name and `labels`."""
    return Counter(f"kafka_retention_{name}", doc, ["kind", "namespace", "name", *labels])


def _per_policy(name: str, doc: str, *labels: str) -> Counter:
    """A counter of what one RetentionPolicy did, labelled by its namespace, name and
    `labels`."""
    return Counter(f"kafka_retention_{name}", doc, ["namespace", "name", *labels])


def _policy_gauge(name: str, doc: str, *labels: str) -> Gauge:
    """A gauge of one policy's latest view, labelled by the policy and `labels`, whose
    series forget_policy removes."""
    gauge = Gauge(f"kafka_retention_{name}", doc, ["namespace", "name", *labels])
    _POLICY_GAUGES.append(gauge)
    return gauge


RECORDS_DELETED = _per_resource(
    "records_deleted_total",
    "Records deleted by the operator (log start offset moves it caused).",
    "topic",
)
PARTITIONS_PURGED = _per_resource(
    "partitions_purged_total",
    "Partitions whose log start offset reached the planned cut.",
)
PARTITION_FAILURES = _per_resource(
    "partition_failures_total",
    "Partitions that ended in a non-retriable failure.",
)
RUN_SECONDS = Histogram(
    "kafka_retention_run_duration_seconds",
    "Duration of one reconcile run (plan, delete, verify).",
    ["kind"],
    buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900),
)
BYTES_RECLAIMED = _per_resource(
    "bytes_reclaimed_estimate_total",
    "Estimated bytes freed by deletions (records deleted times sampled record size).",
)
PARTITIONS_CUT = _per_resource(
    "partitions_cut_total",
    "Partitions whose log start offset a policy run moved.",
)


def remote_deletion_series(registry: Any = None) -> tuple[Gauge, Gauge, Histogram]:
    """Tiered storage's remote deletion after a cut, for RecordPurges and RetentionPolicies
    alike (label `kind`); `registry`: prometheus_client's default one when None (a test
    passes its own)."""
    extra = {} if registry is None else {"registry": registry}
    segments = Gauge(
        "kafka_retention_remote_segments_pending_deletion",
        "Remote segments (tiered storage) wholly below a purge's cuts or a policy's log "
        "starts that the brokers' remote log metadata does not show DELETE_FINISHED yet; "
        "absent once none are.",
        ["kind", "namespace", "name"],
        **extra,
    )
    size = Gauge(
        "kafka_retention_remote_bytes_pending_deletion",
        "Bytes of those remote segments.",
        ["kind", "namespace", "name"],
        **extra,
    )
    lag = Histogram(
        "kafka_retention_remote_deletion_lag_seconds",
        "From a cut's DeleteRecords to the brokers' record of the last remote segment "
        "below it deleted (KAFKA-15410: remote segments go asynchronously).",
        ["kind"],
        buckets=(1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
        **extra,
    )
    return segments, size, lag


REMOTE_SEGMENTS_PENDING, REMOTE_BYTES_PENDING, REMOTE_DELETION_LAG = remote_deletion_series()

UNCONSUMED_DELETED = _per_policy(
    "unconsumed_records_deleted_total",
    "Records deleted before a deleteConsumed group had read them (maxRetention/deleteBefore).",
    "group",
    "topic",
)
UNCONSUMED_LOST = _per_policy(
    "unconsumed_lost_records_total",
    "Records removed before a spec.notify group read them, by what removed them "
    "(maxRetention, deleteBefore, brokerRetention, external); each loss counted once.",
    "group",
    "topic",
    "cause",
)
UNREAD_AT_RISK = _policy_gauge(
    "unread_at_risk_seconds",
    "Upper bound on the time before retention (the broker's retention.ms or the policy's "
    "maxRetention) reaches a spec.notify group's next unread record, soonest partition "
    "per group and topic; absent when none is within spec.notify.atRiskWithin.",
    "group",
    "topic",
)
GROUP_RECORDS_BEHIND = _policy_gauge(
    "group_records_behind",
    "Records between a group's position and the high watermark, summed over the "
    "partitions a policy planned where the group has one, by the type the group was read "
    "as (consumer, classic, share: its start offset, streams, none); spec.deleteConsumed "
    "and spec.notify groups, at the policy's last run.",
    "group",
    "type",
)
TOMBSTONE_MARGIN = _policy_gauge(
    "tombstone_margin_seconds",
    "delete.retention.ms minus a spec.tombstones group's time lag on a compacted topic "
    "(smallest over partitions; negative: tombstones it has not read may be gone); set "
    "while the group is past its warnAtPercent.",
    "group",
    "topic",
)
DELETE_RETENTION_RAISED = _per_policy(
    "delete_retention_raised_total",
    "Times a policy raised a compacted topic's delete.retention.ms (raiseDeleteRetention).",
    "topic",
)
# KIP-370's proposed broker metrics, from outside: per policy and broker.
ORPHAN_PARTITIONS = _policy_gauge(
    "orphan_partitions",
    "Orphan partition directories on a broker's log dirs at the last check.",
    "broker",
)
ORPHAN_BYTES = _policy_gauge(
    "orphan_partition_bytes",
    "Bytes those orphan directories hold.",
    "broker",
)
ORPHAN_BYTES_RECLAIMED = _per_policy(
    "orphan_bytes_reclaimed",
    "Bytes freed by removing orphan partition directories.",
    "broker",
)
RUN_FAILURES = _per_policy(
    "run_failures_total",
    "Policy runs that could not complete (Kafka unreachable, Secret missing, ...).",
    "reason",
)

# --- the RetentionPolicy scheduler -------------------------------------------------------

ACTING = Gauge(
    "kafka_retention_acting",
    "1 while this replica runs RetentionPolicies, 0 while a peer does (--peering).",
)
POLICIES = Gauge("kafka_retention_policies", "RetentionPolicies the operator schedules.")
QUEUE_DEPTH = Gauge(
    "kafka_retention_scheduler_queue_depth", "RetentionPolicies due to run and not running yet."
)
RUNNING = Gauge("kafka_retention_scheduler_running", "RetentionPolicies running now.")
LATE = Gauge(
    "kafka_retention_policies_late",
    "RetentionPolicies waiting longer than their slack past their due time.",
)
LATENESS = Histogram(
    "kafka_retention_policy_start_lateness_seconds",
    "How long after its due time a policy run started.",
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800),
)
BATCH_SIZE = Histogram(
    "kafka_retention_batch_policies",
    "Policies planned together in one batch (one cluster, one tick).",
    buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
)


def forget_policy(namespace: str, name: str) -> None:
    for gauge in _POLICY_GAUGES:
        stale = [
            tuple(sample.labels.values())  # in label-name order, as remove() takes them
            for family in gauge.collect()
            for sample in family.samples
            if sample.labels.get("namespace") == namespace and sample.labels.get("name") == name
        ]
        for values in stale:
            gauge.remove(*values)
    for series in _SERIES:
        series.forget(namespace, name)


class PolicySeries:
    """A gauge whose series a policy replaces at each run: the series it set last time and
    does not set now are removed (a group that caught up, a topic dropped from the spec),
    so a cleared risk does not linger at its last value."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge = gauge
        self._lock = threading.Lock()
        self._now: dict[tuple[str, str], set[tuple[str, ...]]] = {}

    def replace(self, namespace: str, name: str, values: Mapping[tuple[str, ...], float]) -> None:
        """The policy's series are now exactly `values` (extra labels -> value)."""
        with self._lock:
            for gone in self._now.get((namespace, name), set()) - set(values):
                self.gauge.remove(namespace, name, *gone)
            for labels, value in values.items():
                self.gauge.labels(namespace, name, *labels).set(value)
            self._now[(namespace, name)] = set(values)

    def forget(self, namespace: str, name: str) -> None:
        """The policy is gone (forget_policy removed its series)."""
        with self._lock:
            self._now.pop((namespace, name), None)


AT_RISK_SERIES = PolicySeries(UNREAD_AT_RISK)
BEHIND_SERIES = PolicySeries(GROUP_RECORDS_BEHIND)
MARGIN_SERIES = PolicySeries(TOMBSTONE_MARGIN)
_SERIES = (AT_RISK_SERIES, BEHIND_SERIES, MARGIN_SERIES)
