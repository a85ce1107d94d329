"""An erasure scan's bookkeeping: which records carry a listed key (by SHA-256), how many
with values and how many tombstones, where, what a cut past them would take, and the
scan's JSON form (which carries no key bytes)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence

import pytest

from kafka_retention.adapters import kafka_erasure
from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.adapters.kafka_records import RecordInfo
from kafka_retention.adapters.kafka_writes import TombstoneWriter
from kafka_retention.core.erasure import key_digest
from kafka_retention.core.erasure_scan import (
    DigestHits,
    KeyMatcher,
    PartitionScan,
    ScanTally,
    TombstoneWrite,
    WrittenTombstone,
)
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.services.ports import ErasureKafka

TP = TopicPartition("orders", 2)
ALICE, BOB = b"user-alice", b"user-bob"


def tally_of(records: list[tuple[int, bytes | None, bool]], *keys: bytes) -> PartitionScan:
    """A scan of [0, 100) fed (offset, key, is_null) records, 10 bytes each, timestamp
    1000 + offset."""
    tally = ScanTally(TP, 0, 100, KeyMatcher(key_digest(k) for k in keys))
    for offset, key, is_null in records:
        tally.add(offset, 1000 + offset, key, is_null, 10)
    return tally.result()


def test_matcher_finds_listed_keys_by_their_sha256_and_nothing_else() -> None:
    matcher = KeyMatcher([key_digest(ALICE)])
    assert matcher.match(ALICE) == hashlib.sha256(ALICE).hexdigest()
    assert matcher.match(BOB) is None
    assert matcher.match(None) is None
    assert matcher.match(b"") is None
    # The digest of the bytes, not of some other encoding of the same text.
    assert matcher.match(ALICE.decode().encode("utf-16")) is None


def test_matcher_on_ten_thousand_digests_matches_exactly_the_listed_ones() -> None:
    listed = [f"customer-{i}".encode() for i in range(10_000)]
    matcher = KeyMatcher(key_digest(k) for k in listed)
    assert len(matcher) == 10_000
    assert all(matcher.match(k) == key_digest(k) for k in listed)
    assert not any(matcher.match(f"customer-{i}".encode()) for i in range(10_000, 20_000))


def test_matcher_refuses_a_malformed_digest_without_quoting_it() -> None:
    pasted = "alice@example.com"
    with pytest.raises(ValueError, match="digest #1 is not") as err:
        KeyMatcher([key_digest(ALICE), pasted])
    assert pasted not in str(err.value)
    with pytest.raises(ValueError, match="digest #0 is not"):
        KeyMatcher([key_digest(ALICE).upper()])


def test_tally_counts_values_and_tombstones_per_digest_with_their_offsets() -> None:
    scan = tally_of(
        [
            (3, ALICE, False),
            (4, BOB, False),
            (7, ALICE, False),
            (9, BOB, True),
            (12, ALICE, True),
        ],
        ALICE,
        BOB,
    )
    alice, bob = scan.hits[key_digest(ALICE)], scan.hits[key_digest(BOB)]
    assert alice == DigestHits(
        records=3,
        values=2,
        tombstones=1,
        first_offset=3,
        last_offset=12,
        last_value_offset=7,
        last_tombstone_offset=12,
        last_timestamp_ms=1012,
    )
    assert (bob.records, bob.values, bob.tombstones) == (2, 1, 1)
    assert (bob.first_offset, bob.last_offset, bob.last_value_offset) == (4, 9, 4)
    assert (scan.examined, scan.bytes_examined, scan.matches, scan.values) == (5, 50, 5, 3)


def test_collateral_is_the_other_records_at_or_below_the_last_match() -> None:
    scan = tally_of(
        [
            (0, b"other", False),
            (1, None, False),  # keyless: never a match, taken by a cut all the same
            (2, ALICE, False),
            (3, BOB, False),  # not listed here
            (5, ALICE, True),
            (6, b"other", False),  # past the last match: a cut at 6 keeps it
            (8, None, False),
        ],
        ALICE,
    )
    assert list(scan.hits) == [key_digest(ALICE)]
    assert (scan.collateral_records, scan.collateral_bytes) == (3, 30)
    assert scan.examined == 7


def test_a_partition_without_matches_has_no_hits_and_no_collateral() -> None:
    scan = tally_of([(0, BOB, False), (1, None, True)], ALICE)
    assert scan.hits == {}
    assert (scan.matches, scan.collateral_records, scan.examined) == (0, 0, 2)


def test_tally_refuses_records_out_of_order_or_out_of_range() -> None:
    tally = ScanTally(TP, 10, 20, KeyMatcher([key_digest(ALICE)]))
    tally.add(10, 0, ALICE, False, 1)
    with pytest.raises(ValueError, match="offset 10 after 10"):
        tally.add(10, 0, ALICE, False, 1)
    with pytest.raises(ValueError, match="offset 20 after 10, range"):
        tally.add(20, 0, BOB, False, 1)
    fresh = ScanTally(TP, 10, 20, KeyMatcher([]))
    with pytest.raises(ValueError, match="offset 9 after 9"):
        fresh.add(9, 0, BOB, False, 1)


def test_a_scan_survives_a_json_round_trip_and_carries_no_key_bytes() -> None:
    scan = tally_of([(1, b"other", False), (2, ALICE, False), (3, ALICE, True)], ALICE, BOB)
    text = json.dumps(scan.to_json())
    assert PartitionScan.from_json(json.loads(text)) == scan
    assert "user-alice" not in text
    assert key_digest(ALICE) in text
    empty = PartitionScan(TopicPartition("t", 0), 5, 5)
    assert PartitionScan.from_json(json.loads(json.dumps(empty.to_json()))) == empty


@pytest.mark.parametrize(
    "change",
    [
        {"partition": "2"},
        {"start": True},
        {"surprise": 1},
        {"hits": {"alice@example.com": {}}},
        {"hits": {key_digest(ALICE): {"records": "1"}}},
        {"topic": ""},
    ],
)
def test_a_scan_document_with_a_wrong_field_is_refused(change: dict[str, object]) -> None:
    raw = {**tally_of([(2, ALICE, False)], ALICE).to_json(), **change}
    with pytest.raises(ValueError, match=r"PartitionScan|DigestHits") as err:
        PartitionScan.from_json(raw)
    assert "alice@example.com" not in str(err.value)


# --- the adapter, without a cluster ---------------------------------------------------


def test_the_erasure_admin_is_what_the_erasure_service_asks_of_kafka() -> None:
    # mypy (make lint) checks this assignment against the port, method by method.
    port: ErasureKafka = ErasureAdmin("127.0.0.1:1")
    assert callable(port.scan_keys)
    assert callable(port.write_tombstones)


@pytest.mark.parametrize("key", [b"", None])
def test_the_writer_refuses_a_tombstone_without_a_key(key: bytes | None) -> None:
    writer = TombstoneWriter("127.0.0.1:1")
    with pytest.raises(ValueError, match="needs a non-empty key"):
        writer.tombstones([(TP, b"k"), (TP, key)])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "config",
    [
        {"cleanup.policy": "delete"},
        {"cleanup.policy": "compact", "remote.storage.enable": "true"},
    ],
)
def test_no_tombstone_is_written_to_a_topic_that_cannot_be_compacted(
    config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A null value on a delete topic erases nothing and stores the key once more."""
    admin = ErasureAdmin("127.0.0.1:1")

    def never(*_: object) -> object:
        raise AssertionError("read or wrote records")

    monkeypatch.setattr(admin, "topic_configs", lambda topics: dict.fromkeys(topics, config))
    monkeypatch.setattr(admin, "_read_keys", never)
    monkeypatch.setattr(admin, "_writer", never)
    out = admin.write_tombstones([TombstoneWrite(TP, key_digest(ALICE), 3)])
    failure = out[(TP, key_digest(ALICE))]
    assert isinstance(failure, KafkaFailure)
    assert (failure.code, failure.retriable) == ("NOT_COMPACTED", False)


