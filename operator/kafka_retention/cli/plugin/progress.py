"""A one-line progress report while the plugin waits, on a terminal only: piped or
redirected, stderr stays quiet so that scripts see only what they asked for."""

from __future__ import annotations

import shutil
from typing import TextIO


class Progress:
    """Rewrites one line of `stream` in place; nothing at all unless it is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.width = 0

    def show(self, line: str) -> None:
        if not self.live:
            return
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        line = line[:columns]
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def clear(self) -> None:
        """Remove the line, so what follows starts at the left margin."""
        if self.live and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
