"""A RecordPurge on a tiered topic (KIP-405) on the local stack, whose brokers keep remote
segments in a directory (LocalTieredStorage) the test reads on its own: the cut succeeds
at once, and RemoteDeletionPending follows the brokers' deletion of the remote segments
below it until they are gone."""

from __future__ import annotations

import re
import time

import pytest

from devstack.stack import Stack
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge_states import Phase
from tests.helpers.conditions import condition, with_reason
from tests.helpers.kafka import Kafka
from tests.helpers.kube import events, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.purges import apply_purge, before, purge_finished
from tests.helpers.tiered import remote_segments

pytestmark = pytest.mark.stack

# Segments of 1 MiB (the least Kafka takes), off the brokers' disks a second after they
# are copied: 400 records of 10 kB give three rolled segments, which the remote log
# manager (every 3 s on the stack) copies within seconds.
TIERED = {
    "remote.storage.enable": "true",
    "segment.bytes": "1048576",
    "local.retention.ms": "1000",
    "retention.ms": "-1",
}
RECORDS = 400


def remote_bases(stack: Stack, topic: str) -> list[int]:
    """The base offsets of partition 0's segment files in the remote store, as the test
    reads the directory itself."""
    return [f.base_offset for f in remote_segments(stack.kafka, topic, 0)]


def test_a_purge_of_a_tiered_topic_succeeds_and_follows_the_remote_deletion_below_it(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: RECORDS}, TIERED, value=b"x" * 10_000)
    tp = TopicPartition(topic, 0)
    admin = KafkaAdmin(kafka.bootstrap)
    deadline = time.monotonic() + 45
    while True:
        bases = remote_bases(stack, topic)
        latest = admin.tier_offsets([tp])[tp].latest_tiered
        # Three segments in the remote store, each copied whole (the latest tiered offset
        # is past the last one's base).
        if len(bases) >= 3 and latest is not None and latest > bases[-1]:
            break
        assert time.monotonic() < deadline, f"not tiered: files at {bases}, latest {latest}"
        time.sleep(0.5)

    apply_purge(stack, e2e_ns, "tiered", topics=before(topic, highWatermark=True))
    obj = purge_finished(stack, e2e_ns, "tiered")
    assert obj["status"]["phase"] == Phase.SUCCEEDED, obj["status"]
    assert log_starts(kafka.admin, topic, 1) == [RECORDS]
    first, tiered = condition(obj, "RemoteDeletionPending"), obj["status"]["tiered"]
    # The first Succeeded status saw the segments below the cut: still waiting, or (the
    # brokers may be quicker than the operator's first read) some or all deleted since.
    seen = tiered["remoteSegmentsPending"] + tiered["remoteSegmentsDeleted"]
    assert seen >= len(bases), tiered
    if first["status"] == "True":
        assert first["reason"] == "RemoteSegmentsPending"
        assert tiered["remoteSegmentsPending"] > 0
    else:
        assert first["reason"] == "RemoteSegmentsDeleted", first
    (offsets,) = tiered["offsets"]
    assert offsets["cut"] == offsets["logStart"] == offsets["highWatermark"] == RECORDS
    assert offsets["latestTiered"] >= bases[-1]
    assert tiered["partitions"] == 1

    done = wait_for(
        stack,
        "recordpurge",
        e2e_ns,
        "tiered",
        with_reason("RemoteSegmentsDeleted", "RemoteDeletionPending"),
        timeout=45,
    )
    cleared = condition(done, "RemoteDeletionPending")
    assert cleared["status"] == "False"
    found = re.fullmatch(r"deleted (\d+) remote segments \(.+\) in \S+", cleared["message"])
    assert found is not None, cleared["message"]
    assert int(found.group(1)) >= len(bases)
    assert done["status"]["tiered"]["remoteSegmentsPending"] == 0
    assert done["status"]["tiered"]["remoteDeletionSeconds"] >= 0
    # The remote store itself: every segment file below the cut is gone.
    assert [b for b in remote_bases(stack, topic) if b < RECORDS] == []
    assert done["status"]["phase"] == Phase.SUCCEEDED
    # One Event, posted just after the status that cleared the condition.
    deadline = time.monotonic() + 10
    while not (posted := deleted_events(stack, e2e_ns, "tiered")):
        assert time.monotonic() < deadline, "no RemoteSegmentsDeleted event"
        time.sleep(0.5)
    assert posted == 1


def deleted_events(stack: Stack, ns: str, name: str) -> int:
    """RemoteSegmentsDeleted Events of the purge, repeats counted."""
    found = [e for e in events(stack, ns, name) if e["reason"] == "RemoteSegmentsDeleted"]
    return sum(int(e.get("count") or 1) for e in found)
