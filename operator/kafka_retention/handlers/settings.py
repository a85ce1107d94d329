"""Operator-wide Kopf settings, applied once at start-up."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import kopf

from kafka_retention import heap
from kafka_retention.adapters.kube import ensure_peering
from kafka_retention.config import OperatorConfig
from kafka_retention.core.resources import ANNOTATIONS_PREFIX, FINALIZER

ERASURE_KIND = "RecordErasure"


class DiffBase(kopf.AnnotationsDiffBaseStorage):
    """Kopf's diff base (the last handled spec, kept in an annotation) with a
    RecordErasure's spec.keys reduced to their count and one digest of them all: up to
    10,000 keys would pass the API server's 256 KiB limit on annotations, and a key given
    in plain form (string, base64) must not be copied once more. The spec is immutable,
    so the digest still tells a change."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        spec = essence.get("spec")
        if body.get("kind") == ERASURE_KIND and isinstance(spec, dict) and "keys" in spec:
            keys = json.dumps(spec["keys"], sort_keys=True, separators=(",", ":"))
            spec["keys"] = {
                "count": len(spec["keys"]) if isinstance(spec["keys"], list) else 0,
                "sha256": hashlib.sha256(keys.encode()).hexdigest(),
            }
        return essence


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
    settings.persistence.diffbase_storage = DiffBase(
        prefix=ANNOTATIONS_PREFIX, key="last-handled-configuration"
    )
    settings.posting.level = logging.INFO  # INFO and above become Kubernetes Events
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    # Again after the command's own settle (cli.main): Kopf, the Kubernetes client and
    # every handler module were imported since, and are frozen only now.
    heap.settle()
