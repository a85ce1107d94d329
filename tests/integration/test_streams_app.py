"""The streams-group fixture: tests/helpers/streams_app.py runs a real Kafka Streams application
(tests/fixtures/streams/PassThrough.java, group.protocol=streams, KIP-1071), and Kafka's own
tools see the group it leaves behind: of type Streams, committed where it stopped."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient

from kafka_retention.core.facts import TopicPartition
from tests.helpers.kafka_cli import GROUPS_COMMAND, kafka_tool, table
from tests.helpers.offsets import high_watermarks
from tests.helpers.records import produce
from tests.helpers.streams_app import run_streams_app, streams_commit_by_kafka
from tests.helpers.topics import TopicFactory


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
    offset = streams_commit_by_kafka(bootstrap, app_id, TopicPartition(source, 0))
    assert 300 <= offset < 1000, f"{app_id} committed {offset} on {source}"
    # At least once: every record the commit covers went through to the output.
    assert high_watermarks(admin, sink, 1)[0] >= offset
