"""The group reader: Kafka's Java Admin in a process of its own (group-reader/
GroupPositions.java), for what librdkafka cannot read: which type a group id names, and
where share groups (their share-partition start offsets) and streams groups are; and,
for tiered storage, the ListOffsets specs librdkafka refuses (earliest local, latest
tiered, earliest pending upload) and DescribeLogDirs, which it lacks; and what the
cluster runs (DescribeFeatures), which librdkafka does not expose.

One reader process serves the whole Python process (the operator, a CLI run, a Spark
worker): it is started on first use, keeps an Admin per connection, answers requests
concurrently (each answer tagged with its request's id, so one cluster that does not
answer delays only its own reads), and is started again when it has died. It exits by
itself when this process dies (its stdin closes). Its jars are found through
KAFKA_RETENTION_GROUP_READER (the image sets it; `make setup` builds them and `.dev/env`
names them).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO

from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, GroupType, TopicPartition
from kafka_retention.core.java_client import java_properties
from kafka_retention.core.tiers import TierOffsets

ENV = "KAFKA_RETENTION_GROUP_READER"
JAR_NAME = "kafka-retention-group-reader.jar"
# Partitions per offsets request: the coordinator answers one request for tens of
# thousands of partitions slower than a request timeout on a busy cluster.
PARTITIONS_PER_REQUEST = 2000
# A small client: the reader only holds Admin clients and their metadata.
_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class GroupReaderError(RuntimeError):
    """The reader could not answer: missing, dead, late, or Kafka said no. `retriable`
    tells a cluster that may answer later from one that said no for good."""

    def __init__(self, message: str, retriable: bool = True) -> None:
        super().__init__(message)
        self.retriable = retriable


def _encode(value: str) -> str:
    return value.replace("%", "%25").replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D")


def _decode(value: str) -> str:
    if "%" not in value:
        return value
    out, i = [], 0
    while i < len(value):
        if value[i] == "%" and i + 2 < len(value):
            out.append(chr(int(value[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def request_lines(
    properties: Mapping[str, str],
    asked: Mapping[str, Sequence[TopicPartition]],
    chunk: int = PARTITIONS_PER_REQUEST,
    request_id: int = 0,
) -> list[str]:
    """One request in the reader's line protocol (GroupPositions.java says it whole)."""
    lines = [f"config\t{_encode(k)}\t{_encode(v)}" for k, v in sorted(properties.items())]
    lines.append(f"chunk\t{chunk}")
    for group, tps in asked.items():
        lines.append(f"ask\t{_encode(group)}")
        lines.extend(f"ask\t{_encode(group)}\t{_encode(tp.topic)}\t{tp.partition}" for tp in tps)
    lines.append(f"end\t{request_id}")
    return lines


def parse_answer(
    lines: Iterable[str], asked: Mapping[str, Sequence[TopicPartition]]
) -> dict[str, GroupRead]:
    """The reader's answer as a GroupRead per asked group. Raises GroupReaderError on an
    error line, and on an answer that leaves out a group or a partition it was asked
    (never read as "no position": that would protect, but silently)."""
    types: dict[str, GroupType] = {}
    positions: dict[str, dict[TopicPartition, int | None]] = {g: {} for g in asked}
    for line in lines:
        fields = [_decode(f) for f in line.split("\t")]
        if fields[0] == "error" and len(fields) == 3:
            raise GroupReaderError(fields[2], retriable=fields[1] == "retriable")
        try:
            if fields[0] == "type" and len(fields) == 3 and fields[1] in positions:
                types[fields[1]] = GroupType(fields[2])
                continue
            if fields[0] == "offset" and len(fields) == 5 and fields[1] in positions:
                tp = TopicPartition(fields[2], int(fields[3]))
                positions[fields[1]][tp] = None if fields[4] == "-" else int(fields[4])
                continue
        except ValueError:
            pass  # a type or a number that is not one: as malformed as an unknown line
        raise GroupReaderError(f"group reader: unexpected answer line {line[:200]!r}")
    out: dict[str, GroupRead] = {}
    for group, tps in asked.items():
        missing = [tp for tp in tps if tp not in positions[group]]
        if group not in types or missing:
            raise GroupReaderError(f"group reader: no answer for group {group}")
        out[group] = GroupRead(types[group], positions[group])
    return out


def tier_request_lines(
    properties: Mapping[str, str],
    tiers: Sequence[TopicPartition],
    sizes: Sequence[str],
    request_id: int = 0,
    chunk: int = PARTITIONS_PER_REQUEST,
) -> list[str]:
    """A request for tiered partitions' offsets and topics' local bytes."""
    lines = [f"config\t{_encode(k)}\t{_encode(v)}" for k, v in sorted(properties.items())]
    lines.append(f"chunk\t{chunk}")
    lines.extend(f"tier\t{_encode(tp.topic)}\t{tp.partition}" for tp in tiers)
    lines.extend(f"size\t{_encode(topic)}" for topic in sizes)
    lines.append(f"end\t{request_id}")
    return lines


