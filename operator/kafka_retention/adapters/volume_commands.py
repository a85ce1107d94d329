"""The commands the orphan check runs on a broker's log dirs through a pod (shell
scripts that busybox and GNU coreutils both run, with every path passed as a positional
parameter, never in the script's text), and how their output is read back: the listing,
the removal's answer, meta.properties. Pure; adapters.broker_volumes runs them."""

from __future__ import annotations

import posixpath

from kafka_retention.core.orphan_tiers import EMPTY, HeldOffsets
from kafka_retention.core.orphans import (
    LEGAL_NAME,
    NO_META,
    TOPIC_ID,
    Entry,
    LogDirIdentity,
    identity_from_meta,
    parse_name,
)


def _checked_log_dir(log_dir: str) -> str:
    if not log_dir.startswith("/") or "\0" in log_dir or posixpath.normpath(log_dir) != log_dir:
        raise ValueError(f"log dir {log_dir!r} is not an absolute, normalised path")
    return log_dir


def safe_child(log_dir: str, name: str) -> str:
    """The path of a removable directory: `name` must be one legal path component that
    parses as a partition or stray directory (so no `/`, `..`, NUL or shell
    metacharacter), `log_dir` absolute and normalised. ValueError otherwise."""
    if parse_name(name).kind not in ("partition", "stray"):
        raise ValueError(f"{name!r} is not a removable partition directory name")
    return posixpath.join(_checked_log_dir(log_dir), name)


