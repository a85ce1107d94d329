"""The shell commands README.md marks for a test to run: each ```sh block after an HTML
comment `<!-- MARKER ... -->` (other comments may stand between), one command a line,
backslash continuations joined, comment lines left out."""

from __future__ import annotations

import re
import shlex

from tests.helpers.paths import REPO


def marked_commands(marker: str) -> list[list[str]]:
    block = re.compile(
        rf"<!-- {re.escape(marker)}[^>]*-->\s*(?:<!--[^>]*-->\s*)*```sh\n(.*?)```", re.DOTALL
    )
    commands = []
    for found in block.findall((REPO / "README.md").read_text()):
        for line in found.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(shlex.split(line))
    return commands
