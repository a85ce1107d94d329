"""Orphan cleanup and tiered topics (KIP-405; issue #49, item 4): where a live tiered
partition's records are (log start, earliest local, latest tiered, earliest pending
upload) decides whether an orphan copy of it may hold records nobody else holds; the
offsets a directory holds are read from its own segment files; a live tiered partition
with hardly any local segments stays assigned; and remote storage is never read or
changed, wherever it lies.

The cluster below answers as Kafka does: ListOffsets earliest and the tier offsets per
partition, topic configs per topic, and KafkaUnavailable when the tier read fails."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kafka_retention.adapters.broker_volumes import LocalVolumes
from kafka_retention.adapters.volume_commands import HELD_OFFSETS_SCRIPT, parse_held_offsets
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable, OffsetKind, VolumeError
from kafka_retention.core.orphan_tiers import (
    EMPTY,
    Gap,
    HeldOffsets,
    TiersUnknown,
    gap_hold,
    tier_gap,
)
from kafka_retention.core.orphans import DirName, Entry, judge, live_topic_name
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.tiers import TierOffsets
from kafka_retention.services.watch import orphans as orphan_watch
from tests.helpers.orphans import digest
from tests.helpers.volumes import KINDS, Volumes, run_in, volumes_of

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
OLD = T0 - timedelta(days=30)
CLUSTER = "q1Sh-9_jT3ut0dbGsAS1Yw"
TIERED_ID, PLAIN_ID, GONE_ID = (
    "VElFUkVELXRvcGljLWlkLQ",
    "UExBSU4tdG9waWMtaWQtLQ",
    "R09ORS10b3BpYy1pZC0tLQ",
)
HEX = "0123456789abcdef0123456789abcdef"
STRAY = f"tiered-0.{HEX}-stray"
TP = TopicPartition("tiered", 0)
# Healthy: offsets 0-899 in remote storage, 900 on from the live replicas' disks.
HEALTHY = TierOffsets(earliest_local=900, latest_tiered=899, pending_upload=900)
# A broker in trouble: 600-899 not copied yet, and no longer on the live disks.
BEHIND = TierOffsets(earliest_local=900, latest_tiered=599, pending_upload=600)


# --- where a live tiered partition's records are (pure) ---------------------------


def test_a_healthy_tiered_partition_leaves_no_offset_to_an_orphan() -> None:
    assert tier_gap(0, HEALTHY) is None
    # Fully copied: the broker answers no pending upload at all.
    assert tier_gap(0, TierOffsets(900, 899, None)) is None
    # Nothing copied yet: everything from the log start is local.
    assert tier_gap(0, TierOffsets(0, None, None)) is None
    assert tier_gap(500, TierOffsets(500, None, 500)) is None


def test_offsets_neither_copied_nor_local_are_the_gap() -> None:
    assert tier_gap(0, BEHIND) == Gap(600, 900)
    # The pending upload says less than the latest tiered offset: it wins.
    assert tier_gap(0, TierOffsets(900, 899, 700)) == Gap(700, 900)
    # Nothing copied and the local log starts past the log start.
    assert tier_gap(100, TierOffsets(300, None, None)) == Gap(100, 300)


def test_offsets_below_the_log_start_are_deleted_for_every_reader_and_no_gap() -> None:
    # A cut to 5000 past everything copied: nothing below 5000 can be read any more.
    assert tier_gap(5000, TierOffsets(5000, 999, None)) is None
    assert tier_gap(800, BEHIND) == Gap(800, 900)


def test_no_earliest_local_offset_means_the_tiers_are_unknown() -> None:
    with pytest.raises(TiersUnknown):
        tier_gap(0, TierOffsets(None, 899, 900))


def test_an_orphan_holding_gap_offsets_is_held_and_says_which() -> None:
    gap = Gap(600, 900)
    held = gap_hold(gap, HeldOffsets(0, 650))
    assert held is not None
    assert "holds offsets 0-650, and offsets 600-899 are neither in remote storage" in held
    assert gap_hold(gap, HeldOffsets(899, 899)) is not None
    assert gap_hold(gap, HeldOffsets(0, 599)) is None  # all in remote storage
    assert gap_hold(gap, HeldOffsets(900, 1200)) is None  # all on the live disks
    assert gap_hold(gap, EMPTY) is None  # no record at all
    unknown = gap_hold(gap, None, "not read")
    assert unknown is not None
    assert unknown.endswith("are unknown (not read)")


def test_the_live_topic_of_a_copy_is_found_by_name_or_by_a_strays_id() -> None:
    live = {"tiered": (TIERED_ID, {0: {1}})}
    assert live_topic_name(DirName("partition", "tiered", 0), TIERED_ID, live) == "tiered"
    assert live_topic_name(DirName("partition", "tiered", 0), None, live) == "tiered"
    # A stray's name may be cut short: its topic id finds the topic.
    assert live_topic_name(DirName("stray", "tier", 0), TIERED_ID, live) == "tiered"
    # Another id: the topic was deleted and made again, the copy is the old one's.
    assert live_topic_name(DirName("partition", "tiered", 0), GONE_ID, live) is None
    assert live_topic_name(DirName("partition", "gone", 0), None, live) is None


def test_a_stray_whose_short_name_spells_another_live_topic_is_found_by_its_id() -> None:
    # "tier" is a live topic of its own; the stray named "tier" (cut short) holds a copy of
    # "tiered", as its id says: the tiered topic's holds apply to it.
    live = {"tiered": (TIERED_ID, {0: {1}}), "tier": (GONE_ID, {0: {1}})}
    assert live_topic_name(DirName("stray", "tier", 0), TIERED_ID, live) == "tiered"
    assert live_topic_name(DirName("stray", "tier", 0), GONE_ID, live) == "tier"


def test_the_brokers_own_directories_are_never_judged_orphans() -> None:
    """Judged alone (as the last look before a removal judges), not only left out of a
    listing: the remote index cache and the metadata log are the broker's."""
    for name in ("remote-log-index-cache", "__cluster_metadata-0"):
        found = judge(1, Entry(name, True, False, 10, 0, None), {"t": (TIERED_ID, {})}, True)
        assert (found.verdict, found.reason) == ("kept", "the broker's own")


