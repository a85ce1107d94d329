"""The purge has one status writer: services/purge/status.py. Its stages return values
(services/purge/outcomes.py) and no other module of the purge path (the package, its
Kopf handler, its command) patches status, read here from the source itself so that a
stage that starts writing again fails at once."""

from __future__ import annotations

import ast
from pathlib import Path

import kafka_retention.cli.purge as purge_command
import kafka_retention.handlers.purge as purge_handler
import kafka_retention.services.purge as purge_package

PACKAGE = Path(purge_package.__file__).parent
WRITER = PACKAGE / "status.py"
CALLERS = [Path(purge_handler.__file__), Path(purge_command.__file__)]


def status_writes(paths: list[Path]) -> dict[Path, list[str]]:
    """Per file, each place it writes status or takes hold of the status store: a
    `.patch(...)` call, or reading `.store` (Purge.store, the StatusStore)."""
    found: dict[Path, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            if node.attr in ("patch", "store"):
                found.setdefault(path, []).append(f"{path.name}:{node.lineno} .{node.attr}")
    return found


def purge_path(package: Path) -> list[Path]:
    return sorted(package.glob("*.py")) + CALLERS


def test_only_the_status_module_writes_a_purges_status() -> None:
    writes = status_writes(purge_path(PACKAGE))
    others = [place for path, places in writes.items() if path != WRITER for place in places]
    assert others == [], f"status written outside services/purge/status.py: {others}"


def test_the_status_module_is_where_status_is_written() -> None:
    """The rule above holds for a real writer, not for a package that lost it."""
    places = status_writes([WRITER]).get(WRITER, [])
    assert any(place.endswith(".patch") for place in places), places
