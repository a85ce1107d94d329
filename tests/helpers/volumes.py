"""The broker-volume adapters as unit tests run them: on this machine, and through an
`exec` stand-in with dash and GNU coreutils or with busybox alone (what a minimal broker
image has), so a script that leans on a GNU option fails here first."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from kafka_retention.adapters.broker_volumes import ExecVolumes, LocalVolumes

Volumes = LocalVolumes | ExecVolumes
KINDS = ("local", "exec-gnu", "exec-busybox")


def run_in(env: dict[str, str] | None) -> Callable[[list[str]], str]:
    """A command runner on this machine (`env`: the environment, None: this one)."""

    def run(argv: list[str]) -> str:
        return subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout

    return run


def _busybox_env(tmp_path: Path, applets: Sequence[str]) -> dict[str, str]:
    """A PATH holding only these busybox applets (skips the test without busybox)."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox is not installed")
    bin_dir = tmp_path / "busybox-bin"
    bin_dir.mkdir()
    for applet in applets:
        (bin_dir / applet).symlink_to(busybox)
    return {"PATH": str(bin_dir)}


def volumes_of(kind: str, tmp_path: Path, applets: Sequence[str]) -> Volumes:
    """The adapter for one of KINDS; `applets`: what busybox may offer the scripts."""
    if kind == "local":
        return LocalVolumes()
    return ExecVolumes(run_in(_busybox_env(tmp_path, applets) if kind == "exec-busybox" else None))
