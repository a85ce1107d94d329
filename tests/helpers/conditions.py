"""The status conditions of the project's resources."""

from __future__ import annotations

from typing import Any


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)
