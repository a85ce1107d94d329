"""`make setup`'s downloads and builds: Kafka jars from Maven and Go binaries from modules.

Each artefact goes to a cache directory named after its pinned version and a fingerprint
of its build file, so a second run finds it and returns at once, and bumping a pin
builds anew beside the old one.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from devstack import paths
from devstack.kafka import JVM_OPTIONS
from devstack.procs import StackError, run


def _say(msg: str) -> None:
    print(f"[setup] {msg}", file=sys.stderr, flush=True)


def _atomic_dir(final: Path) -> Path:
    """A scratch directory beside `final`; renamed into place only when the build succeeded,
    so an interrupted build is never mistaken for a finished one. Named after this process:
    two test workers on a fresh machine may build the same artefact at once."""
    scratch = final.with_name(f"{final.name}.partial-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return scratch


def _settle(scratch: Path, final: Path) -> None:
    """Move a finished build into place, unless another process got there first: then
    its copy stays and ours goes (both came from the same pins)."""
    try:
        scratch.rename(final)
    except OSError:
        if not final.exists():
            raise
        shutil.rmtree(scratch, ignore_errors=True)


def kafka_jars(version: str | None = None) -> Path:
    """The pinned Kafka's jars (hack/kafka/pom.xml), or another release's
    (versions-pom.xml, with `version` as its kafka.version): each in a cache directory of
    its own."""
    libs = paths.kafka_libs(version)
    if libs.is_dir() and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    pinned = paths.Pins.read().kafka
    if version is None or version == pinned:
        _say(f"collecting Kafka {pinned} jars with Maven (first run only)")
        return _maven_jars(paths.POM, libs)
    _say(f"collecting Kafka {version} jars with Maven (first run of this version only)")
    properties = {"kafka.version": version}
    if paths.log4j1(version):
        properties["kafka.log4j1"] = "true"  # its own reload4j, no Log4j2 beside it
    return _maven_jars(paths.VERSIONS_POM, libs, properties=properties)


def spark_kafka_jars() -> Path:
    jars = paths.spark_kafka_jars()
    if jars.is_dir() and any(jars.glob("spark-sql-kafka-*.jar")):
        return jars
    _say("collecting Spark's Kafka source jars with Maven (first run only)")
    return _maven_jars(paths.SPARK_KAFKA_POM, jars, then=_log_keys_bridge)


def group_reader_jars() -> Path:
    jars = paths.group_reader_jars()
    if jars.is_dir() and any(jars.glob("kafka-retention-group-reader.jar")):
        return jars
    _say("collecting and building the group reader's jars (first run only)")
    return _maven_jars(paths.GROUP_READER / "pom.xml", jars, then=_group_reader)


# The JVM options of the Spark sessions `make test` starts (hack/testrun.py), the same
# C1-alone, serial-collector pair as the brokers' for the same reason; the archive below
# is recorded with them.
SPARK_JVM_OPTIONS = JVM_OPTIONS


def spark_home() -> Path:
    """paths.spark_home(), made once: every file of pyspark's Spark hard-linked (copied
    where links cannot cross file systems) with its modification time, which the class
    archive holds. Linked files stay whole when the venv they came from is removed."""
    home = paths.spark_home()
    if home.is_dir():
        home.touch()  # in use: kept by the pruning below
        return home
    scratch = _atomic_dir(home)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(paths.bundled_spark_home(), scratch, dirs_exist_ok=True, copy_function=link)
    _settle(scratch, home)
    _prune(home, "spark-home-*")
    return home


def _prune(kept: Path, pattern: str) -> None:
    """Others of `kept`'s kind unused for two days go (a Spark home or archive: 155-460 MB)."""
    for other in kept.parent.glob(pattern):
        if other != kept and time.time() - other.stat().st_mtime > 2 * 86400:
            shutil.rmtree(other, ignore_errors=True)


