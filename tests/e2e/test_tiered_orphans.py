"""Orphan cleanup beside tiered storage (KIP-405; issue #49, item 4) on the stack's
isolated cluster: a tiered topic whose records are in remote storage, with a KRaft-style
stray copy of its partition and a copy left on a broker that does not host it. The
orphan check removes exactly those two (every offset they hold is in remote storage or
on the live replica's disk), keeps the live partition, whose local log holds hardly
anything, and never changes a byte of the remote store: the test lists it, with sizes and
hashes, before and after, and reads every record back from it.

On the isolated cluster (tests/helpers/sharing.py): it plants directories in the
brokers' log dirs, which any orphan policy there removes."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from devstack.kafka import KafkaCluster
from devstack.stack import Stack
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.kube import events, wait_for
from tests.helpers.orphans import HEX, entries, reclaimed
from tests.helpers.policies import apply_policy
from tests.helpers.tiered import (
    HOURLY_TIERED,
    local_segment_bases,
    produce_hours_apart,
    read_records,
    remote_segments,
    store_snapshot,
    wait_until_remote,
)
from tests.helpers.topics import create_on, wait_for_gone

pytestmark = [pytest.mark.stack]

HOURS_AGO = (5, 4, 3, 2, 1, 0)
PER_HOUR = 10
END = len(HOURS_AGO) * PER_HOUR


def tiered_on_broker_1(admin: AdminClient, name: str) -> str:
    """A tiered topic of one partition on broker 1 alone that keeps its segments on disk
    for a day (until the test lowers local.retention.ms): its topic id. A day, not an
    hour: local retention goes by the records' timestamps, and the oldest are five hours
    old (with an hour, the brokers dropped their local copies as soon as they were
    uploaded, before the test could copy them: seen in a make test run)."""
    return create_on(admin, name, [1], {**HOURLY_TIERED, "local.retention.ms": "86400000"})


def to_remote_storage(admin: AdminClient, name: str) -> None:
    """local.retention.ms down to HOURLY_TIERED's second: the brokers copy, then drop locally."""
    entry = ConfigEntry(
        "local.retention.ms",
        HOURLY_TIERED["local.retention.ms"],
        incremental_operation=AlterConfigOpType.SET,
    )
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def steady(root: Path) -> dict[str, tuple[int, str]]:
    """The remote store once two looks 4 s apart agree (the remote log manager works
    every 3 s, also on other topics of the cluster a test before this one deleted)."""
    deadline = time.monotonic() + 60
    last = store_snapshot(root)
    while True:
        time.sleep(4)
        now = store_snapshot(root)
        if now == last:
            return now
        assert time.monotonic() < deadline, "the remote store keeps changing"
        last = now


def test_orphans_of_a_tiered_topic_go_and_remote_storage_stays_byte_for_byte(
    stack: Stack,
    e2e_ns: str,
    isolated_cluster: KafkaCluster,
    isolated_kafka: Kafka,
    planted: list[Path],
) -> None:
    kafka = isolated_kafka
    logs = {b: isolated_cluster.node(b).log_dir for b in (1, 2, 3)}
    store = isolated_cluster.node(1).remote_dir / "kafka-tiered-storage"
    topic = f"tiered-orphans-{e2e_ns[-6:]}"
    tid = tiered_on_broker_1(kafka.admin, topic)
    produce_hours_apart(kafka.bootstrap, topic, HOURS_AGO, PER_HOUR, int(time.time() * 1000))
    live = logs[1] / f"{topic}-0"
    assert local_segment_bases([logs[1]], topic, 0)[0] == 0

    # Copies taken while broker 1 still holds every segment (offsets 0-59): a stray as a
    # KRaft broker names one, and a copy a reassignment could have left on broker 2.
    def plant(broker: int, name: str) -> Path:
        target = logs[broker] / name
        shutil.copytree(live, target)
        planted.append(target)
        return target

    stray = plant(3, f"{topic}-0.{HEX}-stray")
    copy = plant(2, f"{topic}-0")
    # Then the brokers move everything but the newest segment to remote storage.
    to_remote_storage(kafka.admin, topic)
    wait_until_remote([logs[1]], isolated_cluster, topic, tid, below=END - PER_HOUR)
    # The newest segment too (rolled once its newest record is past local retention), so
    # that no upload is left to change the store while the check runs.
    deadline = time.monotonic() + 60
    while (bases := [f.base_offset for f in remote_segments(isolated_cluster, topic, 0, tid)]) != [
        0,
        10,
        20,
        30,
        40,
        50,
    ]:
        assert time.monotonic() < deadline, bases
        time.sleep(0.5)
    before = steady(store)
    assert any(path.startswith(f"{topic}-0-{tid}/") for path in before)

    apply_policy(
        stack,
        e2e_ns,
        "tiered-orphans",
        cluster={"bootstrapServers": kafka.bootstrap, "brokers": {"access": "local"}},
        orphanPartitions={"enabled": True, "removalDelay": "10s", "minAge": "1s"},
    )

    def policy_when(check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        return wait_for(stack, "retentionpolicy", e2e_ns, "tiered-orphans", check, timeout=90)

    first = policy_when(lambda o: (3, stray.name) in entries(o))
    found = entries(first)
    assert found[(3, stray.name)]["state"] == "Pending"
    assert found[(2, f"{topic}-0")]["state"] == "Pending"
    # The live partition, on broker 1's disk with hardly any data, is no orphan.
    assert (1, f"{topic}-0") not in found
    done = policy_when(
        lambda o: (
            reclaimed(o)
            and entries(o).get((3, stray.name), {}).get("state") == "Removed"
            and entries(o).get((2, f"{topic}-0"), {}).get("state") == "Removed"
        )
    )
    assert not stray.exists()
    assert not copy.exists()
    assert live.is_dir()
    assert (1, f"{topic}-0") not in entries(done)
    # Not a byte of remote storage changed, and every record still reads from it.
    assert store_snapshot(store) == before
    records = read_records(kafka.bootstrap, topic, 0, END)
    assert [r.offset for r in records] == list(range(END))
    removed = [
        e
        for e in events(stack, e2e_ns, "tiered-orphans")
        if e["reason"] == "OrphanDirectoryRemoved"
    ]
    assert len(removed) == 2
    assert condition(done, "OrphansFound")["status"] == "False"
    stack.kubectl("delete", "retentionpolicy", "tiered-orphans", "-n", e2e_ns)
    kafka.admin.delete_topics([topic])[topic].result(timeout=30)
    wait_for_gone(kafka.admin, topic)
