"""The orphan check of a policy run on real directories (LocalVolumes on temp dirs built
like three brokers' log dirs) against cluster metadata that changes between reads: the
removal delay held across checks and restarts, dry runs, a directory assigned again, the
fresh read before a removal, minAge, and assigned directories left byte for byte. Then
whose disk it is: another cluster's log dir, another broker's node.id, a missing
cluster.id or meta.properties, metadata without topics and a broker losing most of its
directories each hold removals, and say so in OrphansFound."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kafka_retention.adapters.broker_volumes import LocalVolumes
from kafka_retention.core import conditions as cond
from kafka_retention.core.failures import ExecFailed
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.services.watch import orphans as orphan_watch

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
LIVE_ID, OLD_ID = "AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"
CLUSTER, OTHER_CLUSTER = "q1Sh-9_jT3ut0dbGsAS1Yw", "Zm9yZWlnbi1jbHVzdGVyLQ"
OLD = T0 - timedelta(days=30)


class Cluster:
    """Metadata answers as Kafka gives them; `after_first` replaces the assignment from
    the second read on (a partition moved back between the check and the removal), and
    `ids` are the answers of successive cluster id reads (the last one repeats)."""

    def __init__(self, dirs: Mapping[int, Path], placements: dict[str, Any]) -> None:
        self.dirs, self.placements_now = dirs, placements
        self.after_first: dict[str, Any] | None = None
        self.reads = 0
        self.ids = [CLUSTER]
        self.id_reads = 0

    def placements(self) -> dict[str, Any]:
        self.reads += 1
        if self.reads > 1 and self.after_first is not None:
            return self.after_first
        return self.placements_now

    def broker_configs(self) -> dict[int, dict[str, str]]:
        return {b: {"log.dirs": str(d), "log.retention.hours": "168"} for b, d in self.dirs.items()}

    def cluster_id(self) -> str:
        self.id_reads += 1
        return self.ids[min(self.id_reads, len(self.ids)) - 1]


class Recording(LocalVolumes):
    """LocalVolumes that notes which log dirs were listed and which dirs removed."""

    def __init__(self) -> None:
        self.listed: list[str] = []
        self.removed: list[str] = []

    def list(self, log_dir: str) -> list[Any]:
        self.listed.append(log_dir)
        return super().list(log_dir)

    def remove(self, log_dir: str, name: str) -> None:
        self.removed.append(name)
        super().remove(log_dir, name)


def write_meta(log_dir: Path, node: int | None, cluster: str | None = CLUSTER) -> None:
    lines = ["version=1", "directory.id=ZGlyZWN0b3J5LWlkLXgtMQ"]
    if cluster is not None:
        lines.append(f"cluster.id={cluster}")
    if node is not None:
        lines.append(f"node.id={node}")
    (log_dir / "meta.properties").write_text("\n".join(lines) + "\n")


def make_dir(log_dir: Path, name: str, topic_id: str, when: datetime = OLD) -> Path:
    d = log_dir / name
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(os.urandom(300))
    (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    for f in d.iterdir():
        os.utime(f, (when.timestamp(), when.timestamp()))
    return d


OTHER_TOPIC_ID = "CCCCCCCCCCCCCCCCCCCCCC"


def host(log_dir: Path, topic: str, partitions: int, topic_id: str = OTHER_TOPIC_ID) -> set[str]:
    """The partition dirs of a topic this broker serves (what a real broker holds)."""
    return {make_dir(log_dir, f"{topic}-{p}", topic_id).name for p in range(partitions)}


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        h.update(str(f.relative_to(path)).encode())
        if f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()


@pytest.fixture
def brokers(tmp_path: Path) -> dict[int, Path]:
    out = {}
    for b in (1, 2, 3):
        d = tmp_path / f"broker-{b}"
        d.mkdir()
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


def check(
    cluster: Cluster,
    status: Mapping[str, Any],
    at: datetime,
    volumes: LocalVolumes | None = None,
    **orphans: Any,
) -> Any:
    used = [volumes or LocalVolumes()]
    report = orphan_watch.check(spec(**orphans), status, cluster, used, at)
    assert report is not None
    return report


def states(report: Any) -> dict[str, str]:
    return {e["name"]: e["state"] for e in report.status["orphans"]}


def test_an_orphan_is_held_through_the_delay_then_removed_and_assigned_dirs_kept(
    brokers: dict[int, Path],
) -> None:
    assigned = make_dir(brokers[1], "t-0", LIVE_ID)
    copy = make_dir(brokers[2], "t-0", LIVE_ID)  # t-0 lives on broker 1 only
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    before = digest(assigned)
    first = check(cluster, {}, T0)
    assert states(first) == {"t-0": "Pending"}
    (entry,) = first.status["orphans"]
    assert (entry["broker"], entry["reason"]) == (2, "not assigned to broker 2; removal delay")
    assert entry["removeAfter"] == "2026-11-22T13:00:00Z"
    # Later, but within the delay: still held, first seen unchanged.
    second = check(cluster, first.status, T0 + timedelta(minutes=59))
    assert states(second) == {"t-0": "Pending"}
    assert second.status["orphans"][0]["firstSeen"] == entry["firstSeen"]
    assert copy.exists()
    third = check(cluster, second.status, T0 + timedelta(hours=1))
    assert states(third) == {"t-0": "Removed"}
    assert [(r.broker, r.name, r.size_bytes > 0) for r in third.removed] == [(2, "t-0", True)]
    assert not copy.exists()
    assert digest(assigned) == before
    assert third.status["orphanBytesReclaimedTotal"] == third.removed[0].size_bytes
    assert (third.orphans, third.status["orphanCount"]) == (0, 0)


def test_the_delay_counts_from_the_first_sighting_stored_in_status_across_restarts(
    brokers: dict[int, Path],
) -> None:
    make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    first = check(cluster, {}, T0)
    # A new operator has only what status kept: a fresh start would restart the clock.
    stored = {"orphans": [dict(e) for e in first.status["orphans"]]}
    assert states(check(cluster, stored, T0 + timedelta(hours=1))) == {"t-0": "Removed"}


def test_a_dry_run_removes_nothing(brokers: dict[int, Path]) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    first = check(cluster, {}, T0, dryRun=True)
    later = check(cluster, first.status, T0 + timedelta(days=2), dryRun=True)
    assert states(later) == {"t-0": "Kept"}
    assert later.removed == []
    assert copy.exists()
    assert later.orphans == 1


def test_a_dry_run_policy_removes_no_orphan_whatever_its_orphan_settings(
    brokers: dict[int, Path],
) -> None:
    """spec.dryRun deletes nothing: an orphan past its delay stays, though
    orphanPartitions.dryRun is left false."""
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    dry = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092", "brokers": {"access": "local"}},
            "dryRun": True,
            "orphanPartitions": {"enabled": True, "removalDelay": "1h", "dryRun": False},
        }
    )
    first = orphan_watch.check(dry, {}, cluster, [LocalVolumes()], T0)
    assert first is not None
    later = orphan_watch.check(dry, first.status, cluster, [LocalVolumes()], T0 + timedelta(days=2))
    assert later is not None
    assert states(later) == {"t-0": "Kept"}
    assert later.removed == []
    assert copy.exists()


def test_a_directory_assigned_again_during_the_delay_is_kept_and_its_clock_reset(
    brokers: dict[int, Path],
) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    first = check(cluster, {}, T0)
    cluster.placements_now = {"t": (LIVE_ID, {0: {1, 2}})}  # reassigned onto broker 2
    again = check(cluster, first.status, T0 + timedelta(minutes=30))
    assert states(again) == {"t-0": "Kept"}
    assert again.status["orphans"][0]["reason"] == "assigned again"
    # Moved away again: a new delay starts, the first sighting no longer counts.
    cluster.placements_now = {"t": (LIVE_ID, {0: {1}})}
    third = check(cluster, again.status, T0 + timedelta(hours=2))
    assert states(third) == {"t-0": "Pending"}
    assert copy.exists()


def test_the_fresh_read_just_before_the_removal_can_still_save_a_directory(
    brokers: dict[int, Path],
) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    first = check(cluster, {}, T0)
    cluster.reads = 0
    cluster.after_first = {"t": (LIVE_ID, {0: {2}})}  # moved to broker 2 meanwhile
    due = check(cluster, first.status, T0 + timedelta(hours=1))
    assert due.removed == []
    assert copy.exists()
    assert cluster.reads == 2


def test_files_younger_than_min_age_hold_a_directory_past_its_delay(
    brokers: dict[int, Path],
) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID, when=T0 - timedelta(hours=1))
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    first = check(cluster, {}, T0, minAge="1d")
    later = check(cluster, first.status, T0 + timedelta(hours=2), minAge="1d")
    assert states(later) == {"t-0": "Pending"}
    assert "segments younger than minAge" in later.status["orphans"][0]["reason"]
    assert copy.exists()
    # Without minAge the broker's log.retention.hours (168h) applies: held as well.
    default = check(cluster, first.status, T0 + timedelta(hours=2))
    assert states(default) == {"t-0": "Pending"}


def test_every_kind_of_orphan_and_what_is_never_touched(brokers: dict[int, Path]) -> None:
    make_dir(brokers[2], "gone-0", OLD_ID)  # topic deleted
    make_dir(brokers[2], "t-1", OLD_ID)  # t re-created: another topic id
    make_dir(brokers[2], "t-0.0123456789abcdef0123456789abcdef-stray", LIVE_ID)
    make_dir(brokers[2], "t-0.0123456789abcdef0123456789abcdef-future", LIVE_ID)
    make_dir(brokers[2], "t-0.0123456789abcdef0123456789abcdef-delete", LIVE_ID)
    make_dir(brokers[2], "__consumer_offsets-7", OLD_ID)
    (brokers[2] / "lost+found").mkdir()
    hosted = host(brokers[2], "u", 10)  # what broker 2 serves: 3 orphans stay under 25%
    cluster = Cluster(
        brokers,
        {
            "t": (LIVE_ID, {0: {1}, 1: {1}}),
            "__consumer_offsets": (OLD_ID, {7: {1}}),
            "u": (OTHER_TOPIC_ID, {p: {2} for p in range(10)}),
        },
    )
    first = check(cluster, {}, T0)
    due = check(cluster, first.status, T0 + timedelta(hours=1))
    assert states(due) == {
        "gone-0": "Removed",
        "t-1": "Removed",
        "t-0.0123456789abcdef0123456789abcdef-stray": "Removed",
        "t-0.0123456789abcdef0123456789abcdef-future": "Kept",
        "t-0.0123456789abcdef0123456789abcdef-delete": "Kept",
        "__consumer_offsets-7": "Kept",
        "lost+found": "Kept",
    }
    reasons = {e["name"]: e["reason"] for e in due.status["orphans"]}
    assert reasons["t-1"] == f"topic id {OLD_ID} differs from live topic id {LIVE_ID}"
    assert reasons["gone-0"] == "topic no longer exists"
    left = sorted(p.name for p in brokers[2].iterdir() if p.name not in hosted)
    assert left == [
        "__consumer_offsets-7",
        "lost+found",
        "meta.properties",
        "t-0.0123456789abcdef0123456789abcdef-delete",
        "t-0.0123456789abcdef0123456789abcdef-future",
    ]


def test_a_log_dir_that_cannot_be_listed_is_a_problem_and_nothing_is_removed(
    brokers: dict[int, Path],
) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    first = check(cluster, {}, T0)

    class Unlistable(LocalVolumes):
        def list(self, log_dir: str) -> list[Any]:
            raise OSError("Input/output error")

    report = orphan_watch.check(
        spec(), first.status, cluster, [Unlistable()], T0 + timedelta(hours=2)
    )
    assert report is not None
    assert report.removed == []
    assert copy.exists()
    assert any("Input/output error" in p for p in report.problems)


# --- whose disk it is, and the circuit breakers ------------------------------------


def due_after_one_check(cluster: Cluster, volumes: LocalVolumes | None = None) -> Any:
    """The status of a check an hour ago: whatever is an orphan now is due at T0 + 1h."""
    return check(cluster, {}, T0, volumes).status


def condition_of(report: Any) -> dict[str, Any]:
    (found,) = cond.stamp(None, orphan_watch.condition(report), 3, T0)
    return found


def test_a_foreign_cluster_that_assigns_nothing_removes_nothing_on_the_victims_volumes(
    brokers: dict[int, Path],
) -> None:
    """The attack: metadata from a cluster the tenant controls (its id, a decoy topic,
    brokers 1-3 naming the victim's log dirs) and the victim's broker volumes, whose
    every live directory that metadata leaves unassigned."""
    victim = {make_dir(brokers[b], f"payments-{b}", LIVE_ID).name: b for b in (1, 2, 3)}
    attacker = Cluster(brokers, {"decoy": (OLD_ID, {0: {7}})})
    attacker.ids = [OTHER_CLUSTER]
    volumes = Recording()
    first = check(attacker, {}, T0, volumes)
    later = check(attacker, first.status, T0 + timedelta(days=30), volumes)
    for report in (first, later):
        assert (report.removed, report.judged, report.status) == ([], False, {})
        assert {b.reason for b in report.blocked} == {"ClusterIdMismatch"}
    assert volumes.listed == []
    assert volumes.removed == []
    assert all((brokers[b] / name).exists() for name, b in victim.items())
    found = condition_of(later)
    assert (found["status"], found["reason"]) == ("Unknown", "ClusterIdMismatch")
    assert CLUSTER in found["message"]
    assert OTHER_CLUSTER in found["message"]
    assert f"log dir {brokers[1]} (broker 1, node.id 1)" in found["message"]
    # Nothing of what the victim's volumes hold is named, only ids and log dirs.
    assert not any(name in found["message"] for name in victim)


def test_one_log_dir_of_another_cluster_holds_removals_on_every_broker(
    brokers: dict[int, Path],
) -> None:
    copies = [make_dir(brokers[b], "t-0", LIVE_ID) for b in (2, 3)]
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    write_meta(brokers[3], 3, OTHER_CLUSTER)
    volumes = Recording()
    report = check(cluster, status, T0 + timedelta(hours=1), volumes)
    assert (report.removed, report.judged, report.status) == ([], False, {})
    (block,) = report.blocked
    assert (block.reason, block.brokers) == ("ClusterIdMismatch", None)
    assert f"names cluster.id {OTHER_CLUSTER}" in block.message
    assert f"came from cluster {CLUSTER}" in block.message
    assert volumes.listed == []  # not even broker 2's matching log dir
    assert all(c.exists() for c in copies)


def test_a_log_dir_naming_another_brokers_node_id_holds_both_brokers_only(
    brokers: dict[int, Path],
) -> None:
    copy_on_1 = make_dir(brokers[1], "t-1", LIVE_ID)
    copy_on_2 = make_dir(brokers[2], "t-0", LIVE_ID)
    copy_on_3 = make_dir(brokers[3], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}, 1: {2}})})
    status = due_after_one_check(cluster)
    write_meta(brokers[2], 1)  # broker 2's log dir, claiming to be broker 1's
    volumes = Recording()
    report = check(cluster, status, T0 + timedelta(hours=1), volumes)
    assert [(r.broker, r.name) for r in report.removed] == [(3, "t-0")]
    assert copy_on_1.exists()
    assert copy_on_2.exists()
    assert not copy_on_3.exists()
    assert str(brokers[2]) not in volumes.listed
    (block,) = report.blocked
    assert (block.reason, block.brokers) == ("NodeIdMismatch", frozenset({1, 2}))
    assert f"log dir {brokers[2]} names node.id 1" in block.message
    assert states(report)["t-1"] == "Kept"
    assert "held: NodeIdMismatch" in report.status["orphans"][-1]["reason"]
    found = condition_of(report)
    assert (found["status"], found["reason"]) == ("True", "NodeIdMismatch")


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        ("version=1\nnode.id=2\n", "ClusterIdMissing"),
        ("version=1\nnode.id=2\ncluster.id=$(id)\n", "ClusterIdMissing"),
        ("version=1\ncluster.id=" + CLUSTER + "\n", "NodeIdMismatch"),
        (None, "MetaPropertiesMissing"),
    ],
)
def test_a_log_dir_whose_identity_cannot_be_read_holds_its_broker(
    brokers: dict[int, Path], meta: str | None, reason: str
) -> None:
    copy_on_2 = make_dir(brokers[2], "t-0", LIVE_ID)
    make_dir(brokers[3], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    if meta is None:
        (brokers[2] / "meta.properties").unlink()
    else:
        (brokers[2] / "meta.properties").write_text(meta)
    report = check(cluster, status, T0 + timedelta(hours=1))
    assert [(r.broker, r.name) for r in report.removed] == [(3, "t-0")]
    assert copy_on_2.exists()
    (block,) = report.blocked
    assert (block.reason, block.brokers) == (reason, frozenset({2}))
    assert "$(id)" not in block.message
    assert str(brokers[2]) in block.message


def test_a_meta_properties_symlink_is_never_followed(brokers: dict[int, Path]) -> None:
    copy_on_2 = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    (brokers[2] / "meta.properties").rename(brokers[2].parent / "elsewhere.properties")
    (brokers[2] / "meta.properties").symlink_to(brokers[2].parent / "elsewhere.properties")
    report = check(cluster, status, T0 + timedelta(hours=1))
    assert report.removed == []
    assert copy_on_2.exists()
    assert [b.reason for b in report.blocked] == ["MetaPropertiesMissing"]


def test_metadata_with_no_topics_but_internal_ones_removes_nothing_and_keeps_status(
    brokers: dict[int, Path],
) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    cluster.placements_now = {"__consumer_offsets": (OLD_ID, {0: {1, 2, 3}})}
    report = check(cluster, status, T0 + timedelta(days=3))
    assert (report.removed, report.judged, report.status) == ([], False, {})
    assert [b.reason for b in report.blocked] == ["NoTopicsInMetadata"]
    assert copy.exists()
    found = condition_of(report)
    assert (found["status"], found["reason"]) == ("Unknown", "NoTopicsInMetadata")
    assert f"the metadata of cluster {CLUSTER} lists no topics" in found["message"]
    cluster.placements_now = {}
    assert check(cluster, status, T0 + timedelta(days=3)).removed == []
    assert copy.exists()


def test_a_broker_with_most_of_its_dirs_orphaned_keeps_them_all_while_others_proceed(
    brokers: dict[int, Path],
) -> None:
    """Broker 2 holds ten directories; the metadata now assigns it one (say a topic's
    assignment was read wrong): 90% of its disk would go. Broker 3's one orphan still
    goes."""
    held = host(brokers[2], "u", 10)
    make_dir(brokers[1], "t-0", LIVE_ID)
    lone = make_dir(brokers[3], "t-0", LIVE_ID)
    cluster = Cluster(
        brokers,
        {
            "t": (LIVE_ID, {0: {1}}),
            "u": (OTHER_TOPIC_ID, {0: {2}} | {p: {1} for p in range(1, 10)}),
        },
    )
    before = {name: digest(brokers[2] / name) for name in held}
    first = check(cluster, {}, T0)
    (block,) = first.blocked
    assert (block.reason, block.brokers) == ("RemovalCapReached", frozenset({2}))
    assert "9 of the 10 partition directories of broker 2" in block.message
    due = check(cluster, first.status, T0 + timedelta(hours=1))
    assert [(r.broker, r.name) for r in due.removed] == [(3, "t-0")]
    assert not lone.exists()
    assert {name: digest(brokers[2] / name) for name in held} == before
    kept = {e["name"]: e for e in due.status["orphans"] if e["broker"] == 2}
    assert {e["state"] for e in kept.values()} == {"Kept"}
    assert all(e["reason"].endswith("held: RemovalCapReached") for e in kept.values())
    assert due.orphans == 9  # still reported, with their first sighting kept
    assert {e["firstSeen"] for e in kept.values()} == {"2026-11-22T12:00:00Z"}
    found = condition_of(due)
    assert (found["status"], found["reason"]) == ("True", "RemovalCapReached")


def test_a_small_share_of_a_brokers_dirs_is_removed(brokers: dict[int, Path]) -> None:
    host(brokers[2], "u", 8)
    copies = [make_dir(brokers[2], f"gone-{p}", OLD_ID) for p in range(2)]
    cluster = Cluster(brokers, {"u": (OTHER_TOPIC_ID, {p: {2} for p in range(8)})})
    due = check(cluster, due_after_one_check(cluster), T0 + timedelta(hours=1))
    assert sorted(r.name for r in due.removed) == ["gone-0", "gone-1"]
    assert not any(c.exists() for c in copies)
    assert due.blocked == []


def test_the_fresh_read_from_another_cluster_removes_nothing(brokers: dict[int, Path]) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    cluster.ids, cluster.id_reads = [CLUSTER, CLUSTER, OTHER_CLUSTER], 0
    report = check(cluster, status, T0 + timedelta(hours=1))
    assert report.removed == []
    assert copy.exists()
    assert cluster.id_reads == 3
    assert cluster.reads == 3
    (block,) = report.blocked
    assert block.reason == "ClusterIdMismatch"
    assert f"changed from {CLUSTER} to {OTHER_CLUSTER}" in block.message
    assert states(report) == {"t-0": "Kept"}


def test_the_fresh_read_without_topics_removes_nothing(brokers: dict[int, Path]) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    cluster.reads, cluster.after_first = 0, {}
    report = check(cluster, status, T0 + timedelta(hours=1))
    assert report.removed == []
    assert copy.exists()
    assert [b.reason for b in report.blocked] == ["NoTopicsInMetadata"]


def test_the_cap_is_checked_again_on_the_fresh_read(brokers: dict[int, Path]) -> None:
    host(brokers[2], "u", 8)
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(
        brokers, {"t": (LIVE_ID, {0: {1}}), "u": (OTHER_TOPIC_ID, {p: {2} for p in range(8)})}
    )
    status = due_after_one_check(cluster)
    cluster.reads = 0  # the fresh read disowns most of broker 2 at once
    cluster.after_first = {"t": (LIVE_ID, {0: {1}}), "u": (OTHER_TOPIC_ID, {0: {2}})}
    report = check(cluster, status, T0 + timedelta(hours=1))
    assert report.removed == []
    assert copy.exists()
    assert [b.reason for b in report.blocked] == ["RemovalCapReached"]


def test_the_cluster_id_changing_within_one_check_judges_nothing(
    brokers: dict[int, Path],
) -> None:
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    cluster.ids, cluster.id_reads = [CLUSTER, OTHER_CLUSTER], 0
    report = check(cluster, status, T0 + timedelta(hours=1))
    assert (report.removed, report.judged) == ([], False)
    assert copy.exists()
    assert [b.reason for b in report.blocked] == ["ClusterIdMismatch"]


def test_meta_properties_is_read_again_just_before_the_removal(
    brokers: dict[int, Path],
) -> None:
    """A log dir listed as this cluster's names another one by the time of the delete
    (a volume swapped under the pod): nothing goes, on any broker."""
    copy_on_2 = make_dir(brokers[2], "t-0", LIVE_ID)
    copy_on_3 = make_dir(brokers[3], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)

    class Swapped(Recording):
        def list(self, log_dir: str) -> list[Any]:
            listed = super().list(log_dir)
            if log_dir == str(brokers[3]):
                write_meta(brokers[2], 2, OTHER_CLUSTER)
                write_meta(brokers[3], 3, OTHER_CLUSTER)
            return listed

    volumes = Swapped()
    report = check(cluster, status, T0 + timedelta(hours=1), volumes)
    assert report.removed == []
    assert volumes.removed == []
    assert copy_on_2.exists()
    assert copy_on_3.exists()
    assert [b.reason for b in report.blocked] == ["ClusterIdMismatch"]
    assert {(e["broker"], e["state"], e["reason"]) for e in report.status["orphans"]} == {
        (2, "Kept", "not assigned to broker 2; held: ClusterIdMismatch"),
        (3, "Kept", "not assigned to broker 3; held: ClusterIdMismatch"),
    }


def test_removal_goes_through_the_volume_that_listed_the_log_dir(
    brokers: dict[int, Path],
) -> None:
    """Another volume claiming the same broker's log dir is never used to remove."""
    copy = make_dir(brokers[2], "t-0", LIVE_ID)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    status = due_after_one_check(cluster)
    first, second = Recording(), Recording()
    report = orphan_watch.check(spec(), status, cluster, [first, second], T0 + timedelta(hours=1))
    assert report is not None
    assert [r.name for r in report.removed] == ["t-0"]
    assert (first.removed, second.removed, second.listed) == (["t-0"], [], [])
    assert not copy.exists()


def test_an_exec_failure_is_reported_without_what_the_pod_printed(
    brokers: dict[int, Path],
) -> None:
    class Failing(LocalVolumes):
        def identity(self, log_dir: str) -> Any:
            raise RuntimeError("sh in kafka/broker-2 exited 1: secret-topic-name-0 denied")

    class FailingExec(LocalVolumes):
        def identity(self, log_dir: str) -> Any:
            raise ExecFailed("sh in kafka/broker-2 exited 1 (its stderr is in the operator's log)")

    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    report = orphan_watch.check(spec(), {}, cluster, [Failing()], T0)
    assert report is not None
    assert report.problems
    assert not any("secret-topic-name" in p for p in report.problems)
    assert all("RuntimeError" in p for p in report.problems)
    report = orphan_watch.check(spec(), {}, cluster, [FailingExec()], T0)
    assert report is not None
    assert all("exited 1 (its stderr is in the operator's log)" in p for p in report.problems)


def test_the_condition_says_every_block_and_names_the_widest_as_reason(
    brokers: dict[int, Path],
) -> None:
    host(brokers[3], "u", 3)
    cluster = Cluster(brokers, {"t": (LIVE_ID, {0: {1}})})
    (brokers[2] / "meta.properties").unlink()
    report = check(cluster, {}, T0)
    assert {b.reason for b in report.blocked} == {"MetaPropertiesMissing", "RemovalCapReached"}
    found = condition_of(report)
    assert (found["status"], found["reason"]) == ("True", "MetaPropertiesMissing")
    assert "3 of the 3 partition directories of broker 3" in found["message"]
    assert f"log dir {brokers[2]} of broker 2 has no meta.properties" in found["message"]


def test_under_a_binding_only_directories_of_allowed_topics_are_removed_or_shown(
    brokers: dict[int, Path],
) -> None:
    """A tenant granted orphanCleanup on topics `team-a.*` neither removes nor sees the
    orphan directories of another team's topics on the same brokers."""
    from dataclasses import replace

    from kafka_retention.core.policy_spec import TopicSelector

    mine = make_dir(brokers[2], "team-a.x-0", LIVE_ID)
    theirs = make_dir(brokers[2], "team-b.payroll-0", OTHER_TOPIC_ID)
    for n in range(8):  # enough live directories that two orphans stay under the cap
        make_dir(brokers[2], f"live-{n}", OTHER_TOPIC_ID)
    placements = {
        "team-a.x": (LIVE_ID, {0: {1}}),
        "team-b.payroll": (OTHER_TOPIC_ID, {0: {1}}),
        "live": (OTHER_TOPIC_ID, {n: {2} for n in range(8)}),
    }
    cluster = Cluster(brokers, placements)
    want = spec()
    assert want.orphans is not None
    bound = replace(
        want,
        orphans=replace(want.orphans, topics=TopicSelector(allow=("team-a\\..*",))),
    )
    first = orphan_watch.check(bound, {}, cluster, [LocalVolumes()], T0)
    assert first is not None
    assert states(first) == {"team-a.x-0": "Pending"}
    later = orphan_watch.check(
        bound, first.status, cluster, [LocalVolumes()], T0 + timedelta(hours=1)
    )
    assert later is not None
    assert states(later) == {"team-a.x-0": "Removed"}
    assert not mine.exists()
    assert theirs.exists()
    assert "team-b" not in json.dumps(later.status)