def spark_class_archive(home: Path) -> Path:
    """A class-data-sharing archive of a local Spark session from `home` (JDK 17's
    dynamic AppCDS): a session started with -XX:SharedArchiveFile=<it> maps Spark's
    classes instead of loading and verifying them, which halves its start-up CPU (about
    10 CPU-s -> 5 on two cores). Recorded once per JVM and Spark home by
    hack/devstack/spark_training.py."""
    archive = paths.spark_class_archive(home)
    if archive.is_file():
        archive.parent.touch()  # in use: kept by the pruning below
        return archive
    _say("recording a local Spark session's classes for sharing (first run only, ~20 s)")
    started = time.monotonic()
    scratch = _atomic_dir(archive.parent) / archive.name
    options = [*SPARK_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={scratch}", "-Xlog:disable"]
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_SUBMIT_OPTS": " ".join(options)}
    run([sys.executable, str(paths.SPARK_TRAINING)], env=env, what="Spark class archive")
    if not scratch.is_file():
        raise StackError(f"the Spark session exited without writing {scratch}")
    _settle(scratch.parent, archive.parent)
    _say(f"Spark class archive ready in {time.monotonic() - started:.0f}s: {archive}")
    _prune(archive.parent, "spark-cds-*")
    return archive


def spark_env() -> dict[str, str]:
    """SPARK_HOME, SPARK_SUBMIT_OPTS and PYTHONPATH for the local sessions of a test run:
    C1 alone and the serial collector (they live minutes: C2 and G1 threads cost the 2
    cores more than they give back), the class archive of that home, and Spark's Python
    daemon swapped for hack/spark-daemon's, whose reused workers save their line coverage
    when their session stops. The JVM's warnings go to stderr, never into the stdout a
    `kafka-retention plan` prints its JSON lines on."""
    home = spark_home()
    archive = spark_class_archive(home)
    options = [
        *SPARK_JVM_OPTIONS,
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:disable",
        "-Xlog:all=warning:stderr",
    ]
    daemon, python_path = spark_daemon(os.environ.get("PYTHONPATH", ""))
    options.append(daemon)
    return {
        "SPARK_HOME": str(home),
        "SPARK_SUBMIT_OPTS": " ".join(options),
        "PYTHONPATH": python_path,
    }


def spark_daemon(python_path: str) -> tuple[str, str]:
    """The JVM option that makes a local session run hack/spark-daemon's Python daemon
    (SparkConf reads spark.* system properties, so no product code knows of it), and
    `python_path` with that daemon's directory in front."""
    option = f"-Dspark.python.daemon.module={paths.SPARK_DAEMON_MODULE}"
    return option, os.pathsep.join(p for p in (str(paths.SPARK_DAEMON_DIR), python_path) if p)


def _group_reader(jars: Path) -> None:
    run(
        [sys.executable, str(paths.GROUP_READER / "build.py"), str(jars)],
        what="group reader",
    )


def _log_keys_bridge(jars: Path) -> None:
    run([sys.executable, str(paths.LOG_KEYS_BRIDGE), str(jars)], what="log keys bridge")


def _maven_jars(
    pom: Path,
    out: Path,
    then: Callable[[Path], None] | None = None,
    properties: dict[str, str] | None = None,
) -> Path:
    """`pom`'s runtime dependencies copied into `out` (whose parent is made whole or not
    at all), and `then` run on them before it is; `properties` set the pom's (-D)."""
    started = time.monotonic()
    scratch = _atomic_dir(out.parent) / out.name
    run(
        [
            "mvn",
            "-q",
            "-B",
            "-f",
            str(pom),
            *(f"-D{k}={v}" for k, v in (properties or {}).items()),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={scratch}",
        ],
        what="mvn",
    )
    if then is not None:
        then(scratch)
    _settle(scratch.parent, out.parent)
    _say(f"jars ready in {time.monotonic() - started:.0f}s: {out}")
    return out


def _go_env() -> dict[str, str]:
    # GOTOOLCHAIN=local: build with the installed Go, never fetch another toolchain.
    return {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod -trimpath"}


def go_binaries() -> tuple[Path, Path]:
    return _etcd(), _kube()


def _etcd() -> Path:
    out = paths.etcd_bin()
    if (out / "etcd").is_file():
        return out
    _say(f"building etcd {paths.Pins.read().etcd} from Go modules (first run only, ~1 min)")
    started = time.monotonic()
    scratch = _atomic_dir(out)
    run(
        ["go", "build", "-o", str(scratch / "etcd"), "go.etcd.io/etcd/server/v3"],
        cwd=paths.ETCD_MODULE,
        env=_go_env(),
        what="go build etcd",
    )
    _settle(scratch, out)
    _say(f"etcd built in {time.monotonic() - started:.0f}s")
    return out


KUBE_CMDS = ("kube-apiserver", "kubectl")
NODE_CMDS = ("kubelet", "kube-scheduler", "kube-controller-manager")


def _kube() -> Path:
    return _kubernetes(paths.kube_bin(), paths.KUBE_MODULE, KUBE_CMDS, "~3 min")


def node_binaries() -> Path:
    return _kubernetes(paths.node_bin(), paths.NODE_MODULE, NODE_CMDS, "~7 min")


def _go_build(
    module: Path, ldflags: str, output: str, packages: list[str], cgo: bool = True
) -> None:
    """`go build` of `packages` in `module` (its go.mod pins them), version stamped."""
    env = _go_env() if cgo else {**_go_env(), "CGO_ENABLED": "0"}
    run(
        ["go", "build", "-ldflags", ldflags, "-o", output, *packages],
        cwd=module,
        env=env,
        what=f"go build {' '.join(p.rsplit('/', 1)[-1] for p in packages)}",
    )


def _kubernetes(out: Path, module: Path, cmds: tuple[str, ...], takes: str) -> Path:
    if all((out / cmd).is_file() for cmd in cmds):
        return out
    version = paths.Pins.read().kubernetes
    major, minor = version.lstrip("v").split(".")[:2]
    names = ", ".join(cmds)
    _say(f"building {names} {version} from Go modules (first run only, {takes} on 2 cores)")
    started = time.monotonic()
    scratch = _atomic_dir(out)
    # Without these the binaries report v0.0.0 and clients warn about version skew.
    ldflags = " ".join(
        [
            f"-X k8s.io/component-base/version.gitVersion={version}",
            f"-X k8s.io/component-base/version.gitMajor={major}",
            f"-X k8s.io/component-base/version.gitMinor={minor}",
            "-X k8s.io/component-base/version.gitTreeState=clean",
        ]
    )
    _go_build(module, ldflags, str(scratch) + "/", [f"k8s.io/kubernetes/cmd/{c}" for c in cmds])
    _settle(scratch, out)
    _say(f"{names} built in {time.monotonic() - started:.0f}s")
    return out


HELM_MODULE = paths.HACK / "go" / "helm"


def helm_bin() -> Path:
    """helm at the version hack/go/helm pins, in a cache directory named after it and a
    fingerprint of the module's go.mod and go.sum, like the other Go builds."""
    go_mod, go_sum = HELM_MODULE / "go.mod", HELM_MODULE / "go.sum"
    match = re.search(r"^require helm\.sh/helm/v\d+ (v\S+)$", go_mod.read_text(), re.M)
    if not match:
        raise StackError(f"{go_mod} does not pin helm.sh/helm on a 'require' line")
    fp = hashlib.sha256(go_mod.read_bytes() + go_sum.read_bytes()).hexdigest()[:12]
    return paths.cache_dir() / f"helm-{match.group(1)}-{fp}" / "helm"


def helm() -> Path:
    """The helm binary (`make lint` lints and renders charts/ with it), built from the Go
    module proxy on first use: measured 460 s of CPU cold (about 4 min on 2 idle cores)."""
    out = helm_bin()
    if out.is_file():
        return out
    version = out.parent.name.split("-")[1]
    _say(f"building helm {version} from Go modules (first run only, ~4 min on 2 cores)")
    started = time.monotonic()
    scratch = _atomic_dir(out.parent)
    # Without the version helm reports its minor line only (v4.3) to charts and users.
    ldflags = " ".join(
        [
            f"-X helm.sh/helm/v4/internal/version.version={version}",
            "-X helm.sh/helm/v4/internal/version.metadata=",
            "-X helm.sh/helm/v4/internal/version.gitTreeState=clean",
        ]
    )
    _go_build(HELM_MODULE, ldflags, str(scratch / "helm"), ["helm.sh/helm/v4/cmd/helm"], cgo=False)
    _settle(scratch, out.parent)
    _say(f"helm built in {time.monotonic() - started:.0f}s")
    return out


# The node's runtime and the image tooling come from Debian's packages: no Docker engine.
# Each command that must be on PATH, and the package that brings it.
HOST_PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "buildah": "buildah",
    "umoci": "umoci",
    "debootstrap": "debootstrap",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "iptables-save": "iptables",
    # The broker-volume scripts are also run under busybox's sh and applets, as slim
    # broker images carry them (tests/unit/test_broker_volumes.py skips without it).
    "busybox": "busybox",
}


def host_packages() -> None:
    missing = sorted(
        {
            pkg
            for tool, pkg in HOST_PACKAGES.items()
            if not (Path(tool).exists() if tool.startswith("/") else shutil.which(tool))
        }
    )
    if not missing:
        return
    if os.geteuid() != 0:
        raise StackError(f"the local node needs these Debian packages: {' '.join(missing)}")
    _say(f"installing {' '.join(missing)} from Debian (first run only, ~30 s)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run(["apt-get", "update", "-q"], env=env, what="apt-get update")
    run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        env=env,
        what="apt-get install",
    )


def setup(images: bool = True) -> None:
    """Everything the stack runs on, built or fetched once and cached; `images`: the
    node's images too (make test times them as a phase of their own)."""
    for tool in ("java", "mvn", "go", "openssl"):
        if shutil.which(tool) is None:
            raise StackError(
                f"{tool} is not on PATH; the local stack needs it (see docs/development.md)"
            )
    host_packages()
    kafka_jars()
    spark_kafka_jars()
    group_reader_jars()
    go_binaries()
    node_binaries()
    helm()
    if images:
        from devstack import image  # the image module builds with what is installed above

        image.node_images()