# --- the offsets a directory holds, from its segment files ------------------------


BUSYBOX_APPLETS = ("sh", "stat", "od", "tail")


@pytest.fixture(params=KINDS)
def volumes(request: pytest.FixtureRequest, tmp_path: Path) -> Volumes:
    """The same reads on this machine, and through exec with dash and GNU coreutils and
    with busybox (what a minimal broker image has)."""
    return volumes_of(request.param, tmp_path, BUSYBOX_APPLETS)


def batch(base: int, records: int, body: int = 40, magic: int = 2) -> bytes:
    """A record batch as Kafka lays it out: base offset, length, leader epoch, magic,
    crc, attributes, last offset delta, then the rest (zeros: never read)."""
    rest = struct.pack(">iBIhi", 0, magic, 0, 0, records - 1) + bytes(body)
    return struct.pack(">qi", base, len(rest)) + rest


def segment(d: Path, base: int, data: bytes) -> None:
    (d / f"{base:020d}.log").write_bytes(data)
    (d / f"{base:020d}.index").write_bytes(bytes(64))  # what is in it is never read


def partition_dir(
    log_dir: Path, name: str, topic_id: str, segments: Mapping[int, bytes], when: datetime = OLD
) -> Path:
    d = log_dir / name
    d.mkdir()
    for base, data in segments.items():
        segment(d, base, data)
    (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    for f in d.iterdir():
        os.utime(f, (when.timestamp(), when.timestamp()))
    return d


def test_the_held_offsets_run_from_the_first_segment_to_the_last_whole_batch(
    tmp_path: Path,
    volumes: Volumes,
) -> None:
    first = batch(500, 10) + batch(510, 90)
    # The last segment ends in a batch cut off half way (a crash mid-write): not counted.
    last = batch(600, 50) + batch(650, 25) + batch(675, 100)[:30]
    partition_dir(tmp_path, STRAY, TIERED_ID, {500: first, 600: last, 700: b""})
    assert volumes.held_offsets(str(tmp_path), STRAY) == HeldOffsets(500, 674)


def test_a_last_segment_without_a_whole_batch_falls_back_to_the_one_before(
    tmp_path: Path,
    volumes: Volumes,
) -> None:
    partition_dir(tmp_path, STRAY, TIERED_ID, {0: batch(0, 5), 5: bytes(100)})
    assert volumes.held_offsets(str(tmp_path), STRAY) == HeldOffsets(0, 4)


def test_old_message_formats_count_by_the_entry_offset(tmp_path: Path, volumes: Volumes) -> None:
    partition_dir(tmp_path, STRAY, TIERED_ID, {0: batch(0, 1, magic=1) + batch(7, 1, magic=1)})
    assert volumes.held_offsets(str(tmp_path), STRAY) == HeldOffsets(0, 7)


def test_segments_without_records_hold_no_offset(tmp_path: Path, volumes: Volumes) -> None:
    partition_dir(tmp_path, STRAY, TIERED_ID, {900: b""})
    assert volumes.held_offsets(str(tmp_path), STRAY) == EMPTY


def test_segments_with_bytes_but_no_whole_batch_are_unknown_not_empty(
    tmp_path: Path, volumes: Volumes
) -> None:
    partition_dir(tmp_path, STRAY, TIERED_ID, {0: batch(0, 5)[:20], 9: bytes(64)})
    with pytest.raises(VolumeError):
        volumes.held_offsets(str(tmp_path), STRAY)


def test_a_symlinked_segment_is_never_followed(tmp_path: Path, volumes: Volumes) -> None:
    d = partition_dir(tmp_path, STRAY, TIERED_ID, {0: batch(0, 5)})
    outside = tmp_path / "outside.log"
    outside.write_bytes(batch(5, 1000))
    (d / f"{5:020d}.log").symlink_to(outside)
    assert volumes.held_offsets(str(tmp_path), STRAY) == HeldOffsets(0, 4)


def test_only_a_partition_directory_name_is_read(tmp_path: Path, volumes: Volumes) -> None:
    with pytest.raises((ValueError, VolumeError), match="not a removable partition directory"):
        volumes.held_offsets(str(tmp_path), "../etc")


def index_entry(relative_offset: int, position: int) -> bytes:
    return struct.pack(">ii", relative_offset, position)


def held_within(log_dir: Path, name: str, steps: int) -> HeldOffsets:
    """The exec script's answer when it may walk at most `steps` batch headers."""
    argv = ["sh", "-c", HELD_OFFSETS_SCRIPT, "kr", str(log_dir), name, str(steps)]
    return parse_held_offsets(run_in(None)(argv))


def test_through_exec_the_walk_starts_at_the_offset_indexs_last_entry(tmp_path: Path) -> None:
    batches = [batch(100 + 10 * i, 10) for i in range(20)]  # offsets 100-299
    d = partition_dir(tmp_path, STRAY, TIERED_ID, {100: b"".join(batches)})
    last_at = sum(len(b) for b in batches[:-1])
    # Kafka's offset index entry: a batch's last offset (relative), where it starts.
    (d / f"{100:020d}.index").write_bytes(index_entry(189, last_at - len(batches[-2])) * 2)
    assert held_within(tmp_path, STRAY, 3) == HeldOffsets(100, 299)
    # Without the index, 20 batches are too many to walk in 3 steps: unknown, not a guess.
    (d / f"{100:020d}.index").write_bytes(b"")
    with pytest.raises(ValueError, match="no whole record batch found within reach"):
        held_within(tmp_path, STRAY, 3)
    assert held_within(tmp_path, STRAY, 20) == HeldOffsets(100, 299)


def test_through_exec_an_index_entry_that_does_not_hold_still_gives_the_right_offsets(
    tmp_path: Path,
) -> None:
    batches = [batch(10 * i, 10) for i in range(6)]  # offsets 0-59
    d = partition_dir(tmp_path, STRAY, TIERED_ID, {0: b"".join(batches)})
    # Points into the middle of a batch, and names an offset past the segment's end.
    (d / f"{0:020d}.index").write_bytes(index_entry(500, len(batches[0]) + 7))
    assert held_within(tmp_path, STRAY, 10) == HeldOffsets(0, 59)
    (d / f"{0:020d}.index").write_bytes(index_entry(500, len(batches[0])))
    assert held_within(tmp_path, STRAY, 10) == HeldOffsets(0, 59)


# --- the check of a policy run --------------------------------------------------------


class TieredCluster:
    """Metadata, topic configs, log starts and tier offsets as Kafka answers them; the
    tier read raises KafkaUnavailable while `tiers_down`, and counts its calls."""

    def __init__(self, dirs: Mapping[int, Path], placements: dict[str, Any]) -> None:
        self.dirs, self.placements_now = dirs, placements
        self.configs: dict[str, dict[str, str] | KafkaFailure] = {
            "tiered": {"remote.storage.enable": "true", "local.retention.ms": "1000"},
            "plain": {"cleanup.policy": "delete"},
        }
        self.starts: dict[TopicPartition, int] = {TP: 0}
        self.tiers: dict[TopicPartition, TierOffsets] = {TP: HEALTHY}
        self.tiers_down = False
        self.tier_reads: list[list[TopicPartition]] = []

    def placements(self) -> dict[str, Any]:
        return self.placements_now

    def broker_configs(self) -> dict[int, dict[str, str]]:
        return {b: {"log.dirs": str(d), "log.retention.hours": "168"} for b, d in self.dirs.items()}

    def cluster_id(self) -> str:
        return CLUSTER

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str] | KafkaFailure]:
        return {
            t: self.configs.get(t, KafkaFailure("UNKNOWN_TOPIC_OR_PART", "no topic", False))
            for t in topics
        }

    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> dict[TopicPartition, int | KafkaFailure]:
        assert kind == "earliest"
        return {tp: self.starts[tp] for tp in tps}

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, TierOffsets]:
        wanted = list(tps)
        self.tier_reads.append(wanted)
        if self.tiers_down:
            raise KafkaUnavailable("tier offsets: group reader: broker 2 timed out")
        return {tp: self.tiers[tp] for tp in wanted}


