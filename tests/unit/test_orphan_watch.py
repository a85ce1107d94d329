"""The orphan check of a policy run on real directories (LocalVolumes on temp dirs built
like two brokers' log dirs) against cluster metadata that changes between reads: the
removal delay held across checks and restarts, dry runs, a directory assigned again, the
fresh read before a removal, minAge, and assigned directories left byte for byte."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kafka_retention.adapters.broker_volumes import LocalVolumes
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.services import orphan_watch

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
LIVE_ID, OLD_ID = "AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"
OLD = T0 - timedelta(days=30)


class Cluster:
    """Metadata answers as Kafka gives them; `after_first` replaces the assignment from
    the second read on (a partition moved back between the check and the removal)."""

    def __init__(self, dirs: Mapping[int, Path], placements: dict[str, Any]) -> None:
        self.dirs, self.placements_now = dirs, placements
        self.after_first: dict[str, Any] | None = None
        self.reads = 0

    def placements(self) -> dict[str, Any]:
        self.reads += 1
        if self.reads > 1 and self.after_first is not None:
            return self.after_first
        return self.placements_now

    def broker_configs(self) -> dict[int, dict[str, str]]:
        return {b: {"log.dirs": str(d), "log.retention.hours": "168"} for b, d in self.dirs.items()}


def make_dir(log_dir: Path, name: str, topic_id: str, when: datetime = OLD) -> Path:
    d = log_dir / name
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(os.urandom(300))
    (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    for f in d.iterdir():
        os.utime(f, (when.timestamp(), when.timestamp()))
    return d


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
    for b in (1, 2):
        d = tmp_path / f"broker-{b}"
        d.mkdir()
        (d / "meta.properties").write_text(f"version=1\nnode.id={b}\n")
        out[b] = d
    return out


def spec(**orphans: Any) -> Any:
    return parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092", "brokers": {"access": "local"}},
            "orphanPartitions": {"enabled": True, "removalDelay": "1h", **orphans},
        }
    )


def check(cluster: Cluster, status: Mapping[str, Any], at: datetime, **orphans: Any) -> Any:
    report = orphan_watch.check(spec(**orphans), status, cluster, [LocalVolumes()], at)
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
    cluster = Cluster(
        brokers, {"t": (LIVE_ID, {0: {1}, 1: {1}}), "__consumer_offsets": (OLD_ID, {7: {1}})}
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
    left = sorted(p.name for p in brokers[2].iterdir())
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