# Exec access: constant POSIX sh scripts, the log dir and the name passed as positional
# parameters ($1, $2; "kr" is $0). They use only what busybox and GNU coreutils share
# (no `find -printf`, no awk). LC_ALL=C keeps bracket ranges to ASCII.
LIST_SCRIPT = r"""export LC_ALL=C
cd -- "$1" || exit 3
total() { s=0 m=; while read -r a b; do s=$((s + a))
  if [ -z "$m" ] || [ "$b" -gt "$m" ]; then m=$b; fi; done; printf '%s\t%s' "$s" "$m"; }
for e in * .[!.]* ..?*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  n=$e i=
  case $e in *[!A-Za-z0-9._-]*) n=hex:$(printf %s "$e" | od -An -v -tx1 | tr -d ' \n') ;; esac
  if [ -L "$e" ]; then t=l sm=$(printf '0\t')
  elif [ -d "$e" ]; then
    t=d sm=$(find "./$e" -type f -exec stat -c '%s %Y' {} + 2>/dev/null | total)
    if [ -f "./$e/partition.metadata" ] && [ ! -L "./$e/partition.metadata" ]; then
      i=$(head -c 4096 "./$e/partition.metadata" | sed -n 's/^topic_id: *//p' \
        | head -n 1 | tr -cd 'A-Za-z0-9_-')
    fi
  else t=f sm=$(printf '%s\t' "$(stat -c %s "./$e")")
  fi
  printf '%s\t%s\t%s\t%s\t.\n' "$n" "$t" "$sm" "$i"
done
echo '#end'
"""
# The checks repeat safe_child's on the broker's side of the exec, then refuse a symlink
# or anything but a directory. `rm -r` never follows symlinks inside the tree, and should
# the directory be swapped for a symlink after the check, rm removes the link, not its
# target.
REMOVE_SCRIPT = r"""export LC_ALL=C
case $1 in /*) ;; *) echo 'refused: log dir not absolute' >&2; exit 2 ;; esac
case $2 in ''|.|..|*[!A-Za-z0-9._-]*) echo 'refused: illegal name' >&2; exit 2 ;; esac
if [ -L "$1/$2" ]; then echo 'refused: symlink' >&2; exit 4; fi
if [ ! -d "$1/$2" ]; then echo 'refused: not a directory' >&2; exit 5; fi
rm -rf -- "$1/$2" && [ ! -e "$1/$2" ] && echo removed
"""
# Says which of three things it found, so a log dir that is simply not in this pod (a
# pod of another broker) is told apart from one whose meta.properties is missing: the
# latter holds the broker, the former is skipped. A symlink or a FIFO planted as
# meta.properties is not a regular file: never followed, never opened.
READ_META_SCRIPT = r"""export LC_ALL=C
if [ ! -d "$1" ]; then echo '#no-log-dir'; exit 0; fi
if [ -L "$1/meta.properties" ] || [ ! -f "$1/meta.properties" ]; then
  echo '#no-meta'; exit 0
fi
echo '#meta'
head -c 65536 -- "$1/meta.properties"
"""
# Which offsets one partition directory's segments hold (core.orphan_tiers.HeldOffsets),
# as LocalVolumes.held_offsets reads them: the base offset of the first segment with data,
# and the last offset of the last whole record batch of the newest segment that has one.
# A batch header is read with od at each batch's start (base offset int64, length int32,
# magic at byte 16, last offset delta int32 at 23, all big-endian). A walk starts at the
# position of the offset index's last entry, and is believed when it ends exactly at the
# segment's end past the offset the entry names; else it starts again at the segment's
# start. Past MAX_BATCH_STEPS batches it gives up (#unknown). Names pass the same checks
# as in REMOVE_SCRIPT; shell arithmetic never sees a leading zero (octal).
MAX_BATCH_STEPS = 4096
HELD_OFFSETS_SCRIPT = r"""export LC_ALL=C
case $1 in /*) ;; *) echo 'refused: log dir not absolute' >&2; exit 2 ;; esac
case $2 in ''|.|..|*[!A-Za-z0-9._-]*) echo 'refused: illegal name' >&2; exit 2 ;; esac
if [ -L "$1/$2" ] || [ ! -d "$1/$2" ]; then echo 'refused: not a directory' >&2; exit 5; fi
cd -- "$1/$2" || exit 3
steps=$3
walk() {
  f=$1 base=$2 at=$3 max=$4 size=$(stat -c %s -- "$1") last= more= n=0
  while [ $((at + 16)) -lt "$size" ]; do
    if [ "$n" -ge "$max" ]; then more=1; return 0; fi
    n=$((n + 1))
    set -- $(od -An -v -tu1 -j "$at" -N 27 -- "$f")
    [ $# -ge 17 ] && [ "$1" -lt 128 ] && [ "$9" -lt 128 ] || return 0
    o=$(( $1 * 72057594037927936 + $2 * 281474976710656 + $3 * 1099511627776 ))
    o=$(( o + $4 * 4294967296 + $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 ))
    e=$(( at + 12 + $9 * 16777216 + ${10} * 65536 + ${11} * 256 + ${12} ))
    [ "$o" -ge "$base" ] && [ "$e" -gt $((at + 16)) ] && [ "$e" -le "$size" ] || return 0
    if [ "${17}" -ge 2 ]; then
      [ $# -ge 27 ] && [ "${24}" -lt 128 ] || return 0
      o=$(( o + ${24} * 16777216 + ${25} * 65536 + ${26} * 256 + ${27} ))
    fi
    last=$o at=$e
  done
}
segs=
for f in [0-9]*.log; do
  nm=${f%.log}
  case $nm in *[!0-9]*) continue ;; esac
  [ ${#nm} -eq 20 ] || continue
  if [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %s -- "$f")" -gt 0 ]; then segs="$f $segs"; fi
done
if [ -z "$segs" ]; then echo '#empty'; exit 0; fi
for f in $segs; do first=$f; done
first=${first%.log}; first=${first#"${first%%[!0]*}"}; first=${first:-0}
for f in $segs; do
  b=${f%.log}; b=${b#"${b%%[!0]*}"}; b=${b:-0}
  i=${f%.log}.index
  if [ -f "$i" ] && [ ! -L "$i" ] && [ "$(stat -c %s -- "$i")" -ge 8 ]; then
    set -- $(tail -c 8 -- "$i" | od -An -v -tu1)
    if [ $# -eq 8 ] && [ "$1" -lt 128 ] && [ "$5" -lt 128 ]; then
      rel=$(( $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 ))
      pos=$(( $5 * 16777216 + $6 * 65536 + $7 * 256 + $8 ))
      if [ "$pos" -gt 0 ]; then
        walk "$f" "$b" "$pos" "$steps"
        if [ -z "$more" ] && [ -n "$last" ] && [ "$at" -eq "$size" ] \
          && [ "$last" -ge $((b + rel)) ]; then
          echo "#held $first $last"; exit 0
        fi
      fi
    fi
  fi
  walk "$f" "$b" 0 "$steps"
  if [ -n "$more" ]; then echo '#unknown'; exit 0; fi
  if [ -n "$last" ]; then echo "#held $first $last"; exit 0; fi
done
echo '#unknown'
"""
LISTING_END = "#end"
REMOVED = "removed"


