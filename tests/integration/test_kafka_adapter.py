"""The Kafka adapter against the real cluster: requests split in pieces, and a group
coordinator that moves while its offsets are read."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import ElectionType
from confluent_kafka.admin import AdminClient

from devstack.kafka import KafkaCluster
from kafka_retention.adapters import kafka_calls, kafka_groups
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition
from tests.helpers.commits import commit
from tests.helpers.kafka import Kafka
from tests.helpers.records import produce


@pytest.mark.stack
def test_committed_offsets_asked_in_pieces_come_back_whole(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two partitions a request: seven partitions take four requests, and every answer,
    # including "nothing committed", lands on its own partition.
    monkeypatch.setattr(kafka_groups, "COMMITTED_PER_REQUEST", 2)
    topic = kafka.topic(dict.fromkeys(range(7), 20))
    group = kafka.group_at(topic, "g", {p: 10 + p for p in range(7) if p != 4})

    got = KafkaAdmin(kafka.bootstrap).committed(group, [TopicPartition(topic, p) for p in range(7)])

    assert got == {TopicPartition(topic, p): (None if p == 4 else 10 + p) for p in range(7)}


@pytest.mark.stack
def test_offsets_and_deletes_sent_in_pieces_land_on_their_own_partitions(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two partitions a request: seven partitions take four ListOffsets requests a kind
    # and four DeleteRecords requests, all in flight together; each partition has its own
    # record count and cut, so an answer landing on the wrong partition shows.
    monkeypatch.setattr(kafka_calls, "PARTITIONS_PER_REQUEST", 2)
    topic = kafka.topic({p: 10 + p for p in range(7)})
    tps = [TopicPartition(topic, p) for p in range(7)]
    admin = KafkaAdmin(kafka.bootstrap)

    starts, ends = admin.log_bounds(tps)
    assert starts == dict.fromkeys(tps, 0)
    assert ends == {tp: 10 + tp.partition for tp in tps}

    deleted = admin.delete_records({tp: tp.partition for tp in tps})
    assert deleted == {tp: tp.partition for tp in tps}
    assert admin.log_bounds(tps)[0] == {tp: tp.partition for tp in tps}
    # A timestamp before every record: each partition's first offset, its new log start.
    assert admin.offsets_for_timestamp(tps, 0) == {tp: tp.partition for tp in tps}


# Reads a group's commits in a loop until told to stop, in a process of its own: what it
# guards against is a crash of the whole process, which would end pytest with it.
_READER = """
import json, sys
from pathlib import Path
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaUnavailable

bootstrap, group, topic, stop = sys.argv[1:5]
admin = KafkaAdmin(bootstrap, timeout=5)
tps = [TopicPartition(topic, p) for p in range(3)]
seen = {"ok": 0, "unavailable": 0, "wrong": []}
while not Path(stop).exists():
    try:
        got = admin.committed(group, tps)
    except KafkaUnavailable:
        seen["unavailable"] += 1
        continue
    if got == {tp: 10 + tp.partition for tp in tps}:
        seen["ok"] += 1
    else:
        seen["wrong"].append(str(got))
print(json.dumps(seen))
"""


def _coordinator(bootstrap: str, group: str) -> int | None:
    """The broker coordinating the group; None while no broker answers for it. A new
    client each time: a client keeps asking the coordinator it knows."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        described = admin.describe_consumer_groups([group], request_timeout=5)[group].result(
            timeout=10
        )
    except Exception:  # a coordinator that went away: asked again until one answers
        return None
    return int(described.coordinator.id)


@pytest.mark.stack
def test_committed_offsets_are_read_while_the_group_coordinator_moves(
    isolated_cluster: KafkaCluster, isolated_kafka: Kafka, tmp_path: Path
) -> None:
    """The coordinator leaves its broker (stopped) and comes back (preferred leader
    election), the way a rolling restart moves it, while offsets are read. librdkafka's
    AdminClient met the NOT_COORDINATOR answer of a moved coordinator with a NULL
    dereference and the operator died mid-run (found in a CI run: a broker killed by one
    test, leadership moved back minutes later under another). On the isolated cluster: it
    stops a broker and moves every partition's leader."""
    bootstrap, admin, make_topic = (
        isolated_kafka.bootstrap,
        isolated_kafka.admin,
        isolated_kafka.make_topic,
    )
    topic = make_topic(partitions=3)
    produce(bootstrap, topic, dict.fromkeys(range(3), 20))
    group = f"{topic}-g"
    commit(bootstrap, group, topic, {p: 10 + p for p in range(3)})
    home = _coordinator(bootstrap, group)
    assert home is not None, "no broker coordinates the group"
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, bootstrap, group, topic, str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    stopped = False
    try:
        time.sleep(3)
        isolated_cluster.stop_node(home)
        stopped = True
        deadline = time.monotonic() + 60
        while _coordinator(bootstrap, group) in (home, None):
            assert time.monotonic() < deadline, "the coordinator did not leave its broker"
            time.sleep(1)
        time.sleep(3)  # reads go to the new coordinator
        isolated_cluster.start_node(home)
        isolated_cluster.wait_node_ready(home, timeout=120)
        stopped = False
        deadline = time.monotonic() + 90
        while _coordinator(bootstrap, group) != home:
            assert time.monotonic() < deadline, "the coordinator did not come back"
            admin.elect_leaders(ElectionType.PREFERRED, None).result(timeout=30)
            time.sleep(1)
        time.sleep(5)  # reads find the coordinator moved back
    finally:
        if stopped:
            isolated_cluster.start_node(home)
            isolated_cluster.wait_node_ready(home, timeout=120)
        stop.touch()
        out, _ = reader.communicate(timeout=60)
    assert reader.returncode == 0, f"the reading process died with {reader.returncode}"
    seen = json.loads(out)
    assert seen["wrong"] == []
    assert seen["ok"] > 0
