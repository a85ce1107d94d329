"""What a RecordPurge on a tiered topic reports of the remote deletion below its cuts
(services.purge.tiers): gauges of the remote segments and bytes still to be deleted, a
histogram of how long the deletion took, and one Event when it completes or is given up.

The series are defined here until metrics.py takes them (the integration moves them
there unchanged); `RemoteDeletionSeries` is the callback the purge handler calls with
each report, given its series so that a test can give it its own registry.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from prometheus_client import Gauge, Histogram

from kafka_retention.core.conditions import EventReason, Reason
from kafka_retention.services.purge import RemoteReport

KIND = "RecordPurge"


def remote_series(registry: Any = None) -> tuple[Gauge, Gauge, Histogram]:
    """The three series; `registry`: prometheus_client's default one when None."""
    extra = {} if registry is None else {"registry": registry}
    segments = Gauge(
        "kafka_retention_remote_segments_pending_deletion",
        "Remote segments (tiered storage) wholly below a purge's cuts that the brokers' "
        "remote log metadata does not show DELETE_FINISHED yet; absent once none are.",
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


class RemoteDeletionSeries:
    """Sets the series from a purge's RemoteReport: the gauges while segments wait, gone
    once the deletion is complete or no longer watched; the lag once it is complete."""

    def __init__(self, segments: Gauge, size: Gauge, lag: Histogram) -> None:
        self.segments, self.size, self.lag = segments, size, lag

    def report(self, namespace: str, name: str, report: RemoteReport) -> None:
        labels = (KIND, namespace, name)
        if report.watching and report.condition.reason == Reason.REMOTE_SEGMENTS_PENDING:
            self.segments.labels(*labels).set(report.pending)
            self.size.labels(*labels).set(report.pending_bytes)
            return
        self.forget(namespace, name)
        if report.lag_s is not None and report.changed:
            self.lag.labels(KIND).observe(report.lag_s)

    def forget(self, namespace: str, name: str) -> None:
        """The purge's gauges removed (done, given up, or the purge deleted)."""
        for gauge in (self.segments, self.size):
            with contextlib.suppress(KeyError):  # none set: nothing to remove
                gauge.remove(KIND, namespace, name)


SERIES = RemoteDeletionSeries(*remote_series())

# An Event for a report whose condition just changed to one of these: (warning?, reason).
_EVENTS: dict[Reason, tuple[bool, EventReason]] = {
    Reason.REMOTE_SEGMENTS_DELETED: (False, EventReason.REMOTE_SEGMENTS_DELETED),
    Reason.REMOTE_DELETION_UNCONFIRMED: (True, EventReason.REMOTE_DELETION_UNCONFIRMED),
}


def event(report: RemoteReport) -> tuple[bool, EventReason, str] | None:
    """The Event a report calls for, if any: (warning?, reason, message)."""
    found = _EVENTS.get(report.condition.reason)
    if found is None or not report.changed:
        return None
    return found[0], found[1], report.condition.message


def post(
    report: RemoteReport,
    info: Callable[[str, str], None],
    warn: Callable[[str, str], None],
) -> None:
    """Post the report's Event through `info` or `warn` (reason, message)."""
    found = event(report)
    if found is not None:
        warning, reason, message = found
        (warn if warning else info)(str(reason), message)