def list_argv(log_dir: str) -> list[str]:
    return ["sh", "-c", LIST_SCRIPT, "kr", _checked_log_dir(log_dir)]


def remove_argv(log_dir: str, name: str) -> list[str]:
    safe_child(log_dir, name)
    return ["sh", "-c", REMOVE_SCRIPT, "kr", log_dir, name]


def held_offsets_argv(log_dir: str, name: str) -> list[str]:
    safe_child(log_dir, name)
    return ["sh", "-c", HELD_OFFSETS_SCRIPT, "kr", log_dir, name, str(MAX_BATCH_STEPS)]


def parse_held_offsets(text: str) -> HeldOffsets:
    """HELD_OFFSETS_SCRIPT's answer; ValueError when the offsets are unknown (a damaged
    segment, too many batches to walk) or the answer does not read."""
    fields = text.strip().split(" ")
    if fields == ["#empty"]:
        return EMPTY
    if len(fields) == 3 and fields[0] == "#held" and all(f.isdigit() for f in fields[1:]):
        return HeldOffsets(int(fields[1]), int(fields[2]))
    if fields == ["#unknown"]:
        raise ValueError("no whole record batch found within reach in its segments")
    raise ValueError("unexpected answer to the segment offsets read")


def read_meta_argv(log_dir: str) -> list[str]:
    return ["sh", "-c", READ_META_SCRIPT, "kr", _checked_log_dir(log_dir)]


def parse_meta_answer(text: str) -> LogDirIdentity | None:
    """READ_META_SCRIPT's output: None when the log dir is not there, NO_META when it
    has no meta.properties, else what the file names. ValueError for anything else (a
    transport that mangled the answer must not read as "no log dir here")."""
    marker, _, rest = text.partition("\n")
    if marker == "#no-log-dir":
        return None
    if marker == "#no-meta":
        return NO_META
    if marker == "#meta":
        return identity_from_meta(rest)
    raise ValueError("unexpected answer to the meta.properties read")


def listing_complete(text: str) -> bool:
    """Whether the listing ran to its end: a cut-off listing misses entries."""
    return text.rstrip("\n").endswith("\n" + LISTING_END) or text.strip() == LISTING_END


def parse_listing(text: str) -> list[Entry]:
    """Entries from LIST_SCRIPT's output, skipping any line that does not read. Names
    outside Kafka's characters arrive hex-encoded, so no name can forge a line; a line
    must end with its `.` field, so a cut-off line never yields a truncated topic id."""
    entries = (_listing_entry(line.split("\t")) for line in text.splitlines())
    return [e for e in entries if e is not None]


def _listing_entry(fields: list[str]) -> Entry | None:
    if len(fields) != 6 or fields[5] != "." or fields[1] not in ("d", "l", "f"):
        return None
    name, kind, size, mtime, topic_id = fields[:5]
    decoded = _listing_name(name)
    if decoded is None or not size.isdigit() or not (mtime.isdigit() or mtime == ""):
        return None
    return Entry(
        name=decoded,
        is_dir=kind == "d",
        is_symlink=kind == "l",
        size_bytes=int(size),
        # Rounded up: a file must never look older than it is.
        newest_segment_mtime_ms=(int(mtime) + 1) * 1000 if mtime else None,
        topic_id=topic_id if TOPIC_ID.fullmatch(topic_id) else None,
    )


def _listing_name(name: str) -> str | None:
    if not name.startswith("hex:"):
        return name if LEGAL_NAME.fullmatch(name) else None
    try:
        return bytes.fromhex(name[4:]).decode("utf-8", "surrogateescape")
    except ValueError:
        return None
