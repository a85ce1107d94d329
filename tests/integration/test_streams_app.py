"""The streams-group fixture: tests/streams_app.py runs a real Kafka Streams application
(tests/fixtures/streams/PassThrough.java, group.protocol=streams, KIP-1071), and Kafka's own
tools see the group it leaves behind: of type Streams, committed where it stopped."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka.admin import AdminClient

from tests.conftest import TopicFactory
from tests.streams_app import kafka_libs, run_streams_app
from tests.support import high_watermarks, produce

GROUPS_COMMAND = "org.apache.kafka.tools.GroupsCommand"
STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def kafka_tool(main_class: str, bootstrap: str, *args: str) -> str:
    """A Kafka CLI's stdout. These exit 0 even when they print an error, so a table the
    caller expects and does not find fails its own assertion."""
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{kafka_libs()}/*",
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
    assert done.returncode == 0, done.stderr
    return done.stdout


def table(text: str) -> list[dict[str, str]]:
    """The rows of a CLI table whose header names are single words, keyed by them (an
    empty last column, such as a classic group's PROTOCOL, is left out)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert lines, f"no table in {text!r}"
    header, *rows = lines
    return [dict(zip(header, row, strict=False)) for row in rows]


@pytest.mark.stack
def test_streams_app_leaves_a_streams_group_committed_where_it_stopped(
    bootstrap: str, admin: AdminClient, make_topic: TopicFactory
) -> None:
    source, sink = make_topic(partitions=1), make_topic(partitions=1)
    produce(bootstrap, source, {0: 1000})
    app_id = f"streams-app-{uuid.uuid4().hex[:8]}"

    run_streams_app(bootstrap, app_id, source, sink, records=300)

    groups = {row["GROUP"]: row for row in table(kafka_tool(GROUPS_COMMAND, bootstrap, "--list"))}
    assert groups[app_id]["TYPE"] == "Streams"
    assert groups[app_id]["PROTOCOL"] == "streams"
    # `--describe --offsets` lists only the partitions of members' assignments, so nothing
    # for a group whose application has closed; a dry-run reset to the current offsets
    # (which the tool allows only on a group with no members) prints the commits instead.
    committed = table(
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
    assert [(row["GROUP"], row["TOPIC"], row["PARTITION"]) for row in committed] == [
        (app_id, source, "0")
    ]
    offset = int(committed[0]["NEW-OFFSET"])
    assert 300 <= offset < 1000, f"{app_id} committed {offset} on {source}"
    # At least once: every record the commit covers went through to the output.
    assert high_watermarks(admin, sink, 1)[0] >= offset
