"""`make venv`: the project's virtualenv, installed by uv from its cache.

pip took 45-53 s to install the same 84 packages into a fresh clone's venv with every
download cached: it unpacks each wheel again. uv links them from its cache (under a
second). pyspark is the exception: it ships only as a source distribution, and uv built
it again on every install (23 s: the package index here answers its revalidation as
modified). So its wheel is built once per version, with pip (from pip's own cache when
it has one), and kept in the shared cache, where uv finds it (--find-links).

Run with the system Python, `PYTHONPATH=hack python3 -m devstack.venv VENV`: the venv
may not exist yet, so this uses the standard library alone.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from devstack.paths import REPO_ROOT, cache_dir
from devstack.procs import run

UV = "uv~=0.13"


def _run(*argv: str | Path) -> str:
    """procs.run from the repository's root; its error carries the command's output."""
    return run([str(a) for a in argv], cwd=REPO_ROOT, what=f"make venv: {argv[2]} {argv[3]}")


def pinned(python: Path, name: str, wheels: Path) -> str:
    """The version of `name` that uv resolves for the project and its dev extra. With the
    wheels at hand: else uv downloads pyspark's 430 MB source again to read its metadata,
    and keeps each copy."""
    lock = _run(
        *(python, "-m", "uv", "pip", "compile", "--quiet", "--python", python),
        *("--find-links", wheels, "--extra", "dev", "--no-header", "--no-annotate"),
        "pyproject.toml",
    )
    found = re.search(rf"^{name}==(\S+)$", lock, re.MULTILINE)
    if not found:
        raise SystemExit(f"venv: uv's resolution names no {name}:\n{lock}")
    return found.group(1)


def wheel(python: Path, name: str, version: str, wheels: Path) -> None:
    """`name`'s wheel in `wheels`, built by pip unless it is there already."""
    if any(wheels.glob(f"{name}-{version}-*.whl")):
        return
    # Built beside, then moved in whole: a build cut short leaves no wheel behind.
    with tempfile.TemporaryDirectory(dir=wheels) as scratch:
        _run(
            python,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            f"{name}=={version}",
            "-w",
            scratch,
        )
        for built in Path(scratch).glob("*.whl"):
            os.replace(built, wheels / built.name)


def main(venv: str) -> None:
    python = Path(venv).absolute() / "bin" / "python"
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    _run(python, "-m", "pip", "install", "--quiet", UV)
    wheel(python, "pyspark", pinned(python, "pyspark", wheels), wheels)
    _run(
        *(python, "-m", "uv", "pip", "install", "--quiet", "--python", python),
        *("--find-links", wheels, "--editable", ".[dev]"),
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".venv")
