"""Identity of the custom resources this operator owns (group, version, plurals)."""

from __future__ import annotations

from typing import Final

GROUP: Final = "kafka-retention.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

RECORD_PURGES: Final = "recordpurges"
RETENTION_POLICIES: Final = "retentionpolicies"
RECORD_ERASURES: Final = "recorderasures"
KAFKA_CLUSTER_BINDINGS: Final = "kafkaclusterbindings"  # cluster-scoped

# Kopf's finalizer and its progress/diff-base annotations live under the project's domain,
# so `kubectl get -o yaml` shows who owns them and Kopf's defaults never collide with
# another Kopf operator watching the same objects.
FINALIZER: Final = f"{GROUP}/finalizer"
ANNOTATIONS_PREFIX: Final = GROUP