def features_request_lines(properties: Mapping[str, str], request_id: int = 0) -> list[str]:
    """A request for the cluster's finalized and supported feature levels."""
    lines = [f"config\t{_encode(k)}\t{_encode(v)}" for k, v in sorted(properties.items())]
    lines += ["features", f"end\t{request_id}"]
    return lines


def parse_features(lines: Iterable[str]) -> ClusterFeatures:
    """The reader's answer to features_request_lines. Raises GroupReaderError on an error
    line or a malformed one."""
    finalized: dict[str, int] = {}
    supported: dict[str, int] = {}
    for line in lines:
        fields = [_decode(f) for f in line.split("\t")]
        if fields[0] == "error" and len(fields) == 3:
            raise GroupReaderError(fields[2], retriable=fields[1] == "retriable")
        if fields[0] in ("finalized", "supported") and len(fields) == 3:
            try:
                level = int(fields[2])
            except ValueError:
                pass
            else:
                (finalized if fields[0] == "finalized" else supported)[fields[1]] = level
                continue
        raise GroupReaderError(f"group reader: unexpected answer line {line[:200]!r}")
    return ClusterFeatures(finalized, supported)


def _offset(text: str) -> int | None:
    return None if text == "-" else int(text)


def parse_tiers(
    lines: Iterable[str], tiers: Sequence[TopicPartition]
) -> tuple[dict[TopicPartition, TierOffsets], dict[tuple[int, TopicPartition], int]]:
    """The reader's answer to tier_request_lines. Raises GroupReaderError on an error line,
    a malformed line, or a tiered partition left out of the answer."""
    offsets: dict[TopicPartition, TierOffsets] = {}
    sizes: dict[tuple[int, TopicPartition], int] = {}
    for line in lines:
        fields = [_decode(f) for f in line.split("\t")]
        if fields[0] == "error" and len(fields) == 3:
            raise GroupReaderError(fields[2], retriable=fields[1] == "retriable")
        try:
            if fields[0] == "tier" and len(fields) == 6:
                tp = TopicPartition(fields[1], int(fields[2]))
                offsets[tp] = TierOffsets(
                    _offset(fields[3]), _offset(fields[4]), _offset(fields[5])
                )
                continue
            if fields[0] == "bytes" and len(fields) == 5:
                sizes[(int(fields[1]), TopicPartition(fields[2], int(fields[3])))] = int(fields[4])
                continue
        except ValueError:
            pass  # a number that is not one: as malformed as an unknown line
        raise GroupReaderError(f"group reader: unexpected answer line {line[:200]!r}")
    missing = [tp for tp in tiers if tp not in offsets]
    if missing:
        raise GroupReaderError(f"group reader: no tier offsets for {missing[0]}")
    return offsets, sizes


def admin_properties(
    bootstrap: str, client_config: Mapping[str, str], timeout: float
) -> dict[str, str]:
    """The Java Admin's properties for a connection librdkafka's properties describe, its
    timeouts the adapter's. Raises core.java_client.Unmappable for a property Kafka's Java
    client has no equivalent of."""
    properties = java_properties(bootstrap, client_config)
    properties.pop("isolation.level", None)  # a consumer's setting, not an Admin's
    properties["default.api.timeout.ms"] = str(int(timeout * 1000))
    properties.setdefault("request.timeout.ms", str(int(timeout * 1000)))
    return properties


def jars_dir() -> Path | None:
    """The reader's jars, or None when this installation has none."""
    configured = os.environ.get(ENV)
    if not configured:
        return None
    path = Path(configured)
    return path if (path / JAR_NAME).is_file() else None


