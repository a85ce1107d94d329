"""Where the repository's files are, for tests that read or apply them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
MANIFESTS = REPO / "manifests"