class ConfigsOnly:
    """A cluster view that reads topic configs but no tier offsets."""

    def __init__(self, inner: TieredCluster) -> None:
        self.inner = inner

    def placements(self) -> dict[str, Any]:
        return self.inner.placements()

    def broker_configs(self) -> dict[int, dict[str, str]]:
        return self.inner.broker_configs()

    def cluster_id(self) -> str:
        return CLUSTER

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str] | KafkaFailure]:
        return self.inner.topic_configs(topics)


class Recording(LocalVolumes):
    """LocalVolumes noting every path it lists, reads offsets in and removes."""

    def __init__(self) -> None:
        self.touched: list[str] = []

    def list(self, log_dir: str) -> list[Any]:
        self.touched.append(log_dir)
        return super().list(log_dir)

    def held_offsets(self, log_dir: str, name: str) -> HeldOffsets:
        self.touched.append(os.path.join(log_dir, name))
        return super().held_offsets(log_dir, name)

    def remove(self, log_dir: str, name: str) -> None:
        self.touched.append(os.path.join(log_dir, name))
        super().remove(log_dir, name)


class NoOffsets(LocalVolumes):
    """A BrokerVolumes that cannot read segment offsets (no held_offsets method)."""

    held_offsets = None  # type: ignore[assignment]


