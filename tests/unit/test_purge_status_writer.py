"""The purge has one status writer: services/purge/status.py. Its stages return values
(services/purge/outcomes.py) and no other module of the purge path (the package, its
Kopf handler, its command) patches status, read here from the source itself so that a
stage that starts writing again fails at once."""

from __future__ import annotations

from pathlib import Path

import kafka_retention.cli.purge as purge_command
import kafka_retention.handlers.purge as purge_handler
import kafka_retention.services.purge as purge_package
from tests.helpers.status_writes import status_writes

PACKAGE = Path(purge_package.__file__).parent
WRITER = PACKAGE / "status.py"
CALLERS = [Path(purge_handler.__file__), Path(purge_command.__file__)]


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
