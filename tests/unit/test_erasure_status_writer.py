"""The erasure has one status writer: services/erasure/status.py. Its steps return values
(services/erasure/outcomes.py) and no other module of the erasure path (the package, its
Kopf handler) patches status, read here from the source itself so that a step that starts
writing again fails at once. The rule's own checks live in test_purge_status_writer."""

from __future__ import annotations

from pathlib import Path

import kafka_retention.handlers.erasure as erasure_handler
import kafka_retention.services.erasure as erasure_package
from tests.helpers.status_writes import status_writes

PACKAGE = Path(erasure_package.__file__).parent
WRITER = PACKAGE / "status.py"
CALLERS = [Path(erasure_handler.__file__)]


def erasure_path(package: Path) -> list[Path]:
    return sorted(package.rglob("*.py")) + CALLERS


def test_only_the_status_module_writes_an_erasures_status() -> None:
    writes = status_writes(erasure_path(PACKAGE))
    others = [place for path, places in writes.items() if path != WRITER for place in places]
    assert others == [], f"status written outside services/erasure/status.py: {others}"


def test_the_status_module_is_where_status_is_written() -> None:
    """The rule above holds for a real writer, not for a package that lost it."""
    places = status_writes([WRITER]).get(WRITER, [])
    assert any(place.endswith(".patch") for place in places), places


def test_no_module_of_the_erasure_path_takes_a_keys_raw_bytes() -> None:
    """Status, events and logs carry digests only: ErasureKey.raw is read nowhere here
    (the parser hashes it; the Kafka adapter reads key bytes back from the log)."""
    readers = [
        f"{path.name}:{number}"
        for path in erasure_path(PACKAGE)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ".raw" in line
    ]
    assert readers == []
