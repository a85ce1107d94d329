"""A stored RecordPurge plan, checked in full before it runs.

The plan lives in ConfigMaps in the purge's namespace, where its tenant may write
ConfigMaps: what comes back is a proposal. Before any DeleteRecords it must name exactly
partitions the spec covers (and the admission, which checked the spec's topics against
the binding), each once, no more of them than the binding's partitionsPerPurge, and cut
no higher than the spec asks as far as facts read now show: an explicit offset, the
first record at a timestamp. Group positions and the high watermark are not checked
here: execute re-reads the guard groups and lowers to them, and the broker holds a cut
to its own high watermark. Anything else ends the purge before a delete. Pure: the
service reads the facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge import PurgeRequest
from kafka_retention.core.purge_entry import PurgeEntry

# At most this many problems are named in the condition; the rest are counted.
MAX_NAMED = 5


def timestamp_partitions(
    request: PurgeRequest, entries: Sequence[PurgeEntry]
) -> dict[int, list[TopicPartition]]:
    """The pending partitions of each timestamp cut, by its time: their offsets at that
    time are the ceiling of their cuts."""
    times = {t.topic: t.timestamp_ms for t in request.topics if t.timestamp_ms is not None}
    out: dict[int, list[TopicPartition]] = {}
    for e in entries:
        if e.pending and e.topic in times and e.partition >= 0:
            out.setdefault(times[e.topic], []).append(e.tp)
    return out


def topic_cut_topics(request: PurgeRequest, entries: Sequence[PurgeEntry]) -> list[str]:
    """Whole-topic cuts with partitions still to cut: their partitions are read now."""
    cut = {t.topic for t in request.topics}
    return sorted({e.topic for e in entries if e.topic in cut and e.partition >= 0})


def problems(
    request: PurgeRequest,
    entries: Sequence[PurgeEntry],
    limit: int,
    partitions_now: Mapping[str, Sequence[int]],
    offsets_at: Mapping[TopicPartition, int | None],
) -> list[str]:
    """What is wrong with a stored plan, in words; empty when it may run.

    `partitions_now`: the partitions of each whole-topic cut's topic, read now (a topic
    missing here could not be read: its partitions are left to the broker, which cuts
    nothing on a topic it does not know). `offsets_at`: each timestamp cut's pending
    partition's first offset at its time, read now (None: no record that late)."""
    explicit = {c.tp: c.offset for c in request.partitions}
    whole = {t.topic for t in request.topics}
    found: list[str] = []
    if len(entries) > limit:
        found.append(f"{len(entries)} partitions where at most {limit} may be cut")
    seen: set[TopicPartition] = set()
    for e in entries:
        where = f"{e.topic}-{e.partition}"
        if e.tp in seen:
            found.append(f"{where} is listed twice")
            continue
        seen.add(e.tp)
        if e.topic not in whole and e.tp not in explicit:
            what = "a partition" if e.topic in {tp.topic for tp in explicit} else "a topic"
            found.append(f"{where} is {what} the spec does not name")
            continue
        if e.partition < 0:
            # A topic that could not be planned: the entry carries why, and cuts nothing.
            if e.pending:
                found.append(f"{e.topic} is to be cut but names no partition")
            continue
        known = partitions_now.get(e.topic)
        if e.topic in whole and known is not None and e.partition not in known:
            found.append(f"{where} is not a partition of {e.topic} ({len(known)} now)")
            continue
        if not e.pending:
            continue
        if e.requested_offset is None or e.log_start_before is None:
            found.append(f"{where} is to be cut but has no planned offset")
            continue
        ceiling = _ceiling(e, explicit.get(e.tp), offsets_at)
        if ceiling is not None and e.requested_offset > ceiling:
            found.append(f"{where} would be cut at {e.requested_offset}, above {ceiling}")
    return found


def _ceiling(
    entry: PurgeEntry, offset: int | None, offsets_at: Mapping[TopicPartition, int | None]
) -> int | None:
    """The highest cut the spec asks for this partition as far as is known without the
    groups' positions and the high watermark (None: no more than those)."""
    ceilings = [entry.high_watermark] if entry.high_watermark is not None else []
    if offset is not None and offset >= 0:
        ceilings.append(offset)
    at = offsets_at.get(entry.tp)
    if at is not None and at >= 0:
        ceilings.append(at)
    return min(ceilings) if ceilings else None


def refusal(found: Sequence[str]) -> str:
    """The condition's message for a stored plan with these problems."""
    named = "; ".join(found[:MAX_NAMED])
    more = f"; and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
    return f"the stored plan is not one the spec allows: {named}{more}"