class FakeLog:
    """Partitions in memory as (offset, key, value) records, read as RecordReader reads
    them; `broken` partitions raise KafkaUnavailable once reached."""

    def __init__(self, records: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]]):
        self.records = records
        self.broken: set[TopicPartition] = set()
        self.reads: list[dict[TopicPartition, tuple[int, int]]] = []

    def read_many(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], first: int | None = None
    ) -> Iterator[tuple[TopicPartition, RecordInfo]]:
        self.reads.append(dict(ranges))
        for tp, (start, end) in ranges.items():
            if tp in self.broken:
                raise KafkaUnavailable(f"no records from {tp} for 10s")
            found = [r for r in self.records.get(tp, []) if start <= r[0] < end]
            for offset, key, value in found[:first]:
                yield tp, RecordInfo(offset, 1000 + offset, key, 10, value is None)

    def close(self) -> None:
        pass


class FakeWriter:
    def __init__(self) -> None:
        self.written: list[tuple[TopicPartition, bytes]] = []

    def tombstones(
        self, writes: Sequence[tuple[TopicPartition, bytes]]
    ) -> list[WrittenTombstone | KafkaFailure]:
        self.written.extend(writes)
        return [WrittenTombstone(100 + i, 5) for i, _ in enumerate(writes)]

    def close(self) -> None:
        pass


