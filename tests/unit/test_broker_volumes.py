"""Broker log dirs on a real filesystem, through LocalVolumes and through ExecVolumes
running the core's constant scripts with a real sh: dash with GNU coreutils, and busybox
(the applets a minimal broker image has) when it is installed."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from kafka_retention.adapters.broker_volumes import ExecVolumes
from kafka_retention.adapters.volume_commands import (
    REMOVE_SCRIPT,
)
from kafka_retention.core.failures import VolumeError
from kafka_retention.core.orphan_guards import (
    decide,
    identity_block,
)
from kafka_retention.core.orphans import (
    NO_META,
    Entry,
    LogDirIdentity,
    classify,
)
from tests.helpers.volumes import KINDS, Volumes, run_in, volumes_of

HEX = "0123456789abcdef0123456789abcdef"
OLD_S = 1_600_000_000  # segment mtime, seconds
BUSYBOX_APPLETS = ("sh", "find", "stat", "od", "tr", "sed", "head", "rm", "cat")
CLUSTER = "q1Sh-9_jT3ut0dbGsAS1Yw"


def topic_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def partition_dir(log_dir: Path, name: str, tid: str | None, segment: bytes = b"x" * 512) -> Path:
    d = log_dir / name
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(segment)
    (d / "00000000000000000000.index").write_bytes(b"\0" * 16)
    if tid is not None:
        (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {tid}\n")
    for f in d.iterdir():
        os.utime(f, (OLD_S, OLD_S))
    return d


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    d = tmp_path / "kafka-logs"
    d.mkdir()
    (d / "meta.properties").write_text(
        f"version=1\ndirectory.id=ZGlyZWN0b3J5LWlkLXgtMQ\ncluster.id={CLUSTER}\nnode.id=1\n"
    )
    (d / "replication-offset-checkpoint").write_text("0\n0\n")
    return d


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the log dir that nothing may ever touch."""
    d = tmp_path / "precious"
    d.mkdir()
    (d / "data").write_text("keep me")
    return d


@pytest.fixture(params=KINDS)
def volumes(request: pytest.FixtureRequest, tmp_path: Path) -> Volumes:
    return volumes_of(request.param, tmp_path, BUSYBOX_APPLETS)


def by_name(entries: list[Entry]) -> dict[str, Entry]:
    return {e.name: e for e in entries}


