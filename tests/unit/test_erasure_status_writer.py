"""The erasure has one status writer: services/erasure/status.py. Its steps return values
(services/erasure/outcomes.py) and no other module of the erasure path (the package, its
Kopf handler) patches status, read here from the source itself so that a step that starts
writing again fails at once. The rule's own checks live in test_purge_status_writer."""

from __future__ import annotations

import json
from pathlib import Path

import kafka_retention.handlers.erasure as erasure_handler
import kafka_retention.services.erasure as erasure_package
from kafka_retention.services.erasure.picture import NOTE_LIMIT, TOPICS_BUDGET, fit_topics
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


def test_status_topics_stay_within_their_budget_keeping_names_and_stages() -> None:
    """500 topics, each with a full note and 20 group names of 249 characters: about
    4.5 MB as written, past what one status write may carry."""
    topics = [
        {
            "name": f"topic-{i:03d}-" + "t" * 200,
            "kind": "delete",
            "stage": "CutHeld",
            "note": "n" * NOTE_LIMIT,
            "unreadBy": [f"{j:02d}" + "g" * 247 for j in range(20)],
            "unreadByCount": 25,
        }
        for i in range(500)
    ]
    assert len(json.dumps(topics)) > 4_000_000
    fitted = fit_topics(topics)
    assert len(json.dumps(fitted, separators=(",", ":"))) <= TOPICS_BUDGET
    assert [t["name"] for t in fitted] == [t["name"] for t in topics]
    assert {t["stage"] for t in fitted} == {"CutHeld"}
    assert {t["unreadByCount"] for t in fitted} == {25}


def test_status_topics_under_their_budget_are_left_whole() -> None:
    topics = [{"name": "t", "stage": "Cut", "note": "n" * NOTE_LIMIT, "unreadBy": ["a"] * 20}]
    assert fit_topics(topics) == topics
