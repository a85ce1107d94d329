"""A RetentionPolicy over a tiered topic (KIP-405) on the stack, whose brokers run
LocalTieredStorage: its status says the retention in force locally and remotely and where
the bytes are, checked against the remote store's own files, and RemoteDeletionPending
follows the remote segments below its cut until the brokers deleted them."""

from __future__ import annotations

import time
from typing import Any

import pytest

from devstack.stack import Stack
from tests.helpers.commits import commit
from tests.helpers.conditions import conditions_of
from tests.helpers.kafka import Kafka
from tests.helpers.kube import get
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on
from tests.helpers.records import produce
from tests.helpers.tiered import remote_segments
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack

# 1 MiB segments leave the brokers' disks within seconds of being closed (copied, then past
# local.retention.bytes); retention.ms -1 keeps everything in remote storage. Local
# retention by size, not time: a local.retention.ms breach also rolls and uploads the
# active segment, which leaves the local log empty (measured on 4.3.1), where this test
# wants bytes in both places.
TIERED = {
    "remote.storage.enable": "true",
    "segment.bytes": "1048576",
    "local.retention.bytes": "1",
    "retention.ms": "-1",
}
RECORDS = 15_000  # 200-byte values, about 3.4 MB: three closed 1 MiB segments and an active one


def tiered_entry(stack: Stack, ns: str, name: str, topic: str) -> dict[str, Any]:
    status = get(stack, "retentionpolicy", ns, name).get("status") or {}
    entry: dict[str, Any] = next(
        (t for t in status.get("topics") or [] if t.get("name") == topic), {}
    )
    return dict(entry.get("tiered") or {})


def remote_pending(stack: Stack, ns: str, name: str) -> dict[str, Any]:
    obj = get(stack, "retentionpolicy", ns, name)
    return next((c for c in conditions_of(obj) if c["type"] == "RemoteDeletionPending"), {})


def test_a_tiered_topics_policy_shows_where_its_bytes_are_and_follows_remote_deletion(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.make_topic(partitions=1, config=TIERED)
    produce(kafka.bootstrap, topic, {0: RECORDS}, value=b"r" * 200)
    deadline = time.monotonic() + 60
    while len(files := remote_segments(stack.kafka, topic, 0)) < 3:
        assert time.monotonic() < deadline, f"{len(files)} remote segments after 60s"
        time.sleep(0.5)
    # A group that has read nothing: the policy cuts nothing until it commits.
    group = f"{topic}-reader"
    commit(kafka.bootstrap, group, topic, {0: 0})
    apply_policy_on(stack, e2e_ns, "tiers", topic, deleteConsumed={"groups": [group]})

    # What the brokers' metadata says is in remote storage is what the store holds.
    def agrees() -> bool:
        entry = tiered_entry(stack, e2e_ns, "tiers", topic)
        stored = sum(f.size for f in remote_segments(stack.kafka, topic, 0))
        return entry.get("remoteBytes") == stored > 0

    eventually(
        agrees,
        timeout=45,
        what="status remoteBytes equal to the remote store's .log files",
        show=lambda: (
            tiered_entry(stack, e2e_ns, "tiers", topic),
            remote_segments(stack.kafka, topic, 0),
        ),
    )
    entry = tiered_entry(stack, e2e_ns, "tiers", topic)
    assert entry["retentionMs"] == -1
    assert entry["retentionBytes"] == -1
    assert entry["localRetentionMs"] == -2  # Kafka's default: as retention.ms
    assert entry["localRetentionBytes"] == 1
    assert entry["localBytes"] > 0  # the active segment, on each replica
    assert entry["remoteBytesPendingDeletion"] == 0
    obj = get(stack, "retentionpolicy", e2e_ns, "tiers")
    assert obj["status"]["tiers"]["topics"] == 1
    assert obj["status"]["tiers"]["remoteBytes"] == entry["remoteBytes"]
    assert not remote_pending(stack, e2e_ns, "tiers")  # nothing cut yet
    wide = stack.kubectl("get", "retentionpolicy", "tiers", "-n", e2e_ns, "-o", "wide").stdout
    assert "REMOTE PENDING" in wide.splitlines()[0]

    # The group reads past the first two segments: the next run cuts there.
    files = remote_segments(stack.kafka, topic, 0)
    cut = files[2].base_offset
    commit(kafka.bootstrap, group, topic, {0: cut})
    eventually(lambda: log_starts(kafka.admin, topic, 1) == [cut], timeout=30, what="the cut")
    eventually(
        lambda: bool(remote_pending(stack, e2e_ns, "tiers")),
        timeout=20,
        what="RemoteDeletionPending after the cut",
    )
    eventually(
        lambda: remote_pending(stack, e2e_ns, "tiers").get("status") == "False",
        timeout=40,
        what="RemoteDeletionPending False",
        show=lambda: remote_pending(stack, e2e_ns, "tiers"),
    )
    done = remote_pending(stack, e2e_ns, "tiers")
    assert done["reason"] == "RemoteSegmentsDeleted"
    assert "the last of the 2 deleted since the cut" in done["message"]
    # The store agrees: the segments below the cut are gone, the rest are there.
    left = {f.base_offset for f in remote_segments(stack.kafka, topic, 0)}
    assert not left & {f.base_offset for f in files[:2]}
    assert {f.base_offset for f in files[2:]} <= left
    status = get(stack, "retentionpolicy", e2e_ns, "tiers")["status"]
    assert status["tiers"]["remoteBytesPendingDeletion"] == 0
    assert status["tiers"]["lastCutAt"]