def write_meta(log_dir: Path, node: int) -> None:
    (log_dir / "meta.properties").write_text(
        f"version=1\ndirectory.id=ZGlyZWN0b3J5LWlkLXgtMQ\ncluster.id={CLUSTER}\nnode.id={node}\n"
    )


@pytest.fixture
def brokers(tmp_path: Path) -> dict[int, Path]:
    out = {}
    for b in (1, 2, 3):
        d = tmp_path / f"broker-{b}" / "data"
        d.mkdir(parents=True)
        write_meta(d, b)
        out[b] = d
    return out


def spec(**orphans: Any) -> Any:
    return parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092", "brokers": {"access": "local"}},
            "orphanPartitions": {"enabled": True, "removalDelay": "1h", **orphans},
        }
    )


def twice(cluster: Any, volumes: LocalVolumes | None = None, **orphans: Any) -> Any:
    """A first check at T0, then the one an hour later, when the delay has passed."""
    used = [volumes or LocalVolumes()]
    first = orphan_watch.check(spec(**orphans), {}, cluster, used, T0)
    assert first is not None
    report = orphan_watch.check(
        spec(**orphans), first.status, cluster, used, T0 + timedelta(hours=1)
    )
    assert report is not None
    return report


def entries(report: Any) -> dict[str, tuple[str, str]]:
    return {e["name"]: (e["state"], e["reason"]) for e in report.status["orphans"]}


PLACEMENTS = {"tiered": (TIERED_ID, {0: {1}}), "plain": (PLAIN_ID, {0: {1}})}
RECORDS = {0: batch(0, 600), 600: batch(600, 300)}  # offsets 0-899


def test_a_live_tiered_partition_with_no_local_segments_is_assigned_and_never_removed(
    brokers: dict[int, Path],
) -> None:
    # Everything before 900 is remote; broker 1 keeps only an empty active segment.
    live = partition_dir(brokers[1], "tiered-0", TIERED_ID, {900: b""})
    plain = partition_dir(brokers[1], "plain-0", PLAIN_ID, {0: batch(0, 10)})
    cluster = TieredCluster(brokers, PLACEMENTS)
    before = {p: digest(p) for p in (live, plain)}
    report = twice(cluster)
    assert entries(report) == {}
    assert report.removed == []
    assert report.orphans == 0
    assert {p: digest(p) for p in (live, plain)} == before
    assert cluster.tier_reads == []  # no orphan of a live tiered topic: nothing to ask