def checksums(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# --- identity and listing ------------------------------------------------------------


def test_node_and_cluster_id_are_read_from_meta_properties(volumes: Volumes, log_dir: Path) -> None:
    assert volumes.identity(str(log_dir)) == LogDirIdentity(1, CLUSTER)


def test_a_log_dir_that_is_not_there_is_none_not_an_error(volumes: Volumes, tmp_path: Path) -> None:
    """A pod of another broker, a path of another machine: skipped, never a block."""
    assert volumes.identity(str(tmp_path / "no-such-dir")) is None


def test_a_log_dir_without_meta_properties_is_told_apart(volumes: Volumes, log_dir: Path) -> None:
    (log_dir / "meta.properties").unlink()
    assert volumes.identity(str(log_dir)) == NO_META


def test_a_meta_properties_symlink_is_never_followed(
    volumes: Volumes, log_dir: Path, outside: Path
) -> None:
    """A link to a file naming the right cluster still proves nothing about this dir."""
    (outside / "meta.properties").write_text((log_dir / "meta.properties").read_text())
    (log_dir / "meta.properties").unlink()
    (log_dir / "meta.properties").symlink_to(outside / "meta.properties")
    assert volumes.identity(str(log_dir)) == NO_META


def test_a_directory_named_meta_properties_is_no_meta(volumes: Volumes, log_dir: Path) -> None:
    (log_dir / "meta.properties").unlink()
    (log_dir / "meta.properties").mkdir()
    assert volumes.identity(str(log_dir)) == NO_META


@pytest.mark.timeout(10)
def test_a_fifo_planted_as_meta_properties_does_not_hang(volumes: Volumes, log_dir: Path) -> None:
    (log_dir / "meta.properties").unlink()
    os.mkfifo(log_dir / "meta.properties")
    assert volumes.identity(str(log_dir)) == NO_META


def test_a_giant_meta_properties_is_read_only_up_to_its_limit(
    volumes: Volumes, log_dir: Path
) -> None:
    padding = "#" + "x" * 70_000 + "\n"
    (log_dir / "meta.properties").write_text(f"{padding}cluster.id={CLUSTER}\nnode.id=1\n")
    assert volumes.identity(str(log_dir)) == LogDirIdentity(None, None)


def test_another_clusters_log_dir_reads_as_such_and_is_held(
    volumes: Volumes, log_dir: Path
) -> None:
    (log_dir / "meta.properties").write_text(
        "version=1\ncluster.id=b3RoZXItY2x1c3Rlci0xMg\nnode.id=1\n"
    )
    identity = volumes.identity(str(log_dir))
    assert identity == LogDirIdentity(1, "b3RoZXItY2x1c3Rlci0xMg")
    assert identity is not None
    block = identity_block(str(log_dir), identity, CLUSTER, frozenset({1}))
    assert block is not None
    assert (block.reason, block.brokers) == ("ClusterIdMismatch", None)


def test_a_mangled_exec_answer_is_an_error_not_a_missing_log_dir(log_dir: Path) -> None:
    for answer in ("", "node.id=1\ncluster.id=x\n", "#nometa\n"):

        def run(argv: list[str], said: str = answer) -> str:
            return said

        with pytest.raises(VolumeError, match=r"meta\.properties"):
            ExecVolumes(run).identity(str(log_dir))


def test_a_partition_dir_is_listed_with_size_newest_mtime_and_topic_id(
    volumes: Volumes, log_dir: Path
) -> None:
    tid = topic_id()
    d = partition_dir(log_dir, "orders-0", tid)
    os.utime(d / "00000000000000000000.index", (OLD_S + 50, OLD_S + 50))
    listed = by_name(volumes.list(str(log_dir)))["orders-0"]
    size = 512 + 16 + (d / "partition.metadata").stat().st_size
    assert (listed.is_dir, listed.is_symlink, listed.size_bytes) == (True, False, size)
    assert listed.topic_id == tid
    newest = listed.newest_segment_mtime_ms
    assert newest is not None
    assert (OLD_S + 50) * 1000 <= newest <= (OLD_S + 51) * 1000


def test_files_symlinks_and_empty_dirs_are_listed_without_following_links(
    volumes: Volumes, log_dir: Path, outside: Path
) -> None:
    (log_dir / "gone-0").symlink_to(outside)
    (log_dir / "file-0").write_bytes(b"abc")
    (log_dir / "empty-0").mkdir()
    listed = by_name(volumes.list(str(log_dir)))
    assert listed["gone-0"] == Entry("gone-0", False, True, 0, None, None)
    assert listed["file-0"] == Entry("file-0", False, False, 3, None, None)
    assert listed["empty-0"] == Entry("empty-0", True, False, 0, None, None)
    assert listed["meta.properties"].is_dir is False


def test_symlinks_inside_a_partition_dir_are_neither_followed_nor_counted(
    volumes: Volumes, log_dir: Path, outside: Path
) -> None:
    d = partition_dir(log_dir, "orders-0", None)
    (d / "elsewhere").symlink_to(outside)
    (outside / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id()}\n")
    (d / "partition.metadata").symlink_to(outside / "partition.metadata")
    listed = by_name(volumes.list(str(log_dir)))["orders-0"]
    assert listed.size_bytes == 512 + 16
    assert listed.topic_id is None


@pytest.mark.timeout(10)
def test_a_fifo_planted_as_partition_metadata_does_not_hang_the_listing(
    volumes: Volumes, log_dir: Path
) -> None:
    d = partition_dir(log_dir, "orders-0", None)
    os.mkfifo(d / "partition.metadata")
    assert by_name(volumes.list(str(log_dir)))["orders-0"].topic_id is None


def test_a_directory_planted_as_partition_metadata_does_not_break_the_listing(
    volumes: Volumes, log_dir: Path
) -> None:
    d = partition_dir(log_dir, "orders-0", None)
    (d / "partition.metadata").mkdir()
    assert by_name(volumes.list(str(log_dir)))["orders-0"].topic_id is None


@pytest.mark.parametrize(
    "hostile", ["a\nb", "orders-0\td\t1\t1\t\t.", "$(touch pwned)-0", "`id`", "-rf", " x"]
)
def test_hostile_names_are_listed_exactly_and_run_nothing(
    volumes: Volumes, log_dir: Path, hostile: str
) -> None:
    (log_dir / hostile).mkdir()
    names = [e.name for e in volumes.list(str(log_dir))]
    assert hostile in names
    assert "orders-0" not in names  # a name cannot forge a listing line
    assert not list(log_dir.parent.rglob("pwned"))


# --- removal -------------------------------------------------------------------------


def test_an_orphan_dir_is_removed_and_its_neighbours_are_untouched(
    volumes: Volumes, log_dir: Path
) -> None:
    partition_dir(log_dir, "orders-0", topic_id())
    partition_dir(log_dir, f"orders-1.{HEX}-future", topic_id())
    before = checksums(log_dir)
    partition_dir(log_dir, "gone-3", topic_id())
    volumes.remove(str(log_dir), "gone-3")
    assert not (log_dir / "gone-3").exists()
    assert checksums(log_dir) == before


def test_removal_does_not_follow_symlinks_inside_the_directory(
    volumes: Volumes, log_dir: Path, outside: Path
) -> None:
    d = partition_dir(log_dir, f"gone-0.{HEX}-stray", None)
    (d / "link-to-precious").symlink_to(outside)
    volumes.remove(str(log_dir), d.name)
    assert not d.exists()
    assert (outside / "data").read_text() == "keep me"


def test_a_symlink_named_like_a_partition_is_never_removed(
    volumes: Volumes, log_dir: Path, outside: Path
) -> None:
    (log_dir / "gone-0").symlink_to(outside)
    with pytest.raises((ValueError, subprocess.CalledProcessError)):
        volumes.remove(str(log_dir), "gone-0")
    assert (log_dir / "gone-0").is_symlink()
    assert (outside / "data").read_text() == "keep me"


def test_a_file_named_like_a_partition_is_never_removed(volumes: Volumes, log_dir: Path) -> None:
    (log_dir / "gone-0").write_text("not a dir")
    with pytest.raises((ValueError, subprocess.CalledProcessError)):
        volumes.remove(str(log_dir), "gone-0")
    assert (log_dir / "gone-0").read_text() == "not a dir"


@pytest.mark.parametrize(
    "name", ["../precious", "..", "a\nb-0", "$(rm -rf ~)-0", f"orders-1.{HEX}-future", ""]
)
def test_names_that_are_not_partition_dirs_are_refused_before_any_removal(
    volumes: Volumes, log_dir: Path, outside: Path, name: str
) -> None:
    if name and name != "..":
        (log_dir / name).mkdir(exist_ok=True)
    with pytest.raises(ValueError, match="not a removable"):
        volumes.remove(str(log_dir), name)
    assert (outside / "data").exists()
    assert name == "" or (log_dir / name).exists()


@pytest.mark.parametrize(
    ("log_dir_arg", "name"),
    [("{log}", "../precious"), ("{log}", "$(touch pwned)"), ("relative", "gone-0"), ("{log}", "")],
)
def test_the_remove_script_refuses_on_its_own_what_python_would_refuse(
    log_dir: Path, outside: Path, log_dir_arg: str, name: str
) -> None:
    """The broker side checks again, in case a caller ever skips safe_child."""
    argv = ["sh", "-c", REMOVE_SCRIPT, "kr", log_dir_arg.format(log=log_dir), name]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=log_dir, check=False)
    assert result.returncode == 2
    assert "refused" in result.stderr
    assert (outside / "data").read_text() == "keep me"
    assert not list(log_dir.parent.rglob("pwned"))


