"""The Spark erasure scan's Python side, without Spark: a partition read by several tasks
(segments), each in several Arrow batches, folds into exactly the PartitionScan that
core.erasure_scan.ScanTally makes reading the same records one by one."""

from __future__ import annotations

import hashlib
import itertools
from typing import Any, NamedTuple

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_retention.core.erasure_scan import KeyMatcher, PartitionScan, ScanTally
from kafka_retention.core.facts import TopicPartition
from retention_jobs.erasure_scan import fold, tally_segments

TOPICS = ["clicks", "orders"]
WIDTH = 5  # above every partition number here
TP = TopicPartition("orders", 2)
KEYS = [b"alice", b"bob", b"carol", None]
LISTED = {hashlib.sha256(k).hexdigest() for k in (b"alice", b"bob")}
MATCHER = KeyMatcher(LISTED)


class Record(NamedTuple):
    offset: int
    key: bytes | None
    tombstone: bool
    timestamp_ms: int
    size: int


def batch(tp: TopicPartition, records: list[Record]) -> pa.RecordBatch:
    """What for_python hands to Python: the digest (with time and kind) when listed,
    never the key."""

    def match(r: Record) -> str | None:
        digest = MATCHER.match(r.key)
        return None if digest is None else f"{digest}:{r.timestamp_ms}:{int(r.tombstone)}"

    return pa.RecordBatch.from_pylist(
        [
            {
                "tp": TOPICS.index(tp.topic) * WIDTH + tp.partition,
                "offset": r.offset,
                "match": match(r),
                "storedBytes": r.size,
            }
            for r in records
        ],
        schema=pa.schema(
            [
                ("tp", pa.int32()),
                ("offset", pa.int64()),
                ("match", pa.string()),
                ("storedBytes", pa.int32()),
            ]
        ),
    )


def rows_of(task_batches: list[list[pa.RecordBatch]]) -> list[Any]:
    """The rows the driver gets (as toArrow().to_pylist() gives them)."""
    out: list[Any] = []
    for batches in task_batches:  # each task separately, as Spark runs them
        for result in tally_segments(iter(batches), TOPICS, WIDTH):
            out += result.to_pylist()
    return out


def by_tally(records: list[Record], start: int, end: int) -> PartitionScan:
    tally = ScanTally(TP, start, end, MATCHER)
    for r in records:
        tally.add(r.offset, r.timestamp_ms, r.key, r.tombstone, r.size)
    return tally.result()


@st.composite
def partitions(draw: st.DrawFn) -> tuple[list[Record], list[int], list[int], int, int]:
    """Records at rising offsets with gaps (compaction, transaction markers), and where
    the tasks and, within them, the batches are split."""
    start = draw(st.integers(0, 50))
    offset = start + draw(st.integers(0, 3))
    records = []
    for _ in range(draw(st.integers(0, 60))):
        records.append(
            Record(
                offset,
                draw(st.sampled_from(KEYS)),
                draw(st.booleans()),
                draw(st.integers(0, 10**6)),
                draw(st.integers(70, 500)),
            )
        )
        offset += draw(st.integers(1, 3))
    end = offset + draw(st.integers(0, 3))
    tasks = sorted(draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=4)))
    batches = sorted(draw(st.sets(st.integers(1, max(1, len(records) - 1)), max_size=6)))
    return records, tasks, batches, start, end


def split(items: list[Any], at: list[int]) -> list[list[Any]]:
    bounds = [0, *[i for i in at if 0 < i < len(items)], len(items)]
    return [items[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@given(partitions())
def test_segments_fold_into_the_scan_a_tally_of_every_record_makes(
    drawn: tuple[list[Record], list[int], list[int], int, int],
) -> None:
    records, tasks, batch_cuts, start, end = drawn
    task_batches = []
    for task in split(records, tasks):
        task_batches.append([batch(TP, part) for part in split(task, batch_cuts)])
    folded = fold(TP, start, end, rows_of(task_batches))
    assert folded == by_tally(records, start, end)
    assert folded.to_json() == by_tally(records, start, end).to_json()


def test_collateral_counts_other_keys_below_the_last_match_in_a_later_task() -> None:
    alice, bob = b"alice", b"bob"
    records = [
        Record(0, b"carol", False, 1, 100),
        Record(1, alice, False, 2, 110),
        Record(2, b"carol", False, 3, 120),
        Record(3, None, False, 4, 130),
        Record(5, bob, True, 5, 140),  # the last match, in the second task
        Record(6, b"carol", False, 6, 150),
    ]
    folded = fold(TP, 0, 7, rows_of([[batch(TP, records[:3])], [batch(TP, records[3:])]]))
    assert (folded.collateral_records, folded.collateral_bytes) == (3, 100 + 120 + 130)
    assert folded.examined == 6
    bob_hits = folded.hits[hashlib.sha256(bob).hexdigest()]
    assert (bob_hits.tombstones, bob_hits.last_tombstone_offset, bob_hits.values) == (1, 5, 0)


def test_a_partition_with_no_record_in_range_is_an_empty_scan() -> None:
    assert fold(TP, 10, 20, []) == PartitionScan(TP, 10, 20)


def test_overlapping_segments_are_refused_rather_than_counted_twice() -> None:
    records = [Record(i, b"alice", False, i, 100) for i in range(4)]
    rows = rows_of([[batch(TP, records[:3])], [batch(TP, records[2:])]])
    with pytest.raises(ValueError, match="segment"):
        fold(TP, 0, 4, rows)


def test_a_segment_past_the_range_end_is_refused() -> None:
    rows = rows_of([[batch(TP, [Record(7, b"alice", False, 1, 100)])]])
    with pytest.raises(ValueError, match="range"):
        fold(TP, 0, 5, rows)


def test_offsets_falling_within_a_task_fail_the_task() -> None:
    records = [Record(4, b"bob", False, 1, 100), Record(3, b"bob", False, 2, 100)]
    with pytest.raises(ValueError, match="out of order"):
        list(tally_segments(iter([batch(TP, records)]), TOPICS, WIDTH))


def test_two_partitions_in_one_batch_make_two_segments() -> None:
    other = TopicPartition("orders", 3)
    mixed = pa.concat_batches(
        [
            batch(TP, [Record(0, b"alice", False, 1, 100)]),
            batch(other, [Record(0, None, False, 1, 100)]),
        ]
    )
    rows = rows_of([[mixed]])
    assert {(r["partition"], r["digest"] is None) for r in rows} == {
        (2, True),
        (2, False),
        (3, True),
    }
    assert fold(other, 0, 1, [r for r in rows if r["partition"] == 3]).examined == 1


def test_the_same_partition_of_two_topics_in_one_batch_makes_two_segments() -> None:
    other = TopicPartition("clicks", 2)
    mixed = pa.concat_batches(
        [
            batch(TP, [Record(0, b"alice", False, 1, 100)]),
            batch(other, [Record(1, b"bob", False, 1, 100)]),
        ]
    )
    rows = rows_of([[mixed]])
    assert fold(TP, 0, 1, [r for r in rows if r["topic"] == "orders"]).matches == 1
    assert fold(other, 0, 2, [r for r in rows if r["topic"] == "clicks"]).examined == 1
