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

# The spec lists Kopf's diff base keeps as their count and one digest, by kind.
DIGESTED_LISTS = {"RecordErasure": "keys", "RecordPurge": "partitions"}


class DiffBase(kopf.AnnotationsDiffBaseStorage):
    """Kopf's diff base (the last handled spec, kept in an annotation) with the long list
    of a RecordErasure (spec.keys) or a RecordPurge (spec.partitions) reduced to its count
    and one digest of it all. Up to 10,000 entries would pass the API server's 256 KiB
    limit on annotations; below that, the copy still doubles the object on every write
    and watch event (one RecordPurge of 1,000 partitions: 60 KB more); and a key given in
    plain form (string, base64) must not be copied once more. Both specs are immutable,
    so the digest still tells a change."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        spec = essence.get("spec")
        field = DIGESTED_LISTS.get(str(body.get("kind")))
        if field is not None and isinstance(spec, dict) and field in spec:
            listed = json.dumps(spec[field], sort_keys=True, separators=(",", ":"))
            spec[field] = {
                "count": len(spec[field]) if isinstance(spec[field], list) else 0,
                "sha256": hashlib.sha256(listed.encode()).hexdigest(),
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