def fake_admin(monkeypatch: pytest.MonkeyPatch, log: FakeLog) -> tuple[ErasureAdmin, FakeWriter]:
    admin, writer = ErasureAdmin("127.0.0.1:1"), FakeWriter()
    ends = {tp: max((r[0] for r in recs), default=-1) + 1 for tp, recs in log.records.items()}
    monkeypatch.setattr(admin, "_reader", lambda **_: log)
    monkeypatch.setattr(admin, "_writer", lambda: writer)
    monkeypatch.setattr(
        admin, "topic_configs", lambda ts: {t: {"cleanup.policy": "compact"} for t in ts}
    )
    monkeypatch.setattr(
        admin, "log_bounds", lambda tps: (dict.fromkeys(tps, 0), {tp: ends[tp] for tp in tps})
    )
    return admin, writer


def test_a_tombstone_carries_the_bytes_of_a_record_whose_key_has_the_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only bytes that hash to the digest are ever written: where the record at the
    offset has another key (compaction removed the match), the next match is used."""
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    log = FakeLog(
        {
            a: [(0, ALICE, b"v"), (1, BOB, b"v")],
            b: [(0, BOB, b"v"), (3, b"other", b"v"), (7, ALICE, b"v2"), (8, ALICE, None)],
        }
    )
    admin, writer = fake_admin(monkeypatch, log)
    out = admin.write_tombstones(
        [
            TombstoneWrite(a, key_digest(ALICE), 0),
            TombstoneWrite(a, key_digest(ALICE), 0),  # the same write twice: one tombstone
            TombstoneWrite(b, key_digest(ALICE), 2),  # offset 2 is gone: 3 is "other"
            TombstoneWrite(a, key_digest(b"carol"), 0),  # carol is not in the log
        ]
    )
    assert sorted(writer.written) == [(a, ALICE), (b, ALICE)]
    assert isinstance(out[(a, key_digest(ALICE))], WrittenTombstone)
    assert isinstance(out[(b, key_digest(ALICE))], WrittenTombstone)
    carol = out[(a, key_digest(b"carol"))]
    assert isinstance(carol, KafkaFailure)
    assert carol.code == "KEY_NOT_FOUND"
    # One point read for each partition's first write, then searches for the misses.
    assert log.reads[0] == {a: (0, 2), b: (2, 9)}


def test_a_failed_scan_round_fails_its_partitions_and_an_unreachable_cluster_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kafka_erasure, "ROUND_PARTITIONS", 2)
    tps = [TopicPartition("t", p) for p in range(8)]
    log = FakeLog({tp: [(0, ALICE, b"v"), (1, BOB, b"v")] for tp in tps})
    log.broken = {tps[3], tps[4]}  # the second round fails after a record; the third at once
    admin, _ = fake_admin(monkeypatch, log)
    out = admin.scan_keys(dict.fromkeys(tps, (0, 2)), {key_digest(ALICE)})
    assert [type(out[tp]).__name__ for tp in tps] == ["PartitionScan"] * 2 + ["KafkaFailure"] * 6
    assert len(log.reads) == 3  # the round that read nothing ends the scan: no fourth
    first = out[tps[0]]
    assert isinstance(first, PartitionScan)
    assert first.hits[key_digest(ALICE)].values == 1
    failed = out[tps[2]]
    assert isinstance(failed, KafkaFailure)
    assert failed.retriable


def test_a_write_whose_partition_does_not_answer_fails_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    log = FakeLog({a: [(0, ALICE, b"v")], b: [(0, ALICE, b"v")]})
    log.broken = {b}
    admin, writer = fake_admin(monkeypatch, log)
    out = admin.write_tombstones([TombstoneWrite(b, key_digest(ALICE), 0)])
    failure = out[(b, key_digest(ALICE))]
    assert isinstance(failure, KafkaFailure)
    assert (failure.code, failure.retriable) == ("KAFKA_UNAVAILABLE", True)
    assert writer.written == []
    assert len(log.reads) == 1  # no search after a read the cluster did not answer
