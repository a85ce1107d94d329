"""A real Kafka Streams application in a KIP-1071 streams group (group.protocol=streams),
for tests that need one: tests/fixtures/streams/PassThrough.java, compiled against the
stack's Kafka jars (hack/kafka/pom.xml collects kafka-streams with them) and run with java."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from devstack import paths
from kafka_retention.core.facts import TopicPartition
from tests.helpers.kafka_cli import STREAMS_GROUP_COMMAND, kafka_tool, table
from tests.helpers.paths import FIXTURES

SOURCE = FIXTURES / "streams" / "PassThrough.java"
MAIN_CLASS = "PassThrough"
# On the classpath beside the classes: warnings and the application's state changes go to
# stderr (whose tail a failure reports); stdout carries only the "processed <n>" line.
LOG4J2 = """\
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = err
logger.app.name = org.apache.kafka.streams.KafkaStreams
logger.app.level = info
"""
STDERR_TAIL_LINES = 40


class StreamsAppError(Exception):
    """The application could not be built, failed, or did not finish in time."""


def kafka_libs() -> Path:
    """The Kafka jars named by KAFKA_RETENTION_KAFKA_LIBS (.dev/env exports it), else the
    ones `make setup` collects for this checkout's pom; either must hold kafka-streams."""
    libs = Path(os.environ.get("KAFKA_RETENTION_KAFKA_LIBS") or paths.kafka_libs())
    if not any(libs.glob("kafka-streams-*.jar")):
        raise StreamsAppError(
            f"no kafka-streams jar in {libs}: run `make setup` (hack/kafka/pom.xml collects "
            "it) and point KAFKA_RETENTION_KAFKA_LIBS at the new libs directory"
        )
    return libs


def build_streams_app(kafka_libs: Path, out_dir: Path) -> Path:
    """PassThrough compiled against `kafka_libs` into a directory of `out_dir` named after
    the source's (and the jars') hash, which a later call finds and reuses; returns it.
    Each build happens in a scratch directory renamed into place, so a concurrent or
    interrupted build is never taken for a finished one."""
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), LOG4J2.encode(), str(kafka_libs.resolve()).encode()):
        digest.update(part)
    classes = out_dir / f"passthrough-{digest.hexdigest()[:12]}"
    if (classes / f"{MAIN_CLASS}.class").is_file():
        return classes
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{classes.name}.", suffix=".partial", dir=out_dir))
    try:
        done = subprocess.run(
            ["javac", "-cp", f"{kafka_libs}/*", "-d", str(scratch), str(SOURCE)],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            raise StreamsAppError(f"javac {SOURCE.name} failed:\n{_tail(done.stderr)}")
        (scratch / "log4j2.properties").write_text(LOG4J2)
        try:
            scratch.rename(classes)
        except OSError:  # another build finished first: use that one
            if not (classes / f"{MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return classes


def run_streams_app(
    bootstrap: str, app_id: str, topic: str, output: str, records: int, timeout: float = 120
) -> None:
    """Run PassThrough as streams group `app_id`: it copies `topic` to `output`, stops once
    it has processed at least `records` records (on a one-partition topic usually exactly
    that many; read the group's committed offset from Kafka for the real figure) and
    returns when they are committed and the application is closed. Raises
    StreamsAppError with the tail of its stderr when it fails or takes over `timeout` s."""
    libs = kafka_libs()
    classes = build_streams_app(libs, paths.cache_dir() / "streams-app")
    argv = [
        "java",
        "-Xmx256m",
        "-cp",
        f"{classes}:{libs}/*",
        MAIN_CLASS,
        bootstrap,
        app_id,
        topic,
        output,
        str(records),
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise StreamsAppError(
            f"streams app {app_id} not done after {timeout:.0f}s:\n{_tail(err.stderr)}"
        ) from err
    if done.returncode != 0:
        raise StreamsAppError(
            f"streams app {app_id} exited {done.returncode}:\n{_tail(done.stderr)}"
        )
    if not any(line.startswith("processed ") for line in done.stdout.splitlines()):
        raise StreamsAppError(
            f"streams app {app_id} exited 0 without saying what it processed:\n"
            f"{_tail(done.stdout)}\n{_tail(done.stderr)}"
        )


def _tail(text: str | bytes | None) -> str:
    """The last lines of a process's output (TimeoutExpired carries bytes, even in text
    mode)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-STDERR_TAIL_LINES:])


def streams_commit_by_kafka(bootstrap: str, app_id: str, tp: TopicPartition) -> int:
    """The streams group's commit on `tp` as StreamsGroupCommand prints it (a dry-run
    reset to the current offsets: its describe lists nothing once the app has closed)."""
    rows = table(
        kafka_tool(
            STREAMS_GROUP_COMMAND,
            bootstrap,
            "--reset-offsets",
            "--group",
            app_id,
            "--all-input-topics",
            "--to-current",
            "--dry-run",
        )
    )
    # `--describe --offsets` lists only the partitions of members' assignments, so nothing
    # for a group whose application has closed; the dry-run reset (which the tool allows
    # only on a group with no members) prints the commits instead.
    (row,) = [r for r in rows if (r["TOPIC"], r["PARTITION"]) == (tp.topic, str(tp.partition))]
    return int(row["NEW-OFFSET"])
