"""Small helpers every handler shares."""

from __future__ import annotations

import kopf

from kafka_retention.core.purge_ledger import PurgeLedger


def namespaced(namespace: str | None) -> str:
    """The object's namespace. The CRDs are namespaced; Kopf types the argument for
    cluster-scoped kinds too."""
    if namespace is None:
        raise kopf.PermanentError("expected a namespaced object")
    return namespace


def purge_ledger(memo: kopf.Memo) -> PurgeLedger:
    """The operator's one ledger of finished RecordPurges: filled by their watch, read by
    policy runs to name a purge as a loss's cause."""
    ledger: PurgeLedger = memo.setdefault("purges", PurgeLedger())
    return ledger
