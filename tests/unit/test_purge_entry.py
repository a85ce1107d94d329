"""A RecordPurge entry and its stored form: plans written by the previous release read
back unchanged, and each stage's step does what its name says."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge import PartitionPlan
from kafka_retention.core.purge_entry import PurgeEntry, from_lines, planned, to_lines
from kafka_retention.core.purge_states import State

# Written by the release before the typed entry (commit 8765032's purge_facts.entry,
# purge_execute.purged/failed and purge_report.to_lines): a planned cut with a note, an
# unplannable topic, a purged partition, one left to retry, and a dry run's estimate.
STORED_BEFORE = (
    '{"highWatermark": 100, "logStartBefore": 10, "note": "held by g2 at 60", "partition": 0, '
    '"reason": "committed by g1", "recordsToDelete": 50, "requestedOffset": 60, '
    '"state": "Planned", "topic": "orders"}\n'
    '{"error": "UNKNOWN_TOPIC_OR_PARTITION: topic gone does not exist", "partition": -1, '
    '"state": "Failed", "topic": "gone"}\n'
    '{"highWatermark": 50, "logStartBefore": 0, "lowWatermark": 50, "partition": 1, '
    '"reason": "high watermark (-1)", "recordsDeleted": 50, "recordsToDelete": 50, '
    '"requestedOffset": 50, "state": "Purged", "topic": "orders"}\n'
    '{"error": "NOT_LEADER_OR_FOLLOWER: moving", "highWatermark": 50, "logStartBefore": 5, '
    '"partition": 2, "reason": "", "recordsToDelete": 35, "requestedOffset": 40, '
    '"state": "Retrying", "topic": "orders"}\n'
    '{"bytesToDeleteEstimate": 3500, "highWatermark": 50, "logStartBefore": 5, "partition": 3, '
    '"reason": "before 2026-01-01T00:00:00+00:00", "recordsToDelete": 35, '
    '"requestedOffset": 40, "state": "DryRun", "topic": "orders"}\n'
)


def test_a_plan_stored_by_the_previous_release_reads_back_and_rewrites_byte_for_byte() -> None:
    entries = from_lines(STORED_BEFORE)
    assert [(e.topic, e.partition, e.state) for e in entries] == [
        ("orders", 0, State.PLANNED),
        ("gone", -1, State.FAILED),
        ("orders", 1, State.PURGED),
        ("orders", 2, State.RETRYING),
        ("orders", 3, State.DRY_RUN),
    ]
    assert entries[0].requested_offset == 60
    assert entries[0].log_start_before == 10
    assert entries[0].note == "held by g2 at 60"
    assert entries[3].reason == ""  # an empty reason is kept, not dropped
    assert to_lines(entries) == STORED_BEFORE


def test_the_plan_made_from_a_partition_plan_is_what_the_previous_release_stored() -> None:
    cut = PartitionPlan(
        TopicPartition("orders", 0), 10, 100, 60, "committed by g1", ("held by g2 at 60",)
    )
    error = PartitionPlan(
        TopicPartition("gone", -1),
        -1,
        -1,
        -1,
        "not planned",
        error="UNKNOWN_TOPIC_OR_PARTITION: topic gone does not exist",
    )
    assert to_lines([planned(cut), planned(error)]) == "".join(STORED_BEFORE.splitlines(True)[:2])


def test_an_entry_with_a_key_this_release_does_not_know_is_refused() -> None:
    item = json.loads(STORED_BEFORE.splitlines()[0]) | {"requestedOfset": 99}
    with pytest.raises(ValueError, match="requestedOfset"):
        PurgeEntry.from_status(item)


def test_purged_counts_records_up_to_the_cut_only() -> None:
    entry = from_lines(STORED_BEFORE)[0]  # log start 10, cut 60
    done = entry.purged(75)  # retention moved the log start past the cut meanwhile
    assert (done.state, done.low_watermark, done.records_deleted) == (State.PURGED, 75, 50)
    assert done.error is None
    assert entry.state == State.PLANNED  # the stored entry itself is unchanged


def test_a_lowered_cut_keeps_the_plan_note_and_says_from_where() -> None:
    entry = from_lines(STORED_BEFORE)[0]
    lowered = entry.lowered(40, ["group g2 is at 40"])
    assert lowered.requested_offset == 40
    assert lowered.note == "held by g2 at 60; lowered from 60 at purge time; group g2 is at 40"


def test_a_retriable_failure_leaves_the_partition_to_retry_and_a_final_one_fails_it() -> None:
    entry = from_lines(STORED_BEFORE)[0]
    assert entry.failed("NOT_LEADER_OR_FOLLOWER: x", retriable=True).state == State.RETRYING
    assert entry.failed("TOPIC_AUTHORIZATION_FAILED: x").state == State.FAILED
    assert entry.failed("x", retriable=True).pending
    assert not entry.failed("x").pending


def test_an_entry_without_a_cut_has_no_target() -> None:
    unplannable = from_lines(STORED_BEFORE)[1]
    with pytest.raises(ValueError, match="no planned cut"):
        _ = unplannable.target


@pytest.mark.parametrize("key", ["requestedOffset", "logStartBefore", "highWatermark"])
def test_an_entry_with_a_negative_offset_is_refused(key: str) -> None:
    """-1 would read as "the high watermark" at the broker, past every group: a stored
    plan (a ConfigMap a tenant may write) never carries one into a cut."""
    item = json.loads(STORED_BEFORE.splitlines()[0]) | {key: -1}
    with pytest.raises(ValueError, match=key):
        PurgeEntry.from_status(item)


def test_lines_are_what_json_dumps_writes_for_any_entry() -> None:
    """to_lines writes each line itself: it must stay json.dumps(sort_keys=True) of the
    status form for every field present or absent, and for any text in the strings."""
    rng = random.Random(7)  # noqa: S311 - repeatable cases, not a secret
    texts = ["", "plain", 'quote " and \\ back', "naïve ✓ 日本", "tab\tnew\nline", "\x00\x1f"]
    entries = []
    for i in range(400):
        optional: dict[str, Any] = {
            name: (
                rng.choice(texts) if name in ("reason", "note", "error") else rng.randrange(10**12)
            )
            for name in (
                "requested_offset",
                "log_start_before",
                "high_watermark",
                "records_to_delete",
                "reason",
                "note",
                "error",
                "low_watermark",
                "records_deleted",
                "bytes_to_delete_estimate",
            )
            if rng.random() < 0.5
        }
        entries.append(
            PurgeEntry(
                rng.choice(texts) + str(i),
                rng.randrange(-1, 500),
                rng.choice(list(State)),
                **optional,
            )
        )
    expected = "".join(json.dumps(e.to_status(), sort_keys=True) + "\n" for e in entries)
    assert to_lines(entries) == expected
    assert from_lines(expected) == entries
