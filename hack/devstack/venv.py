"""`make venv`: the project's virtualenv, installed by uv from its cache.

pip took 45-53 s to install the same 84 packages into a fresh clone's venv with every
download cached: it unpacks each wheel again. uv links them from its cache (under a
second). pyspark is the exception: it ships only as a source distribution, and uv built
it again on every install (23 s: the package index here answers its revalidation as
modified). So its wheel is built once per version, with pip (from pip's own cache when
it has one), and kept in the shared cache, where uv finds it (--find-links).

The venv's Python is 3.12 where this machine has one (on PATH, or under pyenv), whatever
Python runs this: coverage.py measures 3.12 through sys.monitoring, which stops calling
back once a line has been seen, where 3.11 has only its tracer, called on every line
(make test measures every Python process it starts). The unit tests of the purge service
and the fairness simulation: 18 s bare, 43 s measured on 3.11, 21 s measured on 3.12.
KAFKA_RETENTION_PYTHON names another interpreter; with no 3.12 found, the Python running
this makes the venv, and coverage falls back to its tracer. The image keeps its own
Python (the Dockerfile's base), which the in-cluster tests run.

Run with the system Python, `PYTHONPATH=hack python3 -m devstack.venv VENV`: the venv
may not exist yet, so this uses the standard library alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
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


PREFERRED = "3.12"


def version(python: str | Path) -> str | None:
    """`python`'s major.minor, or None when it does not run (a pyenv shim of a version
    pyenv has not selected exits non-zero)."""
    try:
        done = subprocess.run(
            [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def interpreter() -> str:
    """The Python to make the venv from (see the module's docstring)."""
    named = os.environ.get("KAFKA_RETENTION_PYTHON")
    if named:
        return named
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which(f"python{PREFERRED}")]
    candidates += sorted(map(str, pyenv_root.glob(f"versions/{PREFERRED}.*/bin/python{PREFERRED}")))
    for candidate in candidates:
        if candidate and version(candidate) == PREFERRED:
            return candidate
    return sys.executable


def create(venv: Path, python: str) -> None:
    """The venv at `venv`, made from `python`; one made from another version goes first."""
    made = venv / "bin" / "python"
    wanted = version(python)
    if made.exists() and version(made) == wanted:
        return
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", str(venv)], cwd=REPO_ROOT, what=f"make venv: Python {wanted}")


def main(venv: str) -> None:
    create(Path(venv).absolute(), interpreter())
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