# --- exec transport ------------------------------------------------------------------


def test_exec_never_puts_a_name_into_the_script(log_dir: Path) -> None:
    seen: list[list[str]] = []
    real = run_in(None)

    def run(argv: list[str]) -> str:
        seen.append(argv)
        return real(argv)

    name = f"gone-0.{HEX}-stray"
    partition_dir(log_dir, name, None)
    ExecVolumes(run).remove(str(log_dir), name)
    assert seen == [["sh", "-c", REMOVE_SCRIPT, "kr", str(log_dir), name]]
    assert name not in seen[0][2]
    assert str(log_dir) not in seen[0][2]


def test_a_cut_off_listing_is_an_error_not_a_shorter_list(log_dir: Path) -> None:
    partition_dir(log_dir, "orders-0", topic_id())
    full = run_in(None)
    volumes = ExecVolumes(lambda argv: full(argv)[:-10])
    with pytest.raises(VolumeError, match="cut off"):
        volumes.list(str(log_dir))


def test_an_unconfirmed_removal_is_an_error_that_does_not_repeat_the_pods_output(
    log_dir: Path,
) -> None:
    with pytest.raises(VolumeError, match="not confirmed") as raised:
        ExecVolumes(lambda argv: "secret-topic-0 busy").remove(str(log_dir), "gone-0")
    assert "secret-topic" not in str(raised.value)


# --- the whole path, as the operator will use it ------------------------------------


def test_only_orphans_past_their_delay_are_removed_and_everything_else_stays(
    volumes: Volumes, log_dir: Path, outside: Path
) -> None:
    orders, old_orders = topic_id(), topic_id()
    partition_dir(log_dir, "orders-0", orders)
    partition_dir(log_dir, f"orders-0.{HEX}-future", orders)
    partition_dir(log_dir, f"orders-2.{HEX}-delete", orders)
    (log_dir / "orders-5").symlink_to(outside)
    kept = checksums(log_dir)
    partition_dir(log_dir, "orders-1", orders)  # assigned elsewhere
    partition_dir(log_dir, f"orders-0.{HEX[::-1]}-stray", old_orders)
    partition_dir(log_dir, "gone-0", topic_id())  # topic deleted
    partition_dir(log_dir, "orders-3", old_orders)  # before the topic was re-created
    assignment = {"orders": (orders, {0: {1}, 1: {2}, 3: {1}})}
    now = (OLD_S + 30 * 86_400) * 1000

    identity = volumes.identity(str(log_dir))
    assert identity is not None
    assert identity.node_id is not None
    assert identity_block(str(log_dir), identity, CLUSTER, frozenset({1})) is None
    for finding in classify(identity.node_id, volumes.list(str(log_dir)), assignment):
        if decide(finding, now - 86_400_000, now, 86_400_000, 86_400_000, False).state == "Remove":
            volumes.remove(str(log_dir), finding.entry.name)

    remaining = {p.name for p in log_dir.iterdir()}
    assert remaining == {
        "meta.properties",
        "replication-offset-checkpoint",
        "orders-0",
        f"orders-0.{HEX}-future",
        f"orders-2.{HEX}-delete",
        "orders-5",
    }
    assert checksums(log_dir) == kept
    assert (outside / "data").read_text() == "keep me"
