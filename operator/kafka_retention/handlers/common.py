"""Small helpers every handler shares."""

from __future__ import annotations

import kopf


def namespaced(namespace: str | None) -> str:
    """The object's namespace. The CRDs are namespaced; Kopf types the argument for
    cluster-scoped kinds too."""
    if namespace is None:
        raise kopf.PermanentError("expected a namespaced object")
    return namespace
