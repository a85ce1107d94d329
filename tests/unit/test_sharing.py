"""The groups of test files that make test's parallel phase keeps on one worker."""

from __future__ import annotations

from tests.helpers.paths import REPO
from tests.helpers.sharing import GROUP_OF_FILE


def test_every_grouped_file_exists_so_a_rename_cannot_drop_it_from_its_group() -> None:
    """A renamed file would leave its group unnoticed and run beside the others."""
    missing = [path for path in GROUP_OF_FILE if not (REPO / path).is_file()]
    assert missing == []
