"""Broker log dirs as the orphan cleanup sees them: read whose log dir it is (its
meta.properties), list it, remove one partition directory. Two ways in, with the same
three methods:

- `LocalVolumes` (`access: local`): the log dirs are paths on this machine (the local
  stack, or the operator running beside the broker with the volume mounted);
- `ExecVolumes` (`access: exec`): the core's constant scripts run in the broker pod
  through an injected `run(argv) -> stdout`, so this module never imports the
  Kubernetes client.

Nothing here decides what is an orphan (core.orphans does); it only refuses, a second
time, to remove anything but a real directory with a partition name directly inside the
log dir, and never follows a symlink while listing, reading or removing.

Both also say which offsets a partition directory's segments hold (`held_offsets`),
which an orphan of a live tiered topic is judged by (core.orphan_tiers).
"""

from __future__ import annotations

import builtins
import os
import re
import shutil
import stat
import struct
from collections.abc import Callable

from kafka_retention.adapters.volume_commands import (
    REMOVED,
    held_offsets_argv,
    list_argv,
    listing_complete,
    parse_held_offsets,
    parse_listing,
    parse_meta_answer,
    read_meta_argv,
    remove_argv,
    safe_child,
)
from kafka_retention.core.failures import VolumeError
from kafka_retention.core.orphan_tiers import EMPTY, HeldOffsets
from kafka_retention.core.orphans import (
    NO_META,
    Entry,
    LogDirIdentity,
    identity_from_meta,
    topic_id_from_partition_metadata,
)

META_LIMIT = 65_536  # meta.properties is a few hundred bytes; never read a planted giant
PARTITION_METADATA_LIMIT = 4_096
SEGMENT_LOG = re.compile(r"(?P<base>[0-9]{20})\.log")
# A record batch starts with its base offset (int64) and the length of what follows
# (int32); the magic byte is at 16, and from magic 2 on the last offset delta (int32) at
# 23. Before magic 2, the offset of a log entry is its last message's offset.
LOG_OVERHEAD = 12
_MAGIC_AT, _DELTA_AT, _V2_HEADER = 16, 23, 27


class LocalVolumes:
    """Log dirs on this machine's filesystem."""

    def identity(self, log_dir: str) -> LogDirIdentity | None:
        """What the log dir's meta.properties says; None when there is no such directory
        here, NO_META when it has no meta.properties (a regular file)."""
        if not os.path.isdir(log_dir):
            return None
        text = _read_regular(os.path.join(log_dir, "meta.properties"), META_LIMIT)
        return NO_META if text is None else identity_from_meta(text)

    def list(self, log_dir: str) -> builtins.list[Entry]:
        with os.scandir(log_dir) as entries:
            return [_local_entry(e) for e in entries]

    def remove(self, log_dir: str, name: str) -> None:
        """Remove one partition directory. shutil.rmtree on Linux works through file
        descriptors (`rmtree.avoids_symlink_attacks`): it refuses a symlink as the top
        and unlinks symlinks inside without following them, even when one is swapped in
        while it runs. Where that guarantee is missing, nothing is removed."""
        path = safe_child(log_dir, name)
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise ValueError(f"{path} is not a directory (symlinks are never followed)")
        if not shutil.rmtree.avoids_symlink_attacks:
            raise VolumeError("this platform's rmtree may follow symlinks: refusing")
        shutil.rmtree(path)

    def held_offsets(self, log_dir: str, name: str) -> HeldOffsets:
        """The offsets one partition directory's segments hold: the base offset of its
        first segment with data, the last offset of the last whole record batch of its
        last one. VolumeError when a segment with data has no whole batch (damaged: what
        it holds is unknown)."""
        path = safe_child(log_dir, name)
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise ValueError(f"{path} is not a directory (symlinks are never followed)")
        segments = sorted(
            (int(m["base"]), e.path, e.stat(follow_symlinks=False).st_size)
            for e in os.scandir(path)
            if (m := SEGMENT_LOG.fullmatch(e.name)) and e.is_file(follow_symlinks=False)
        )
        with_data = [(base, p) for base, p, size in segments if size > 0]
        if not with_data:
            return EMPTY
        for base, segment in reversed(with_data):
            last = _last_offset(segment, base)
            if last is not None:
                return HeldOffsets(with_data[0][0], last)
        raise VolumeError(f"no whole record batch in the segments of {name}")


