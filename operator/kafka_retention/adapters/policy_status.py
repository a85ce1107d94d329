"""A RetentionPolicy's status as the policy scheduler writes it (services.policy.fleet's store):
merge patches of the status subresource, with what was written remembered."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kafka_retention.adapters.kube import StatusWriter
from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.resources import RETENTION_POLICIES

log = logging.getLogger(__name__)


class PolicyStatus:
    """Writes one policy's status and remembers what it wrote, so the next run starts from
    it even before the watch delivers it back. A policy deleted meanwhile is not an error;
    a status the API server refuses is said in the Ready condition with its cause."""

    def __init__(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self.writer = StatusWriter(RETENTION_POLICIES, namespace, name)
        self.status: dict[str, Any] = dict(status)

    def patch(self, status: Mapping[str, Any]) -> None:
        try:
            self.writer.patch(status)
        except WriteRefused as exc:
            if exc.status == 404:
                return
            self._refused(exc)
            raise
        self.status.update(status)

    def _refused(self, exc: WriteRefused) -> None:
        message = f"status not stored: HTTP {exc.status} {exc.reason}: {exc.body}"
        conditions = cond.set_condition(
            self.status.get("conditions"),
            "Ready",
            "False",
            Reason.STATE_NOT_PERSISTED,
            message,
            None,
            datetime.now(UTC),
        )
        try:
            self.writer.patch({"conditions": conditions})
        except WriteRefused:
            log.exception("could not store the StateNotPersisted condition either")