class GroupReader:
    """The reader process; callers on several threads wait for their own answers."""

    # A JVM start and an Admin's first metadata, on top of the requests' own timeouts.
    startup_allowance = 20.0

    def __init__(self, jars: Path) -> None:
        self._jars = jars
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._answers = _Answers()
        self._next_id = 0

    def _start(self) -> subprocess.Popen[str]:
        java_home = os.environ.get("JAVA_HOME")
        java = (
            str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or "java"
        )
        proc = subprocess.Popen(
            [java, *_JVM_OPTIONS, "-cp", f"{self._jars}/*", "GroupPositions"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        # Each process answers into a table of its own: a late answer of a process that
        # was replaced can never reach a caller of the new one.
        self._answers = _Answers()
        assert proc.stdout is not None
        threading.Thread(
            target=_pump, args=(proc.stdout, self._answers), daemon=True, name="group-reader"
        ).start()
        return proc

    def stop(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait()
                self._proc = None

    def read(
        self,
        properties: Mapping[str, str],
        asked: Mapping[str, Sequence[TopicPartition]],
        timeout: float,
    ) -> dict[str, GroupRead]:
        """Each asked group's type and positions. The deadline grows with the number of
        requests the reader makes (a listing, then a request a chunk of partitions)."""
        requests = 1 + sum(1 + len(tps) // PARTITIONS_PER_REQUEST for tps in asked.values())
        lines = self._ask(
            lambda request_id: request_lines(properties, asked, request_id=request_id),
            timeout * requests,
        )
        return parse_answer(lines, asked)

    def read_tiers(
        self,
        properties: Mapping[str, str],
        tiers: Sequence[TopicPartition],
        sizes: Sequence[str],
        timeout: float,
    ) -> tuple[dict[TopicPartition, TierOffsets], dict[tuple[int, TopicPartition], int]]:
        """Where each tiered partition's records are (earliest local, latest tiered,
        earliest pending upload), and each broker's local bytes of the `sizes` topics'
        partitions (DescribeLogDirs; remote bytes are never in it)."""
        requests = 2 + 3 * (1 + len(tiers) // PARTITIONS_PER_REQUEST)
        lines = self._ask(
            lambda request_id: tier_request_lines(properties, tiers, sizes, request_id),
            timeout * requests,
        )
        return parse_tiers(lines, tiers)

    def read_features(self, properties: Mapping[str, str], timeout: float) -> ClusterFeatures:
        """What the cluster runs: its finalized feature levels (metadata.version among
        them) and the answering broker's supported ones (DescribeFeatures)."""
        lines = self._ask(
            lambda request_id: features_request_lines(properties, request_id), timeout
        )
        return parse_features(lines)

    def _ask(self, build: Callable[[int], list[str]], budget: float) -> list[str]:
        """One request's answer lines (before parsing): written with a fresh id, waited
        for `budget` seconds besides the JVM's start."""
        deadline = self.startup_allowance + budget
        answer: queue.Queue[list[str] | None] = queue.Queue(maxsize=1)
        with self._lock:
            if self._proc is None or self._proc.poll() is not None or self._answers.ended:
                self._proc = self._start()
            proc, answers = self._proc, self._answers
            waiting = answers.waiting
            self._next_id += 1
            request_id = self._next_id
            waiting[request_id] = answer
            answered_before = answers.count
            if answers.ended:
                # It ended between the check above and this wait: nobody would answer.
                waiting.pop(request_id, None)
                raise GroupReaderError("group reader: the process ended")
            assert proc.stdin is not None
            try:
                text = "\n".join(build(request_id))
                proc.stdin.write(text + "\n")
                proc.stdin.flush()
            except OSError as exc:
                waiting.pop(request_id, None)
                proc.kill()
                raise GroupReaderError(f"group reader: {exc}") from exc
        try:
            lines = answer.get(timeout=deadline)
        except queue.Empty:
            waiting.pop(request_id, None)
            if answers.count == answered_before:
                # Not one answer to anybody all this while: the reader itself is stuck
                # (its own calls are bounded by their timeouts). The next read starts a
                # new one; an unreachable cluster only costs that restart.
                with self._lock:
                    if self._proc is proc:
                        proc.kill()
                        self._proc = None
            raise GroupReaderError(f"group reader: no answer within {deadline:.0f}s") from None
        if lines is None:
            raise GroupReaderError("group reader: the process ended")
        return lines


class _Answers:
    """One reader process's answers: who waits for which request id, and how many
    answers it has given (a reader that gives none while callers wait is stuck)."""

    def __init__(self) -> None:
        self.waiting: dict[int, queue.Queue[list[str] | None]] = {}
        self.count = 0
        # Set when the process's output ended. Its pipe closes before the process can be
        # reaped, so poll() may still say "running" for a moment: a read checks this too.
        self.ended = False


def _pump(stream: IO[str], answers: _Answers) -> None:
    """Hands each whole answer to the caller waiting for its id; an answer nobody waits
    for any more (its caller gave up) is dropped. At the end, every waiter hears None."""
    waiting = answers.waiting
    current: int | None = None
    lines: list[str] = []
    for raw in stream:
        line = raw.rstrip("\n")
        head, _, rest = line.partition("\t")
        if head == "answer":
            current, lines = _request_id(rest), []
        elif head == "done":
            answers.count += 1
            target = waiting.pop(current, None) if current is not None else None
            if target is not None:
                target.put(lines)
            current, lines = None, []
        else:
            lines.append(line)
    answers.ended = True  # before the waiters hear it: see GroupReader.read
    for target in list(waiting.values()):
        target.put(None)
    waiting.clear()


def _request_id(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


_shared: GroupReader | None = None
_shared_lock = threading.Lock()


def shared() -> GroupReader | None:
    """This process's reader (None without jars): one JVM however many clients ask."""
    global _shared
    jars = jars_dir()
    if jars is None:
        return None
    with _shared_lock:
        if _shared is None or _shared._jars != jars:
            _shared = GroupReader(jars)
        return _shared
