"""The erasure adapter on the real stack: a key is found wherever it was written (in any
partition, and in an aborted transaction), tombstones go to exactly those partitions with
the key's own bytes, and on a quickly compacted topic the cleaner removes first the values
and then the key itself while other records keep arriving."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Message, Producer

from kafka_retention.adapters.kafka_erasure import ErasureAdmin
from kafka_retention.adapters.kafka_records import RecordReader
from kafka_retention.core.erasure import key_digest
from kafka_retention.core.erasure_scan import PartitionScan, TombstoneWrite, WrittenTombstone
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from tests.helpers.kafka import Kafka
from tests.helpers.records import produce
from tests.helpers.topics import FAST_COMPACTION

pytestmark = pytest.mark.stack

KEY = b"customer-4711@example.com"
DIGEST = key_digest(KEY)
UNLISTED = key_digest(b"someone-else")
OTHERS = 5  # records of other keys written first to every partition: offsets 0-4


def others(p: int, i: int) -> bytes:
    return f"other-{p}-{i}".encode()


def written_by_default_partitioner(bootstrap: str, topic: str, values: int) -> int:
    """`values` records with KEY, placed by the producer's own partitioner: the partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    partitions: list[int] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        assert err is None
        partitions.append(int(msg.partition() or 0))

    for i in range(values):
        producer.produce(topic, key=KEY, value=f"profile-{i}".encode(), on_delivery=delivered)
    assert producer.flush(30) == 0
    assert len(set(partitions)) == 1
    return partitions[0]


def written_in_an_aborted_transaction(bootstrap: str, topic: str, partition: int) -> None:
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, key=KEY, value=b"never-committed", partition=partition)
    # Flushed first: an abort drops what the client still queues, and then nothing of
    # the transaction would reach the log.
    txn.flush(30)
    txn.abort_transaction(30)


def key_in(kafka: Kafka, config: dict[str, str], values: int = 1) -> tuple[str, int, int, int]:
    """A 3-partition topic where every partition holds OTHERS records of other keys, then
    KEY `values` times in partition d (the default partitioner's choice) and in partition
    e (written there explicitly): (topic, d, e, the third partition)."""
    topic = kafka.topic({0: OTHERS, 1: OTHERS, 2: OTHERS}, config, key=others)
    d = written_by_default_partitioner(kafka.bootstrap, topic, values)
    e, f = (d + 1) % 3, (d + 2) % 3
    produce(kafka.bootstrap, topic, {e: values}, key=lambda _p, _i: KEY, value=b"copy")
    return topic, d, e, f


def scan(erasure: ErasureAdmin, topic: str, *digests: str) -> dict[int, PartitionScan]:
    """Every partition of `topic` scanned over [log start, high watermark)."""
    tps = [TopicPartition(topic, p) for p in range(3)]
    starts, ends = erasure.log_bounds(tps)
    ranges: dict[TopicPartition, tuple[int, int]] = {}
    for tp in tps:
        start, end = starts[tp], ends[tp]
        assert isinstance(start, int)
        assert isinstance(end, int)
        ranges[tp] = (start, end)
    out = {}
    for tp, found in erasure.scan_keys(ranges, frozenset(digests)).items():
        assert isinstance(found, PartitionScan), found
        out[tp.partition] = found
    return out


def record_at(bootstrap: str, tp: TopicPartition, offset: int) -> tuple[bytes | None, bool]:
    """(key, tombstone) of the record at `offset`, as a plain consumer reads it."""
    reader = RecordReader(bootstrap)
    try:
        (found,) = list(reader.read(tp, offset, offset + 1))
    finally:
        reader.close()
    assert found.offset == offset
    return found.key, found.tombstone


@pytest.fixture
def erasure(bootstrap: str) -> ErasureAdmin:
    return ErasureAdmin(bootstrap)


def test_a_key_is_found_in_every_partition_it_was_written_to_and_in_an_aborted_transaction(
    kafka: Kafka, erasure: ErasureAdmin
) -> None:
    topic, d, e, f = key_in(kafka, {})
    written_in_an_aborted_transaction(kafka.bootstrap, topic, f)
    found = scan(erasure, topic, DIGEST, UNLISTED)
    for p in (d, e, f):
        hits = found[p].hits
        assert list(hits) == [DIGEST], p
        assert (hits[DIGEST].first_offset, hits[DIGEST].values) == (OTHERS, 1)
        # A cut just past the match would take the other keys' records before it.
        assert found[p].collateral_records == OTHERS
    assert found[d].examined == found[e].examined == OTHERS + 1
    # A read_committed consumer (librdkafka's default) never sees the aborted record.
    reader = RecordReader(kafka.bootstrap)
    try:
        committed = list(reader.read(TopicPartition(topic, f), 0, OTHERS + 2))
    finally:
        reader.close()
    assert [r.key for r in committed] == [others(f, i) for i in range(OTHERS)]


