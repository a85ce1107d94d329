"""RetentionPolicies on tiered topics (KIP-405; issue #49, items 2-3) on the real stack:
records an hour apart, each hour a segment of its own, all but the newest in remote
storage only. A maxRetention cut whose time falls in the remote range cuts where the
records older than it end, and an unconsumed-loss scan names the keys it lost from remote
segments. What the test checks it reads itself: record timestamps and keys with a
consumer, segment files on the brokers' disks and in the remote store."""

from __future__ import annotations

import time

import pytest

from devstack.stack import Stack
from tests.helpers.commits import commit
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on, loss_events, ran, where
from tests.helpers.tiered import (
    HOURLY_TIERED,
    Record,
    local_segment_bases,
    produce_hours_apart,
    read_records,
    wait_until_remote,
)
from tests.helpers.topics import topic_id
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack

# Ten records each 5, 4, 3, 2 and 1 hours ago, and ten now: offsets 0-59. A cap of 150
# minutes falls half an hour from the nearest records on either side, so however long
# the run takes (within minutes), the answer is offset 30.
HOURS_AGO = (5, 4, 3, 2, 1, 0)
PER_HOUR = 10
CAP_MS = 150 * 60_000


def tiered_topic(stack: Stack, kafka: Kafka) -> tuple[str, list[Record]]:
    """A tiered topic whose records below offset 50 are in remote storage only (no broker
    holds a segment with data starting below it), and its records as a consumer reads
    them."""
    topic = kafka.make_topic(partitions=1, config=HOURLY_TIERED)
    produce_hours_apart(kafka.bootstrap, topic, HOURS_AGO, PER_HOUR, int(time.time() * 1000))
    end = len(HOURS_AGO) * PER_HOUR
    nodes = stack.kafka.nodes
    wait_until_remote(
        [n.log_dir for n in nodes],
        stack.kafka,
        topic,
        topic_id(kafka.admin, topic),
        below=end - PER_HOUR,
    )
    return topic, read_records(kafka.bootstrap, topic, 0, end)


def first_younger_than_cap(records: list[Record]) -> int:
    """The first offset whose timestamp is at least now - the cap, as of now."""
    oldest_kept = int(time.time() * 1000) - CAP_MS
    return next(r.offset for r in records if r.timestamp_ms >= oldest_kept)


def test_max_retention_cuts_where_older_records_end_in_remote_storage(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, records = tiered_topic(stack, kafka)
    before = first_younger_than_cap(records)
    # The cut falls in the remote range: no broker keeps that offset on its disk.
    local = local_segment_bases([n.log_dir for n in stack.kafka.nodes], topic, 0)
    assert not local or local[0] > before, local
    apply_policy_on(stack, e2e_ns, "cap", topic, maxRetention="150m")
    obj = ran(stack, e2e_ns, "cap")
    after = first_younger_than_cap(records)
    assert before == after == 30  # the timestamps' gaps leave one answer
    assert log_starts(kafka.admin, topic, 1) == [after]
    assert records[after - 1].timestamp_ms < int(time.time() * 1000) - CAP_MS
    assert obj["status"]["lastRun"]["recordsDeleted"] == after


def test_an_unconsumed_loss_in_remote_segments_names_the_lost_keys(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic, records = tiered_topic(stack, kafka)
    idle = f"{topic}-idle"
    commit(kafka.bootstrap, idle, topic, {0: 12})  # read up to the 4-hour-old records
    apply_policy_on(stack, e2e_ns, "cap", topic, maxRetention="150m", notify={"groups": [idle]})
    obj = ran(stack, e2e_ns, "cap")
    assert log_starts(kafka.admin, topic, 1) == [30]
    (loss,) = obj["status"]["losses"]
    assert where(loss) == (idle, topic, 0, 12, 30)
    assert (loss["records"], loss["cause"]) == (18, "maxRetention")
    # The keys the consumer read at those offsets (from remote storage), not made up.
    keys = {r.offset: r.key for r in records}
    assert loss["sampleKeys"] == [{"offset": o, "key": keys[o]} for o in range(12, 17)]
    assert condition(obj, "DataLoss")["status"] == "True"
    # Kopf posts events from a queue after the run's status is written.
    eventually(lambda: bool(loss_events(stack, e2e_ns, "cap")), timeout=30, what="loss event")
    (event,) = loss_events(stack, e2e_ns, "cap")
    assert f"group {idle} lost 18 unread records of {topic}-0" in event["message"]
    assert f"cause maxRetention, keys '{keys[12]}', '{keys[13]}'" in event["message"]
