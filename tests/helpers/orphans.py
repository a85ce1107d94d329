"""Orphan partition directories planted in the brokers' log dirs, and how the tests tell
that a directory was left exactly as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

# The hex part of the names a KRaft broker gives stray and future replicas.
HEX = "00112233445566778899aabbccddeeff"


def digest(path: Path) -> str:
    """A hash of every name and file content below `path` (symlinks not followed)."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        h.update(str(f.relative_to(path)).encode())
        if f.is_file() and not f.is_symlink():
            h.update(f.read_bytes())
    return h.hexdigest()
