"""Where a module writes a resource's status, read from its source: the tests that hold
each one-shot resource (purge, erasure) to its one status writer."""

from __future__ import annotations

import ast
from pathlib import Path

# Names that reach status: the StatusStore's method and Purge's field holding it, and the
# Kubernetes client's status calls (patch_namespaced_custom_object_status, ...).
_WRITERS = ("patch", "store")


def _writes_status(name: str) -> bool:
    return name in _WRITERS or (name.endswith("_status") and name.startswith(("patch", "replace")))


def status_writes(paths: list[Path]) -> dict[Path, list[str]]:
    """Per file, each place it writes status or takes hold of the status store: a
    `.patch(...)` call, reading `.store` (Purge.store, the StatusStore), either name
    through getattr, or a Kubernetes client call that writes a status subresource."""
    found: dict[Path, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            name: str | None = None
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                name = node.attr
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                name = node.args[1].value
            if name is not None and _writes_status(name):
                found.setdefault(path, []).append(f"{path.name}:{line} .{name}")
    return found
