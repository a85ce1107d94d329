"""What a RecordPurge on a tiered topic reports of the remote deletion below its cuts
(services.purge.tiers): gauges of the remote segments and bytes still to be deleted, a
histogram of how long the deletion took, and one Event when it completes or is given up.

The series are metrics.py's (a RetentionPolicy sets the same ones, kind RetentionPolicy);
`RemoteDeletionSeries` is the callback the purge handler calls with each report, given
its series so that a test can give it its own registry (metrics.remote_deletion_series).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from prometheus_client import Gauge, Histogram

from kafka_retention import metrics
from kafka_retention.core.conditions import EventReason, Reason
from kafka_retention.services.purge import RemoteReport

KIND = "RecordPurge"


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


SERIES = RemoteDeletionSeries(
    metrics.REMOTE_SEGMENTS_PENDING, metrics.REMOTE_BYTES_PENDING, metrics.REMOTE_DELETION_LAG
)

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