def test_tombstones_land_in_each_partition_with_the_bytes_of_the_key(
    kafka: Kafka, erasure: ErasureAdmin
) -> None:
    topic, d, e, f = key_in(kafka, {"cleanup.policy": "compact"})
    tp_d, tp_e = TopicPartition(topic, d), TopicPartition(topic, e)
    before = scan(erasure, topic, DIGEST)
    assert before[d].hits[DIGEST].last_offset == OTHERS
    written = erasure.write_tombstones(
        [
            TombstoneWrite(tp_d, DIGEST, before[d].hits[DIGEST].last_offset),
            # An offset before the key (as where compaction removed the matched record):
            # the writer finds the key's next record itself.
            TombstoneWrite(tp_e, DIGEST, 0),
            # A digest found nowhere: nothing to read the key from, nothing written.
            TombstoneWrite(TopicPartition(topic, f), UNLISTED, 0),
        ]
    )
    for tp in (tp_d, tp_e):
        tomb = written[(tp, DIGEST)]
        assert isinstance(tomb, WrittenTombstone), tomb
        assert tomb.offset == OTHERS + 1
        assert abs(tomb.timestamp_ms - time.time() * 1000) < 60_000
        assert record_at(kafka.bootstrap, tp, tomb.offset) == (KEY, True)
    missing = written[(TopicPartition(topic, f), UNLISTED)]
    assert isinstance(missing, KafkaFailure)
    assert missing.code == "KEY_NOT_FOUND"
    assert "customer-4711" not in str(missing)
    after = scan(erasure, topic, DIGEST)
    assert after[d].hits[DIGEST].tombstones == after[e].hits[DIGEST].tombstones == 1
    assert after[f].end == before[f].end  # nothing written where the key never was


def test_no_tombstone_goes_to_a_delete_topic(kafka: Kafka, erasure: ErasureAdmin) -> None:
    topic, d, _, _ = key_in(kafka, {"cleanup.policy": "delete"})
    before = scan(erasure, topic, DIGEST)
    written = erasure.write_tombstones([TombstoneWrite(TopicPartition(topic, d), DIGEST, OTHERS)])
    refused = written[(TopicPartition(topic, d), DIGEST)]
    assert isinstance(refused, KafkaFailure)
    assert refused.code == "NOT_COMPACTED"
    assert {p: s.end for p, s in scan(erasure, topic, DIGEST).items()} == {
        p: s.end for p, s in before.items()
    }


def test_a_cut_just_past_the_match_keeps_later_records_and_compact_only_topics_refuse_it(
    kafka: Kafka, erasure: ErasureAdmin
) -> None:
    # What the service's fake answers, checked against the broker: DeleteRecords at the
    # last match + 1 answers that low watermark; on cleanup.policy=compact alone Kafka
    # answers POLICY_VIOLATION (compact,delete takes it).
    topic, d, _, _ = key_in(kafka, {"cleanup.policy": "delete"})
    found = scan(erasure, topic, DIGEST)
    cut = found[d].hits[DIGEST].last_offset + 1
    tp = TopicPartition(topic, d)
    assert erasure.delete_records({tp: cut}) == {tp: cut}
    after = scan(erasure, topic, DIGEST)
    assert (after[d].start, after[d].matches, after[d].collateral_records) == (cut, 0, 0)
    compacted, c, _, _ = key_in(kafka, {"cleanup.policy": "compact"})
    refused = erasure.delete_records({TopicPartition(compacted, c): OTHERS + 1})
    failure = refused[TopicPartition(compacted, c)]
    assert isinstance(failure, KafkaFailure)
    assert failure.code == "POLICY_VIOLATION"
    both, b, _, _ = key_in(kafka, {"cleanup.policy": "compact,delete"})
    assert erasure.delete_records({TopicPartition(both, b): 1}) == {TopicPartition(both, b): 1}


def test_group_ids_lists_a_group_that_only_committed(kafka: Kafka, erasure: ErasureAdmin) -> None:
    topic = kafka.topic({0: 3})
    group = kafka.group_at(topic, "reader", {0: 2})
    assert group in erasure.group_ids()
    read = erasure.group_positions({group: [TopicPartition(topic, 0)]})
    assert read[group].positions == {TopicPartition(topic, 0): 2}


@pytest.fixture
def filler(bootstrap: str) -> Iterator[list[str]]:
    """Writes key b"filler" to every partition of the topics appended to the yielded list,
    every 300 ms, while the test waits: a segment rolls only on an append, and the
    cleaner needs fresh dirt to clean again after a tombstone's horizon."""
    topics: list[str] = []
    stop = threading.Event()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def run() -> None:
        while not stop.wait(0.3):
            for topic in list(topics):
                for p in range(3):
                    producer.produce(topic, key=b"filler", value=b"f" * 20, partition=p)
            producer.poll(0)

    thread = threading.Thread(target=run, name="filler", daemon=True)
    thread.start()
    yield topics
    stop.set()
    thread.join(10)
    producer.flush(10)


def test_compaction_removes_the_values_then_the_key_within_two_minutes(
    kafka: Kafka, erasure: ErasureAdmin, filler: list[str]
) -> None:
    topic, d, e, _ = key_in(kafka, FAST_COMPACTION, values=3)
    filler.append(topic)
    found = scan(erasure, topic, DIGEST)
    assert (found[d].hits[DIGEST].values, found[e].hits[DIGEST].values) == (3, 3)
    written = erasure.write_tombstones(
        [
            TombstoneWrite(TopicPartition(topic, p), DIGEST, found[p].hits[DIGEST].last_offset)
            for p in (d, e)
        ]
    )
    assert all(isinstance(w, WrittenTombstone) for w in written.values()), written
    tombstoned = time.monotonic()
    values_gone: float | None = None
    matches: dict[int, int] = {}
    deadline = tombstoned + 120
    while time.monotonic() < deadline:
        now = scan(erasure, topic, DIGEST)
        matches = {p: s.matches for p, s in now.items()}
        if values_gone is None and sum(s.values for s in now.values()) == 0:
            values_gone = time.monotonic() - tombstoned  # ValuesErased
        if sum(matches.values()) == 0:
            key_gone = time.monotonic() - tombstoned  # KeyErased
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"records with the key remain 120 s after the tombstones: {matches}")
    assert values_gone is not None  # set at the latest by the scan that found nothing
    # The figures calibrate the operator's waits (run with -s to see them).
    print(f"\nerasure timing: values gone {values_gone:.1f}s, key gone {key_gone:.1f}s")
