"""Where the stack keeps its state, its downloads and its builds, and which versions it pins.

Versions live in the build files themselves (hack/kafka/pom.xml, hack/go/*/go.mod) so there
is one place to bump them; this module only reads them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HACK = REPO_ROOT / "hack"
POM = HACK / "kafka" / "pom.xml"
# Any other Kafka release's jars, for the compatibility clusters (the version is a property).
VERSIONS_POM = HACK / "kafka" / "versions-pom.xml"
# Spark's Kafka source and its jars beyond pyspark's (the image collects them the same way).
SPARK_KAFKA_POM = REPO_ROOT / "spark-jobs" / "pom.xml"
# Builds the jar that lets that (Spark 4.0) connector log on this Spark (built beside it).
LOG_KEYS_BRIDGE = REPO_ROOT / "spark-jobs" / "log_keys_bridge.py"
# The group reader: Kafka's Java Admin for share- and streams-group positions (the image
# builds it the same way).
GROUP_READER = REPO_ROOT / "group-reader"
KUBE_MODULE = HACK / "go" / "kube"
ETCD_MODULE = HACK / "go" / "etcd"
NODE_MODULE = HACK / "go" / "node"


def dev_dir() -> Path:
    """Runtime state of the stack (data dirs, logs, pid files, kubeconfig): per checkout."""
    return Path(os.environ.get("KAFKA_RETENTION_DEV_DIR", REPO_ROOT / ".dev"))


def cache_dir() -> Path:
    """Downloads and builds, shared by every checkout on the machine so a second run is quick."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-retention"
    return Path(os.environ.get("KAFKA_RETENTION_CACHE", default))


def _fingerprint(*files: Path) -> str:
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.read_bytes())
    return digest.hexdigest()[:12]


def _required_version(go_mod: Path, module: str) -> str:
    match = re.search(rf"^require {re.escape(module)} (v\S+)$", go_mod.read_text(), re.M)
    if not match:
        raise RuntimeError(f"{go_mod} does not pin {module} on a 'require' line")
    return match.group(1)


@dataclass(frozen=True)
class Pins:
    kafka: str
    kubernetes: str
    etcd: str

    @classmethod
    def read(cls) -> Pins:
        kafka = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
        if not kafka:
            raise RuntimeError(f"{POM} has no <kafka.version>")
        return cls(
            kafka=kafka.group(1),
            kubernetes=_required_version(KUBE_MODULE / "go.mod", "k8s.io/kubernetes"),
            etcd=_required_version(ETCD_MODULE / "go.mod", "go.etcd.io/etcd/server/v3"),
        )


def kafka_libs(version: str | None = None) -> Path:
    """The broker and CLI jars: the pinned release's (pom.xml, with tiered storage's test
    jars) when `version` is None or the pin, else `version`'s (versions-pom.xml)."""
    pins = Pins.read()
    if version is None or version == pins.kafka:
        return cache_dir() / f"kafka-{pins.kafka}-{_fingerprint(POM)}" / "libs"
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ValueError(f"not a Kafka release version: {version!r}")
    return cache_dir() / f"kafka-{version}-{_fingerprint(VERSIONS_POM)}" / "libs"


def log4j1(version: str | None) -> bool:
    """Whether a Kafka release logs through Log4j 1.2 (reload4j: 3.x), not Log4j2 (4.x)."""
    return version is not None and int(version.split(".")[0]) < 4


def spark_kafka_jars() -> Path:
    return cache_dir() / f"spark-kafka-{_fingerprint(SPARK_KAFKA_POM, LOG_KEYS_BRIDGE)}" / "jars"


def group_reader_jars() -> Path:
    fp = _fingerprint(*(GROUP_READER / f for f in ("pom.xml", "build.py", "GroupPositions.java")))
    return cache_dir() / f"group-reader-{fp}" / "jars"


def kube_bin() -> Path:
    pins = Pins.read()
    fp = _fingerprint(KUBE_MODULE / "go.mod", KUBE_MODULE / "go.sum")
    return cache_dir() / f"kubernetes-{pins.kubernetes}-{fp}"


def etcd_bin() -> Path:
    pins = Pins.read()
    fp = _fingerprint(ETCD_MODULE / "go.mod", ETCD_MODULE / "go.sum")
    return cache_dir() / f"etcd-{pins.etcd}-{fp}"


def node_bin() -> Path:
    """kubelet, kube-scheduler and kube-controller-manager, from their own wrapper module so
    that a change there does not rebuild kube-apiserver (and the other way round)."""
    pins = Pins.read()
    fp = _fingerprint(NODE_MODULE / "go.mod", NODE_MODULE / "go.sum")
    return cache_dir() / f"kubernetes-node-{pins.kubernetes}-{fp}"


# What records a local Spark session's classes (build.spark_class_archive).
SPARK_TRAINING = HACK / "devstack" / "spark_training.py"
# Spark's Python daemon for the tests' local sessions (build.spark_env): a directory of
# its own, since it goes on every test process's PYTHONPATH.
SPARK_DAEMON_DIR = HACK / "spark-daemon"
SPARK_DAEMON_MODULE = "spark_coverage_daemon"


def bundled_spark_home() -> Path:
    """pyspark's own Spark (its bin/ and jars/) in this checkout's venv."""
    import pyspark  # only the Spark paths need it; the rest of devstack runs without

    return Path(pyspark.__file__).resolve().parent


def spark_home() -> Path:
    """The local Spark sessions' SPARK_HOME in make test: pyspark's Spark linked into the
    shared cache, one per pyspark version and jar set. The class archive below holds
    each jar's path, and every checkout has a venv of its own: from the venv, a clean
    clone would record the archive again (28 s on the critical path of its setup)."""
    import pyspark

    jars = sorted((bundled_spark_home() / "jars").glob("*.jar"))
    digest = hashlib.sha256("".join(f"{j.name}\0{j.stat().st_size}\n" for j in jars).encode())
    return cache_dir() / f"spark-home-{pyspark.__version__}-{digest.hexdigest()[:12]}"


def spark_class_archive(home: Path) -> Path:
    """The class-data-sharing archive of a local Spark session from `home`. It is valid
    for one JVM and one class path only, down to each jar's path, size and modification
    time (the JVM checks them): all of it is in the name."""
    java = shutil.which("java") or "java"
    jdk = Path(java).resolve().parents[1]
    release = jdk / "release"
    digest = hashlib.sha256(release.read_bytes() if release.is_file() else str(jdk).encode())
    digest.update(SPARK_TRAINING.read_bytes())  # the home's name holds pyspark's version
    for jar in sorted((home / "jars").glob("*.jar")):
        stat = jar.stat()
        digest.update(f"{jar}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return cache_dir() / f"spark-cds-{digest.hexdigest()[:12]}" / "spark.jsa"
