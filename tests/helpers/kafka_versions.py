"""Kafka clusters of other releases, for the compatibility suite (issue #50).

Each release in SUPPORTED runs as three KRaft combined nodes on 127.0.0.1 with the
stack's listeners (PLAINTEXT, SASL_PLAINTEXT with SCRAM-SHA-512 and PLAIN, SSL with a
client certificate), on ports of its own (devstack.kafka.COMPAT_PORT_OFFSETS), so it
runs beside the stack and the other releases. Its state lives in the dev directory's
kafka-<version>, formatted anew with a random cluster id at each start. Only the pinned
release (DEFAULT) has tiered storage.

    @pytest.fixture(scope="module", params=kafka_versions.SUPPORTED)
    def kafka_release(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
        with kafka_versions.running(request.param) as cluster:
            yield cluster
"""

from __future__ import annotations

import datetime as dt
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devstack import paths
from devstack.kafka import COMPAT_VERSIONS, KafkaCluster, compat_cluster, start_compat

SUPPORTED: tuple[str, ...] = COMPAT_VERSIONS  # oldest to newest
DEFAULT: str = paths.Pins.read().kafka  # the stack's own (hack/kafka/pom.xml)


def state_dir(version: str) -> Path:
    """Where the release's cluster keeps its nodes' configs, logs and data."""
    return cluster(version).root


def cluster(version: str) -> KafkaCluster:
    """The release's cluster, as it is (started or not)."""
    return compat_cluster(version, paths.dev_dir())


def start(version: str) -> KafkaCluster:
    """The release's cluster started anew, its jars collected on first use: all three
    nodes ready on return. A run of it left behind is stopped first; a port another
    process holds is an error naming that process."""
    return start_compat(version, paths.dev_dir())


def stop(version: str) -> None:
    """Stop the release's cluster (its data is not kept: the next start formats anew)."""
    cluster(version).stop(patience=10)


@contextmanager
def running(version: str) -> Iterator[KafkaCluster]:
    """The release's cluster, started anew for the block and stopped after it."""
    kafka = start(version)
    try:
        yield kafka
    finally:
        kafka.stop(patience=10)


def compat_table(outcomes: dict[tuple[str, str], str], supported: tuple[str, ...]) -> str:
    """The markdown page of scenario outcomes by release."""
    versions = [v for v in supported if any(k[1] == v for k in outcomes)]
    tests = sorted({k[0] for k in outcomes})
    mark = {"passed": "passes", "failed": "**fails**", "skipped": "skipped", "not run": "not run"}
    lines = [
        "# Kafka releases: scenarios by release",
        "",
        "Written by `make test-compat` (tests/e2e/test_kafka_versions.py) from its own "
        "outcomes; do not edit by hand.",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({os.cpu_count()} cores): each release as three KRaft nodes on this machine, "
        "at its defaults, the operator built from this tree.",
        "",
        "| scenario | " + " | ".join(versions) + " |",
        "| --- | " + " | ".join("---" for _ in versions) + " |",
    ]
    for test in tests:
        label = test.removeprefix("test_").replace("_", " ")
        cells = [mark.get(outcomes.get((test, v), "not run"), "not run") for v in versions]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
