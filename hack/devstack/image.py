"""The project's image, built here from the project's own Dockerfile without a Docker
engine, and the pause image the local node's containerd needs.

- **A stand-in base.** The Dockerfile's public base (python:3.11-slim-bookworm) cannot be
  pulled here. debootstrap makes a Debian bookworm root with Python 3.11 and pip from the
  mirror this machine's apt already uses, with the machine's apt access settings and CA
  certificates (so `apt-get` and `pip` inside the build reach their registries the way
  the host does). It is a local stand-in only, never published.
- **buildah** builds the Dockerfile on it (`--build-arg BASE=...`), with layers cached in
  its own storage under the shared cache directory, and writes a docker-archive that
  `ctr images import` loads into the node's containerd.
- Each result is cached by a hash of its inputs: an unchanged tree reuses the archive.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from devstack import paths
from devstack.procs import StackError, run

OPERATOR_IMAGE = "kafka-retention-operator:0.1.0"
PAUSE_IMAGE = "localhost/kafka-retention-pause:1"
SUITE = "bookworm"
# What the Dockerfile expects of python:3.11-slim-bookworm: python and pip on PATH, and
# certificates for TLS. Debian bookworm's python3 is 3.11.
BASE_PACKAGES = ("python3", "python3-pip", "python-is-python3", "ca-certificates")
# Bumped when the base recipe below changes, so the cached base is rebuilt.
BASE_RECIPE = "2"
# The files the Dockerfile copies; their contents name the image.
IMAGE_INPUTS = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md")
IMAGE_DIRS = ("operator", "spark-jobs", "group-reader", "image")


def _say(msg: str) -> None:
    print(f"[image] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ImageArchive:
    archive: Path
    name: str


@dataclass(frozen=True)
class NodeImages:
    pause: ImageArchive
    load: list[ImageArchive] = field(default_factory=list)


def images_dir() -> Path:
    return paths.cache_dir() / "images"


def _buildah_argv() -> list[str]:
    """buildah with storage of its own under the shared cache directory. overlay on the
    ext4 underneath works here; vfs would copy every layer."""
    storage = paths.cache_dir() / "buildah"
    return [
        "buildah",
        "--root",
        str(storage / "root"),
        "--runroot",
        str(storage / "run"),
        "--storage-driver",
        "overlay",
    ]


def _buildah(*args: str, what: str | None = None) -> str:
    return run([*_buildah_argv(), *args], what=what or f"buildah {args[0]}")


def _has_image(name: str) -> bool:
    out = _buildah("images", "--format", "{{.Name}}:{{.Tag}}", what="buildah images")
    return name in out.split()


# --- the stand-in base -------------------------------------------------------------------


def _host_mirror() -> str:
    """The Debian mirror this machine's apt uses for the suite, read at run time."""
    sources = Path("/etc/apt/sources.list.d")
    for deb822 in sorted(sources.glob("*.sources")):
        for stanza in deb822.read_text().split("\n\n"):
            fields = {
                k.strip(): v.strip()
                for k, _, v in (line.partition(":") for line in stanza.splitlines() if ":" in line)
                if not k.startswith("#")
            }
            if SUITE in fields.get("Suites", "").split() and fields.get("URIs"):
                return fields["URIs"].split()[0]
    for listing in [Path("/etc/apt/sources.list"), *sorted(sources.glob("*.list"))]:
        if listing.is_file():
            for line in listing.read_text().splitlines():
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and words[2] == SUITE:
                    return words[1]
    raise StackError(f"no Debian {SUITE} mirror in this machine's apt sources")


def _copy_host_access(rootfs: Path) -> None:
    """apt sources and Acquire settings, and CA certificates, as the host has them."""
    (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
    for src in Path("/etc/apt/sources.list.d").glob("*"):
        if src.suffix in {".sources", ".list"}:
            shutil.copy2(src, rootfs / "etc/apt/sources.list.d" / src.name)
    for conf in Path("/etc/apt/apt.conf.d").glob("*"):
        lines = [
            line.strip()
            for line in conf.read_text(errors="replace").splitlines()
            if line.strip() and not line.strip().startswith(("//", "#"))
        ]
        # Only how to reach the mirror (e.g. a snapshot's expired Valid-Until): the host's
        # other settings name hooks of programs the image does not have.
        if lines and all(line.startswith("Acquire::") for line in lines):
            shutil.copy2(conf, rootfs / "etc/apt/apt.conf.d" / conf.name)
    local_cas = Path("/usr/local/share/ca-certificates")
    if local_cas.is_dir():
        for crt in local_cas.glob("*.crt"):
            shutil.copy2(crt, rootfs / "usr/local/share/ca-certificates" / crt.name)
    shutil.copy2("/etc/ssl/certs/ca-certificates.crt", rootfs / "etc/ssl/certs")


def base_image() -> str:
    recipe = f"{BASE_RECIPE}:{SUITE}:{','.join(BASE_PACKAGES)}"
    name = f"localhost/kafka-retention-base:{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"
    if _has_image(name):
        return name
    for tool in ("debootstrap", "buildah"):
        if shutil.which(tool) is None:
            raise StackError(f"{tool} is not installed; `make setup` installs it")
    _say(f"making a stand-in base {name} from Debian packages (first run only, ~2 min)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kr-base-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                "--keyring=/usr/share/keyrings/debian-archive-keyring.gpg",
                SUITE,
                str(rootfs),
                _host_mirror(),
            ],
            what="debootstrap",
        )
        _copy_host_access(rootfs)
        # The host's own CAs into the trust lists (/etc/ssl/certs/*.pem), where Java's
        # trust store (ca-certificates-java, installed with a JRE) takes them from: a RUN
        # step's Maven reaches the Maven repository as the host's does.
        run(["chroot", str(rootfs), "update-ca-certificates"], what="update-ca-certificates")
        # pip installs system-wide in an image, as in the python image.
        for marker in (rootfs / "usr/lib").glob("python3*/EXTERNALLY-MANAGED"):
            marker.unlink()
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        tarball = Path(tmp) / "rootfs.tar"
        run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], what="tar rootfs")
        container = _buildah("from", "scratch").strip()
        try:
            _buildah("add", container, str(tarball), "/")
            _buildah(
                "config",
                "--env",
                "LANG=C.UTF-8",
                "--env",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--cmd",
                "python3",
                container,
            )
            _buildah("commit", "--quiet", container, name)
        finally:
            _buildah("rm", container)
    _say(f"base ready in {time.monotonic() - started:.0f}s")
    return name


