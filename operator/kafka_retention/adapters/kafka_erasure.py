"""The Kafka side of a RecordErasure (services.ports.ErasureKafka): where the listed keys
occur, by the SHA-256 of every key read, and tombstones written with the exact key bytes
read back from the log.

Scans read uncommitted records too, up to the high watermark: an aborted transaction's
records are never shown to a read_committed consumer, yet they stay in the log until
compaction or retention removes them. Key bytes live in local variables for the moment
it takes to hash or write them; logs and failures carry offsets, counts and digests.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from confluent_kafka import ConsumerGroupType

from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.kafka_calls import failure, wait
from kafka_retention.adapters.kafka_records import RecordReader
from kafka_retention.adapters.kafka_writes import TombstoneWriter
from kafka_retention.core.erasure import key_digest
from kafka_retention.core.erasure_deadlines import Cleaning
from kafka_retention.core.erasure_scan import (
    KeyMatcher,
    PartitionScan,
    ScanTally,
    TombstoneWrite,
    WrittenTombstone,
)
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable

log = logging.getLogger(__name__)

# Partitions one reader assignment covers: one fetch round per broker for all of them,
# and a failed round costs only its own partitions.
ROUND_PARTITIONS = 500
# A point read of one record: a broker still sends a whole first batch, up to this.
POINT_FETCH_BYTES = 1024 * 1024

Answers = dict[tuple[TopicPartition, str], WrittenTombstone | KafkaFailure]


class ErasureAdmin(KafkaAdmin):
    """KafkaAdmin (offsets, group positions, DeleteRecords for a cut) with what an
    erasure adds: scan_keys, write_tombstones and group_ids."""

    def _reader(self, **kwargs: Any) -> RecordReader:
        return RecordReader(
            self._bootstrap,
            {
                **self._client_config,
                "isolation.level": "read_uncommitted",
                # A range whose start retention has passed since it was read resumes at
                # the new log start (what is below is gone), never at the end, which
                # would read as "no match here".
                "auto.offset.reset": "earliest",
            },
            **kwargs,
        )

    def _writer(self) -> TombstoneWriter:
        return TombstoneWriter(self._bootstrap, self._client_config)

    # --- groups -----------------------------------------------------------------------

    def group_ids(self) -> list[str]:
        """Consumer and classic groups, as librdkafka lists them: the groups whose
        positions tell who has not read a match yet (share and streams groups are not
        listed here; spec.protectGroups names them and group_positions reads them)."""
        try:
            listing = wait(
                self._admin.list_consumer_groups(request_timeout=self._timeout),
                self._timeout + 5,
            )
        except Exception as exc:
            # Not an empty list: "no group has read past a match" would be a claim.
            raise self._unavailable(f"listing consumer groups: {failure(exc)}") from exc
        kinds = (ConsumerGroupType.CONSUMER, ConsumerGroupType.CLASSIC)
        return sorted(g.group_id for g in listing.valid if g.type in kinds)

    # --- scanning ---------------------------------------------------------------------

    def scan_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], digests: AbstractSet[str]
    ) -> dict[TopicPartition, PartitionScan | KafkaFailure]:
        """Every record of each [start, end) read and its key matched against the digests.
        A round that fails fails its own partitions (a partial scan is no evidence); when
        one fails before any record arrived, the rounds after it are not tried."""
        matcher = KeyMatcher(digests)
        items = list(ranges.items())
        out: dict[TopicPartition, PartitionScan | KafkaFailure] = {}
        unreachable: KafkaFailure | None = None
        reader = self._reader()
        try:
            for i in range(0, len(items), ROUND_PARTITIONS):
                part = dict(items[i : i + ROUND_PARTITIONS])
                if unreachable is not None:
                    out.update(dict.fromkeys(part, unreachable))
                    continue
                tallies = {tp: ScanTally(tp, s, e, matcher) for tp, (s, e) in part.items()}
                read = 0
                try:
                    for tp, rec in reader.read_many(part):
                        if rec.offset < part[tp][0]:
                            continue  # an offset reset went to a log start below the range
                        tallies[tp].add(
                            rec.offset, rec.timestamp_ms, rec.key, rec.tombstone, rec.size
                        )
                        read += 1
                except KafkaUnavailable as exc:
                    failure = KafkaFailure("KAFKA_UNAVAILABLE", str(exc), True)
                    out.update(dict.fromkeys(part, failure))
                    if read == 0:
                        unreachable = failure
                    continue
                out.update({tp: tally.result() for tp, tally in tallies.items()})
        finally:
            reader.close()
        scans = [s for s in out.values() if isinstance(s, PartitionScan)]
        log.info(
            "erasure scan of %d partitions for %d digests: %d records examined, "
            "%d matching, %d partitions failed",
            len(items),
            len(matcher),
            sum(s.examined for s in scans),
            sum(s.matches for s in scans),
            len(out) - len(scans),
        )
        return out

    # --- writing ----------------------------------------------------------------------

    def write_tombstones(self, writes: Iterable[TombstoneWrite]) -> Answers:
        """A tombstone per (partition, digest), to that partition exactly, with the key
        bytes of the record at key_offset, or of the first record with that digest after
        it (compaction keeps a key's latest record, so a key removed at key_offset has a
        later one). Refused, with nothing written, on a topic that is not compacted: there
        a null value erases nothing and stores the key once more."""
        wanted: dict[tuple[TopicPartition, str], TombstoneWrite] = {}
        for w in writes:
            wanted.setdefault((w.tp, w.digest), w)
        out: Answers = {}
        if not wanted:
            return out
        refused = self._not_compacted({w.tp.topic for w in wanted.values()})
        for k, w in wanted.items():
            if w.tp.topic in refused:
                out[k] = refused[w.tp.topic]
        todo = {k: w for k, w in wanted.items() if k not in out}
        keys = self._read_keys(todo, out) if todo else {}
        try:
            order = list(keys)
            if order:
                writer = self._writer()
                try:
                    results = writer.tombstones([(tp, keys[(tp, d)]) for tp, d in order])
                finally:
                    writer.close()
                out.update(zip(order, results, strict=True))
        finally:
            keys.clear()
        failed = [k for k, v in out.items() if isinstance(v, KafkaFailure)]
        log.info(
            "erasure tombstones: %d written, %d failed%s",
            len(out) - len(failed),
            len(failed),
            "".join(f"; {tp} {d[:12]}: {out[(tp, d)]}" for tp, d in failed[:5]),
        )
        return out

    def _not_compacted(self, topics: set[str]) -> dict[str, KafkaFailure]:
        refused: dict[str, KafkaFailure] = {}
        for topic, config in self.topic_configs(sorted(topics)).items():
            if isinstance(config, KafkaFailure):
                refused[topic] = config
                continue
            kind = Cleaning.from_config(config, topic).kind
            if kind != "compacted":
                refused[topic] = KafkaFailure(
                    "NOT_COMPACTED",
                    f"topic {topic} is {kind} (cleanup.policy "
                    f"{config.get('cleanup.policy', 'delete')}): a tombstone there would "
                    "erase nothing and store the key once more",
                    False,
                )
        return refused

    def _read_keys(
        self, todo: Mapping[tuple[TopicPartition, str], TombstoneWrite], out: Answers
    ) -> dict[tuple[TopicPartition, str], bytes]:
        """The key bytes for each write, checked against its digest; a write whose key
        cannot be found gets its failure in `out`."""
        keys: dict[tuple[TopicPartition, str], bytes] = {}
        if not todo:
            return keys
        starts, ends = self.log_bounds({w.tp for w in todo.values()})
        ranges: dict[tuple[TopicPartition, str], tuple[int, int]] = {}
        for k, w in todo.items():
            start, end = starts[w.tp], ends[w.tp]
            if isinstance(start, KafkaFailure):
                out[k] = start
            elif isinstance(end, KafkaFailure):
                out[k] = end
            else:
                ranges[k] = (max(w.key_offset, start), end)
        reader = self._reader(partition_fetch_bytes=POINT_FETCH_BYTES)
        try:
            misses = self._point_reads(reader, ranges, keys, out)
            for k in misses:  # compaction moved the key on: look further, one by one
                try:
                    found = self._first_with_digest(reader, k, ranges[k])
                except KafkaUnavailable as exc:
                    out[k] = KafkaFailure("KAFKA_UNAVAILABLE", str(exc), True)
                    continue
                if found is None:
                    out[k] = KafkaFailure(
                        "KEY_NOT_FOUND",
                        f"no record with digest {k[1]} in {k[0]} at or after offset "
                        f"{todo[k].key_offset}: compaction or retention removed it",
                        False,
                    )
                else:
                    keys[k] = found
        finally:
            reader.close()
        return keys

    @staticmethod
    def _point_reads(
        reader: RecordReader,
        ranges: Mapping[tuple[TopicPartition, str], tuple[int, int]],
        keys: dict[tuple[TopicPartition, str], bytes],
        out: Answers,
    ) -> list[tuple[TopicPartition, str]]:
        """The first record at or after each write's offset, in rounds with each
        partition once (one assignment a round); the writes it did not satisfy. A round
        the cluster did not answer fails its writes in `out` rather than searching on."""
        pending = [k for k, (lo, hi) in ranges.items() if lo < hi]
        misses = [k for k, (lo, hi) in ranges.items() if lo >= hi]
        while pending:
            round_: list[tuple[TopicPartition, str]] = []
            rest: list[tuple[TopicPartition, str]] = []
            seen: set[TopicPartition] = set()
            for k in pending:
                (rest if k[0] in seen else round_).append(k)
                seen.add(k[0])
            pending = rest
            first: dict[TopicPartition, bytes | None] = {}
            try:
                for tp, rec in reader.read_many({k[0]: ranges[k] for k in round_}, first=1):
                    first[tp] = rec.key
            except KafkaUnavailable as exc:
                out.update(dict.fromkeys(round_, KafkaFailure("KAFKA_UNAVAILABLE", str(exc), True)))
                continue
            for k in round_:
                key = first.get(k[0])
                if key is not None and key_digest(key) == k[1]:
                    keys[k] = key
                else:
                    misses.append(k)
        return misses

    @staticmethod
    def _first_with_digest(
        reader: RecordReader, k: tuple[TopicPartition, str], span: tuple[int, int]
    ) -> bytes | None:
        tp, digest = k
        if span[0] >= span[1]:
            return None
        matcher = KeyMatcher([digest])
        records = reader.read_many({tp: span})
        try:
            for _, rec in records:
                if matcher.match(rec.key) is not None:
                    return rec.key
        finally:
            # Closed now, not whenever it is collected: its cleanup unassigns the
            # reader, which must not happen in the middle of a later read.
            if isinstance(records, Generator):
                records.close()
        return None
