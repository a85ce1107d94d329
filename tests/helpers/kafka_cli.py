"""Kafka's own command-line tools (kafka-groups.sh, kafka-share-groups.sh, ...) run on
this checkout's jars: the oracles tests check the operator's readings against."""

from __future__ import annotations

import os
import subprocess

from devstack import paths

GROUPS_COMMAND = "org.apache.kafka.tools.GroupsCommand"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def kafka_tool(main_class: str, bootstrap: str, *args: str) -> str:
    """A Kafka CLI's stdout, failing on a non-zero exit. Most exit 0 even when they print
    an error, so a table the caller expects and does not find fails its own assertion."""
    # .dev/env exports the libs; `make test` runs without it, on this checkout's.
    libs = os.environ.get("KAFKA_RETENTION_KAFKA_LIBS") or str(paths.kafka_libs())
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{libs}/*",
            main_class,
            "--bootstrap-server",
            bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, f"{main_class} {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout


def table(text: str) -> list[dict[str, str]]:
    """The rows of a CLI table whose header names are single words, keyed by them (an
    empty last column, such as a classic group's PROTOCOL, is left out)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert lines, f"no table in {text!r}"
    header, *rows = lines
    return [dict(zip(header, row, strict=False)) for row in rows]