def _last_offset(segment: str, base: int) -> int | None:
    """The last offset of the last whole record batch of a segment file, walking the
    batch headers from its start; None when it has none. A header that cannot be a
    batch of this segment (an offset below its base, a length past its end: a damaged
    or half-written tail) ends the walk."""
    fd = os.open(segment, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        size, at, last = info.st_size, 0, None
        while at + _MAGIC_AT < size:
            header = os.pread(fd, _V2_HEADER, at)
            if len(header) <= _MAGIC_AT:
                break
            offset, length = struct.unpack_from(">qi", header)
            end = at + LOG_OVERHEAD + length
            if offset < base or length <= _MAGIC_AT - LOG_OVERHEAD or end > size:
                break
            if header[_MAGIC_AT] >= 2:
                if len(header) < _V2_HEADER:
                    break
                (delta,) = struct.unpack_from(">i", header, _DELTA_AT)
                if delta < 0:
                    break
                offset += delta
            last, at = offset, end
        return last
    finally:
        os.close(fd)


def _local_entry(entry: os.DirEntry[str]) -> Entry:
    mode = entry.stat(follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        return Entry(entry.name, False, True, 0, None, None)
    if not stat.S_ISDIR(mode):
        size = entry.stat(follow_symlinks=False).st_size
        return Entry(entry.name, False, False, size, None, None)
    size, newest = _tree_totals(entry.path)
    return Entry(entry.name, True, False, size, newest, _topic_id(entry.path))


def _tree_totals(path: str) -> tuple[int, int | None]:
    """Total size and newest mtime (ms, rounded up) of the regular files under path;
    symlinks are neither followed nor counted, files that vanish meanwhile are skipped."""
    size, newest = 0, None
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                size += st.st_size
                mtime_ms = -(-st.st_mtime_ns // 1_000_000)
                newest = mtime_ms if newest is None else max(newest, mtime_ms)
    return size, newest


def _topic_id(partition_dir: str) -> str | None:
    text = _read_regular(
        os.path.join(partition_dir, "partition.metadata"), PARTITION_METADATA_LIMIT
    )
    return None if text is None else topic_id_from_partition_metadata(text)


def _read_regular(path: str, limit: int) -> str | None:
    """At most `limit` bytes of path if it is a regular file; None for a symlink, a FIFO
    (opened non-blocking, so a planted FIFO cannot hang the operator) or a missing file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # checked before fdopen: a directory opens
        os.close(fd)  # read-only, and fdopen refuses it (IsADirectoryError)
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


class ExecVolumes:
    """Log dirs inside broker pods, reached through `run(argv) -> stdout` (the Kubernetes
    exec transport, injected). `run` should raise when the command fails; a removal is
    also believed only when the script confirms it, so a transport that loses the exit
    status cannot report a directory as gone when it is not."""

    def __init__(self, run: Callable[[builtins.list[str]], str]) -> None:
        self._run = run

    def identity(self, log_dir: str) -> LogDirIdentity | None:
        """As LocalVolumes.identity, read in the pod: None when the pod has no such
        directory (a pod of another broker), NO_META when it has no meta.properties."""
        try:
            return parse_meta_answer(self._run(read_meta_argv(log_dir)))
        except ValueError as err:
            raise VolumeError(f"reading meta.properties of {log_dir}: {err}") from None

    def list(self, log_dir: str) -> builtins.list[Entry]:
        text = self._run(list_argv(log_dir))
        if not listing_complete(text):
            raise VolumeError(f"listing of {log_dir} was cut off")
        return parse_listing(text)

    def held_offsets(self, log_dir: str, name: str) -> HeldOffsets:
        """As LocalVolumes.held_offsets, read in the pod (volume_commands'
        HELD_OFFSETS_SCRIPT); VolumeError when they are unknown."""
        try:
            return parse_held_offsets(self._run(held_offsets_argv(log_dir, name)))
        except ValueError as err:
            raise VolumeError(f"offsets held by {name} in {log_dir}: {err}") from None

    def remove(self, log_dir: str, name: str) -> None:
        out = self._run(remove_argv(log_dir, name))
        if out.strip() != REMOVED:
            # Not the output itself: it comes from the pod, which may not be the tenant's.
            raise VolumeError(f"removal of {name} in {log_dir} not confirmed")
