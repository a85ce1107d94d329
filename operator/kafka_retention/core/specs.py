"""What every spec parser shares: the error that names a field, times, topic names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class SpecError(ValueError):
    """The spec can never work as written; `field` names the offending field."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.message = message


def parse_cluster(spec: Mapping[str, Any]) -> tuple[str, str | None]:
    """`spec.cluster`: the bootstrap servers (required) and the optional client Secret."""
    cluster = spec.get("cluster") or {}
    bootstrap = cluster.get("bootstrapServers")
    if not isinstance(bootstrap, str) or not bootstrap.strip():
        raise SpecError("spec.cluster.bootstrapServers", "is required")
    secret = cluster.get("clientConfigSecret")
    return bootstrap.strip(), str(secret) if secret else None


def parse_time(value: str, field_path: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise SpecError(field_path, f"{value!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise SpecError(field_path, f"{value!r} has no time zone (add Z or +hh:mm)")
    return parsed
