"""The status conditions of the project's resources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    return condition(obj, "Ready")


def conditions_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object's conditions; none yet before its first status."""
    found: list[dict[str, Any]] = obj.get("status", {}).get("conditions") or []
    return found


def with_reason(reason: str, type_: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """A check for wait_for: the object has a condition with this reason (and this type,
    when given)."""

    def check(obj: dict[str, Any]) -> bool:
        return any(
            c.get("reason") == reason and type_ in (None, c["type"]) for c in conditions_of(obj)
        )

    return check
