"""Operator-wide Kopf settings, applied once at start-up."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from kafka_retention import heap
from kafka_retention.adapters.kube import ensure_peering
from kafka_retention.config import OperatorConfig
from kafka_retention.core.resources import ANNOTATIONS_PREFIX, FINALIZER


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    cfg: OperatorConfig = memo.get("config") or OperatorConfig()
    if cfg.peering is not None:
        # How long a replica that stopped touching its record still counts as alive: the
        # standby takes over this long after the active replica dies.
        settings.peering.lifetime = cfg.peering.lifetime_s
        # Kopf writes into the peering object but never creates it; startup handlers run
        # before Kopf's peering starts.
        for namespace in cfg.peering.scopes:
            ensure_peering(cfg.peering.name, namespace)
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix=ANNOTATIONS_PREFIX
    )
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATIONS_PREFIX, key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO  # INFO and above become Kubernetes Events
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    # Again after the command's own settle (cli.main): Kopf, the Kubernetes client and
    # every handler module were imported since, and are frozen only now.
    heap.settle()
