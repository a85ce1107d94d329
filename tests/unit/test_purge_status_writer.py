"""The purge has one status writer: services/purge/status.py. Its stages return values
(services/purge/outcomes.py) and no other module of the package patches status, read
here from the source itself so that a stage that starts writing again fails at once."""

from __future__ import annotations

import ast
from pathlib import Path

import kafka_retention.services.purge as purge_package

PACKAGE = Path(purge_package.__file__).parent
WRITER = "status"


def status_writes(package: Path) -> dict[str, list[str]]:
    """Per module of `package`, each place it writes status or takes hold of the status
    store: a `.patch(...)` call, or reading `.store` (Purge.store, the StatusStore)."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            if node.attr == "patch" or node.attr == "store":
                where = f"{path.name}:{node.lineno} .{node.attr}"
                found.setdefault(path.stem, []).append(where)
    return found


def test_only_the_status_module_writes_a_purges_status() -> None:
    writes = status_writes(PACKAGE)
    others = {module: places for module, places in writes.items() if module != WRITER}
    assert others == {}, f"status written outside services/purge/{WRITER}.py: {others}"


def test_the_status_module_is_where_status_is_written() -> None:
    """The rule above holds for a real writer, not for a package that lost it."""
    places = status_writes(PACKAGE).get(WRITER, [])
    assert any(place.endswith(".patch") for place in places), places
