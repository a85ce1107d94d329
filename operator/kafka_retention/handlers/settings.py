"""Operator-wide Kopf settings, applied once at start-up."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from kafka_retention.core.resources import ANNOTATIONS_PREFIX, FINALIZER


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix=ANNOTATIONS_PREFIX
    )
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATIONS_PREFIX, key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO  # INFO and above become Kubernetes Events
    # Policy daemons leave their wait at once when stopped; let Kopf see that at once
    # too, rather than at its next polling of exiting daemons.
    settings.background.instant_exit_timeout = 3.0
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
