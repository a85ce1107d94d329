"""docs/troubleshooting.md has a section for every reason the operator can give: a new
condition or event reason without an entry fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_retention.core.conditions import EventReason, Reason
from kafka_retention.core.purge_states import FINAL_PHASES, Phase

PAGE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"

# The handler posts a finished purge that did not succeed as Purge<phase> (handlers/purge.py).
PURGE_PHASE_EVENTS = sorted(f"Purge{phase}" for phase in FINAL_PHASES if phase != Phase.SUCCEEDED)
REASONS = sorted({*map(str, Reason), *map(str, EventReason), *PURGE_PHASE_EVENTS})


def _headings() -> set[str]:
    return set(re.findall(r"^#{2,3} (\S+)$", PAGE.read_text(), re.MULTILINE))


@pytest.mark.parametrize("reason", REASONS)
def test_every_reason_has_a_troubleshooting_section(reason: str) -> None:
    # A heading that is the reason alone gets the anchor #<reason in lower case>, which
    # other pages link to.
    assert reason in _headings()


def test_every_reason_section_says_where_what_and_how_to_fix() -> None:
    sections = re.split(r"^#{2,3} ", PAGE.read_text(), flags=re.MULTILINE)
    for section in sections:
        name = section.split("\n", 1)[0].strip()
        if name in REASONS:
            for part in ("**Where:**", "**Means:**", "**Fix:**"):
                assert part in section, f"{name}: no {part}"