def test_a_stray_of_a_healthy_tiered_partition_is_removed_after_its_delay(
    brokers: dict[int, Path],
) -> None:
    partition_dir(brokers[1], "tiered-0", TIERED_ID, {900: b""})
    stray = partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    copy = partition_dir(brokers[3], "tiered-0", TIERED_ID, RECORDS)  # left by a move
    cluster = TieredCluster(brokers, PLACEMENTS)
    report = twice(cluster)
    assert entries(report) == {
        STRAY: ("Removed", "stray replica renamed by the broker"),
        "tiered-0": ("Removed", "not assigned to broker 3"),
    }
    assert not stray.exists()
    assert not copy.exists()
    assert cluster.tier_reads == [[TP], [TP]]  # one read per check, for both copies


def test_a_stray_holding_offsets_not_yet_copied_is_held_until_they_are(
    brokers: dict[int, Path],
) -> None:
    stray = partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.tiers[TP] = BEHIND
    held = twice(cluster)
    state, reason = entries(held)[STRAY]
    assert state == "Kept"
    assert reason == (
        "stray replica renamed by the broker; held: tiered topic: holds offsets 0-899, and "
        "offsets 600-899 are neither in remote storage nor on the live replicas' disks "
        "(the remote log manager may still need them)"
    )
    assert held.removed == []
    assert stray.exists()
    # Still an orphan: counted, its first sighting kept.
    assert held.orphans == 1
    (entry,) = held.status["orphans"]
    assert entry["firstSeen"] == "2026-11-22T12:00:00Z"
    # The remote log manager catches up: removed at the next check, no new delay.
    cluster.tiers[TP] = HEALTHY
    later = orphan_watch.check(
        spec(), held.status, cluster, [LocalVolumes()], T0 + timedelta(hours=1, minutes=1)
    )
    assert later is not None
    assert entries(later)[STRAY][0] == "Removed"
    assert not stray.exists()


def test_a_stray_whose_offsets_are_all_copied_or_local_goes_despite_a_gap(
    brokers: dict[int, Path],
) -> None:
    below = partition_dir(brokers[2], STRAY, TIERED_ID, {0: batch(0, 600)})  # 0-599: remote
    above = f"tiered-0.{'f' * 32}-stray"
    partition_dir(brokers[3], above, TIERED_ID, {900: batch(900, 50)})  # 900-949: local
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.tiers[TP] = BEHIND
    report = twice(cluster)
    assert {n: s for n, (s, _) in entries(report).items()} == {
        STRAY: "Removed",
        above: "Removed",
    }
    assert not below.exists()
    assert not (brokers[3] / above).exists()


def test_unreadable_tier_offsets_hold_tiered_strays_only(brokers: dict[int, Path]) -> None:
    tiered = partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    plain_stray = f"plain-0.{HEX}-stray"
    partition_dir(brokers[2], plain_stray, PLAIN_ID, {0: batch(0, 10)})
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.tiers_down = True
    report = twice(cluster)
    assert entries(report) == {
        STRAY: (
            "Kept",
            "stray replica renamed by the broker; held: tiered topic: tier offsets "
            "unreadable: tier offsets: group reader: broker 2 timed out",
        ),
        plain_stray: ("Removed", "stray replica renamed by the broker"),
    }
    assert tiered.exists()


def test_a_tiered_stray_is_held_where_tier_offsets_cannot_be_read_at_all(
    brokers: dict[int, Path],
) -> None:
    partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    report = twice(ConfigsOnly(TieredCluster(brokers, PLACEMENTS)))
    assert entries(report)[STRAY] == (
        "Kept",
        "stray replica renamed by the broker; held: tiered topic: this operator cannot read "
        "tier offsets",
    )


def test_a_topic_whose_configs_do_not_read_holds_its_strays(brokers: dict[int, Path]) -> None:
    partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.configs["tiered"] = KafkaFailure("REQUEST_TIMED_OUT", "timed out", True)
    state, reason = entries(twice(cluster))[STRAY]
    assert state == "Kept"
    assert reason.endswith(
        "held: whether the topic is tiered is unknown: REQUEST_TIMED_OUT: timed out"
    )
    assert cluster.tier_reads == []


