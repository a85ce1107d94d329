"""The RecordErasure service: `reconcile` one erasure a step at a time (pipeline.py),
each step returning a value that status.py, the one status writer, turns into the
status patch; the handler wires in the stores, the Kafka connection and the signing key
(inputs.Erasure)."""

from kafka_retention.core.failures import Unresolved
from kafka_retention.services.erasure.inputs import Erasure
from kafka_retention.services.erasure.outcomes import Outcome, Retry
from kafka_retention.services.erasure.pipeline import finished, reconcile

__all__ = ["Erasure", "Outcome", "Retry", "Unresolved", "finished", "reconcile"]
