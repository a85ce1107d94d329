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


def purge_path(package: Path) -> list[Path]:
    return sorted(package.rglob("*.py")) + CALLERS


def test_only_the_status_module_writes_a_purges_status() -> None:
    writes = status_writes(purge_path(PACKAGE))
    others = [place for path, places in writes.items() if path != WRITER for place in places]
    assert others == [], f"status written outside services/purge/status.py: {others}"


def test_the_status_module_is_where_status_is_written() -> None:
    """The rule above holds for a real writer, not for a package that lost it."""
    places = status_writes([WRITER]).get(WRITER, [])
    assert any(place.endswith(".patch") for place in places), places


def test_the_rule_sees_every_way_a_module_could_reach_status(tmp_path: Path) -> None:
    """Each of these, in any module of the package (a subpackage's too), is a write."""
    sneaky = tmp_path / "sub" / "stage.py"
    sneaky.parent.mkdir()
    sneaky.write_text(
        "def a(purge):\n    purge.store.patch({})\n"
        "def b(purge):\n    getattr(purge, 'store')\n"
        "def c(api):\n    api.patch_namespaced_custom_object_status()\n"
    )
    writes = status_writes(purge_path(tmp_path))[sneaky]
    # What is found, whatever order the tree walk meets it in.
    assert sorted(place.split(" ")[1] for place in writes) == [
        ".patch",
        ".patch_namespaced_custom_object_status",
        ".store",
        ".store",
    ]