def test_a_volume_that_cannot_read_offsets_holds_a_stray_only_while_there_is_a_gap(
    brokers: dict[int, Path],
) -> None:
    stray = partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.tiers[TP] = BEHIND
    state, reason = entries(twice(cluster, NoOffsets()))[STRAY]
    assert state == "Kept"
    assert reason.endswith(
        "offsets 600-899 are neither in remote storage nor on the live replicas' disks, and "
        "the offsets this directory holds are unknown (not read through this access to "
        "broker volumes)"
    )
    cluster.tiers[TP] = HEALTHY
    assert entries(twice(cluster, NoOffsets()))[STRAY][0] == "Removed"
    assert not stray.exists()


def test_a_dry_run_says_a_tiered_stray_would_be_held(brokers: dict[int, Path]) -> None:
    partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.tiers[TP] = BEHIND
    state, reason = entries(twice(cluster, dryRun=True))[STRAY]
    assert (state, "held: tiered topic: holds offsets 0-899" in reason) == ("Kept", True)


def test_an_orphan_of_a_deleted_tiered_topic_needs_no_tier_read(brokers: dict[int, Path]) -> None:
    old = partition_dir(brokers[2], "tiered-0", GONE_ID, RECORDS)  # the topic made again
    gone = partition_dir(brokers[2], "dropped-0", GONE_ID, RECORDS)
    cluster = TieredCluster(brokers, PLACEMENTS)
    cluster.tiers[TP] = BEHIND
    report = twice(cluster)
    assert {n: s for n, (s, _) in entries(report).items()} == {
        "tiered-0": "Removed",
        "dropped-0": "Removed",
    }
    assert not old.exists()
    assert not gone.exists()
    assert cluster.tier_reads == []


def remote_store(root: Path) -> Path:
    """A remote store laid out as LocalTieredStorage lays it out: one directory per
    partition, `<topic>-<partition>-<topic id>`, of `<offset>-<segment id>` files. This
    topic id ends in a digit, so the directory's name also reads as partition 9 of topic
    `tiered-0-VElFUkVELXRvcGljLWlk`."""
    store = root / "kafka-tiered-storage"
    d = store / "tiered-0-VElFUkVELXRvcGljLWlk9"
    d.mkdir(parents=True)
    for name in (
        "00000000000000000000-c2VnbWVudC0xLWlkLS0tLQ.log",
        "00000000000000000000-c2VnbWVudC0xLWlkLS0tLQ.index",
    ):
        (d / name).write_bytes(os.urandom(200))
        # Old enough for removal by age: only the remote rule may keep them.
        os.utime(d / name, (OLD.timestamp(), OLD.timestamp()))
    return store


def test_remote_storage_is_never_read_or_changed_wherever_it_lies(
    brokers: dict[int, Path],
) -> None:
    # The stack's layout (the store beside the brokers' directories), and a store put in
    # a log dir by mistake.
    beside = remote_store(brokers[1].parent.parent)
    inside = remote_store(brokers[2])
    (brokers[3] / "tiered-0-VElFUkVELXRvcGljLWlk9").symlink_to(
        beside / "tiered-0-VElFUkVELXRvcGljLWlk9", target_is_directory=True
    )
    # What a broker with tiered storage keeps in its log dir: remote indexes it cached.
    cache = brokers[1] / "remote-log-index-cache"
    cache.mkdir()
    (cache / "00000000000000000000_c2VnbWVudC0xLWlkLS0tLQ.index").write_bytes(bytes(80))
    stray = partition_dir(brokers[2], STRAY, TIERED_ID, RECORDS)
    before = {p: digest(p) for p in (beside, inside, cache)}
    cluster = TieredCluster(brokers, PLACEMENTS)
    volumes = Recording()
    report = twice(cluster, volumes)
    assert entries(report)[STRAY][0] == "Removed"
    assert not stray.exists()
    assert entries(report)["kafka-tiered-storage"] == (
        "Kept",
        "not a Kafka partition directory name",
    )
    assert entries(report)["tiered-0-VElFUkVELXRvcGljLWlk9"] == ("Kept", "symlink, never followed")
    assert "remote-log-index-cache" not in entries(report)  # the broker's own: not listed
    assert {p: digest(p) for p in (beside, inside, cache)} == before
    log_dirs = {str(d) for d in brokers.values()}
    assert set(volumes.touched) == log_dirs | {str(brokers[2] / STRAY)}