# --- the operator image ------------------------------------------------------------------


def _inputs_hash(base: str) -> str:
    digest = hashlib.sha256(base.encode())
    files = [paths.REPO_ROOT / f for f in IMAGE_INPUTS]
    for d in IMAGE_DIRS:
        files += sorted(
            p
            for p in (paths.REPO_ROOT / d).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        )
    for f in files:
        digest.update(str(f.relative_to(paths.REPO_ROOT)).encode() + b"\0")
        digest.update(f.read_bytes() + b"\0")
        digest.update(str(os.stat(f).st_mode & 0o111).encode())
    return digest.hexdigest()[:16]


def operator_image() -> ImageArchive:
    """The Dockerfile built on the stand-in base, as a docker-archive."""
    base = base_image()
    archive = images_dir() / f"kafka-retention-operator-{_inputs_hash(base)}.tar"
    if archive.is_file():
        return ImageArchive(archive, OPERATOR_IMAGE)
    _say(f"building {OPERATOR_IMAGE} from the Dockerfile with buildah")
    started = time.monotonic()
    images_dir().mkdir(parents=True, exist_ok=True)
    local = f"localhost/{OPERATOR_IMAGE}"
    _buildah(
        "build",
        "--layers",
        # RUN steps reach Debian's mirror and PyPI as the host does.
        "--network",
        "host",
        "--isolation",
        "chroot",
        "--build-arg",
        f"BASE={base}",
        "--tag",
        local,
        "--file",
        str(paths.REPO_ROOT / "Dockerfile"),
        str(paths.REPO_ROOT),
        what="buildah build",
    )
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    _buildah("push", "--quiet", local, f"docker-archive:{partial}:{OPERATOR_IMAGE}")
    partial.rename(archive)
    for old in images_dir().glob("kafka-retention-operator-*.tar"):
        if old != archive:
            old.unlink()
    _say(f"{OPERATOR_IMAGE} built in {time.monotonic() - started:.0f}s: {archive}")
    return ImageArchive(archive, OPERATOR_IMAGE)


# --- the pause image ---------------------------------------------------------------------


def pause_image() -> ImageArchive:
    source = paths.HACK / "image" / "pause.c"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    archive = images_dir() / f"kafka-retention-pause-{digest}.tar"
    if archive.is_file():
        return ImageArchive(archive, PAUSE_IMAGE)
    images_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kr-pause-") as tmp:
        binary = Path(tmp) / "pause"
        run(["gcc", "-static", "-O2", "-o", str(binary), str(source)], what="gcc pause.c")
        container = _buildah("from", "scratch").strip()
        try:
            _buildah("copy", "--chmod", "0755", container, str(binary), "/pause")
            _buildah("config", "--entrypoint", '["/pause"]', container)
            partial = archive.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            _buildah("commit", "--quiet", container, PAUSE_IMAGE)
            _buildah("push", "--quiet", PAUSE_IMAGE, f"docker-archive:{partial}:{PAUSE_IMAGE}")
            partial.rename(archive)
        finally:
            _buildah("rm", container)
    return ImageArchive(archive, PAUSE_IMAGE)


def node_images() -> NodeImages:
    pause = pause_image()
    return NodeImages(pause, [pause, operator_image()])


def run_in_image(
    image: str, *argv: str, entrypoint: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a command in a built image (buildah run), as the image's user, through its
    entrypoint or not."""
    container = _buildah("from", "--quiet", image).strip()
    try:
        config = json.loads(_buildah("inspect", "--type", "container", container))
        oci = config["OCIv1"]["config"]
        cmd = [*_buildah_argv(), "run", "--isolation", "chroot", "--network", "host"]
        if oci.get("User"):
            cmd += ["--user", oci["User"]]
        command = [*(oci.get("Entrypoint") or []), *argv] if entrypoint else list(argv)
        return subprocess.run(
            [*cmd, container, "--", *command], capture_output=True, text=True, check=False
        )
    finally:
        _buildah("rm", container)
