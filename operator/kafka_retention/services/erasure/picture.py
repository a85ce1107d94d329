"""What status shows of an erasure after a run (outcomes.Picture): the topics with their
stages and expected times, the summary and the deadline, built from where each entry
stands (Judged); and when to look again. Pure but for saving the evidence that outgrows
status to the erasure's ConfigMaps (evidence.save), which comes before any status write."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.conditions import Condition, Reason
from kafka_retention.core.erasure import ErasureRequest
from kafka_retention.core.erasure_deadlines import Expected, deadline_condition
from kafka_retention.core.erasure_scan import PartitionScan, TombstoneWrite
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.facts import TopicPartition
from kafka_retention.services.erasure import evidence as ev
from kafka_retention.services.erasure.cut import MAX_NAMED_GROUPS, PartitionCut, describe
from kafka_retention.services.erasure.evidence import Entry
from kafka_retention.services.erasure.inputs import Erasure
from kafka_retention.services.erasure.outcomes import Picture
from kafka_retention.services.erasure.select import Selection

MIN_DELAY_S, MAX_DELAY_S, UNBOUNDED_DELAY_S = 2.0, 300.0, 60.0
# Topic stages from least to most advanced: the resource's phase is its least advanced.
# A held cut first: it waits on someone else, not on Kafka. Cut (done, not yet verified)
# is one scan from KeyErased.
STAGES = (
    Phase.CUT_HELD,
    Phase.TOMBSTONED,
    Phase.AWAITING_RETENTION,
    Phase.CUT,
    Phase.VALUES_ERASED,
    Phase.KEY_ERASED,
)
# status.topics' notes are cut this long (the CRD's maxLength).
NOTE_LIMIT = 4096
# status.topics in all, as JSON: 500 topics with full notes and 20 long group names each
# would be about 4.5 MB, past what one status write may carry (etcd takes 1.5 MiB a
# request, the evidence shares it). Over this, notes and group names are shortened.
TOPICS_BUDGET = 400_000
_SHORT_NOTE = 240
_SHORT_GROUPS = 3


@dataclass
class Judged:
    """Where each entry of the topics scanned this run stands."""

    entries: list[Entry] = field(default_factory=list)
    stages: dict[str, list[Phase]] = field(default_factory=dict)  # topic -> entry stages
    expected: dict[str, list[int | None]] = field(default_factory=dict)  # next milestone
    # What the deadline is judged from: one per entry not erased yet (core.erasure_deadlines).
    expectations: list[Expected] = field(default_factory=list)
    notes: dict[str, set[str]] = field(default_factory=dict)
    writes: dict[int, tuple[TombstoneWrite, bool]] = field(default_factory=dict)  # i -> rewrite?
    segment_roll: bool = False
    rewritten: bool = False
    exhausted: list[str] = field(default_factory=list)
    # onDeleteTopics: cut (cut.py): each partition's cut as planned this run, the entries
    # to cut (i -> a rewrite after an earlier cut?), cuts Kafka did not take (why).
    cuts: dict[TopicPartition, PartitionCut] = field(default_factory=dict)
    to_cut: dict[int, bool] = field(default_factory=dict)
    cut_failed: dict[TopicPartition, str] = field(default_factory=dict)
    # Per topic, groups not read past a match (status.topics[].unreadBy); listed groups
    # whose positions were not read (too many).
    unread: dict[str, set[str]] = field(default_factory=dict)
    groups_not_read: int = 0
    # Summary totals this run adds (recordsCut, collateralRecords, collateralBytes).
    counted: dict[str, int] = field(default_factory=dict)


def build(
    erasure: Erasure,
    request: ErasureRequest,
    judged: Judged,
    scans: Mapping[TopicPartition, PartitionScan],
    selection: Selection,
    kept_topics: list[dict[str, Any]],
) -> Picture:
    topics = list(kept_topics)
    # Topics not looked at this run (retention not due yet) still bound the deadline.
    for kept in kept_topics:
        if kept.get("stage") == Phase.AWAITING_RETENTION:
            gone = expected_ms(kept)
            note = str(kept.get("note") or "retention removes the records")
            judged.expectations.append(
                Expected(gone, gone, note, str(kept["name"]), "retention.ms")
            )
    for topic in sorted(selection.partitions):
        stages = judged.stages.get(topic) or [Phase.KEY_ERASED]
        stage = min(stages, key=STAGES.index)
        entry: dict[str, Any] = {
            "name": topic,
            "kind": selection.cleaning[topic].kind,
            "stage": stage if not request.dry_run else Phase.SCANNING,
        }
        expected = judged.expected.get(topic) or []
        if expected and None not in expected:
            entry["expectedBy"] = time_of(max(e for e in expected if e is not None))
        notes = sorted(judged.notes.get(topic, set()))
        cuts = {tp: c for tp, c in judged.cuts.items() if tp.topic == topic}
        if request.dry_run and cuts:
            notes.append(describe(cuts))
        elif cuts and request.on_delete_topics == "cut":
            notes += [why for c in cuts.values() for why in c.held]
        notes += [
            f"{tp} not cut: {why}" for tp, why in judged.cut_failed.items() if tp.topic == topic
        ]
        if notes:
            entry["note"] = "; ".join(notes)[:NOTE_LIMIT]
        entry.update(_unread(erasure, judged, topic))
        topics.append(entry)
    topics.sort(key=lambda t: str(t["name"]))
    written = sum(1 for w in judged.writes if "tombstone" in judged.entries[w])
    previous = erasure.status.get("summary") or {}
    tombstones = int(previous.get("tombstonesWritten", 0)) + (0 if request.dry_run else written)
    counts = {"tombstonesWritten": tombstones}
    if request.on_delete_topics == "cut" and not request.dry_run:
        # What the cuts removed, over every run that cut.
        for name in CUT_COUNTS:
            counts[name] = int(previous.get(name, 0)) + judged.counted.get(name, 0)
    else:
        # What cuts just past the last matches would remove now (a dry run shows it
        # before acceptCollateral; report mode, what cut would cost).
        going = [c for c in judged.cuts.values() if not c.held]
        counts["collateralRecords"] = sum(c.collateral_records for c in going)
        counts["collateralBytes"] = sum(c.collateral_bytes for c in going)
    return picture_of(erasure, request, judged.entries, scans, topics, judged.expectations, counts)


# status.summary's cut totals (carried from run to run under onDeleteTopics: cut).
CUT_COUNTS = ("recordsCut", "collateralRecords", "collateralBytes")


def _unread(erasure: Erasure, judged: Judged, topic: str) -> dict[str, Any]:
    """status.topics[].unreadBy: the groups not read past a match, as the first scan (or
    the latest cut) read them; a topic whose groups this run did not read keeps what
    status said."""
    if topic not in judged.unread:
        for kept in erasure.status.get("topics") or []:
            if isinstance(kept, Mapping) and kept.get("name") == topic:
                return {k: kept[k] for k in ("unreadBy", "unreadByCount") if k in kept}
        return {}
    groups = sorted(judged.unread[topic])
    out: dict[str, Any] = {"unreadBy": groups[:MAX_NAMED_GROUPS], "unreadByCount": len(groups)}
    if judged.groups_not_read:
        out["groupsNotRead"] = judged.groups_not_read
    return out


def picture_of(
    erasure: Erasure,
    request: ErasureRequest,
    entries: Sequence[Entry],
    scans: Mapping[TopicPartition, PartitionScan],
    topics: Sequence[Mapping[str, Any]],
    expectations: Sequence[Expected],
    counts: Mapping[str, int],
) -> Picture:
    """Status's view of the run: `expectations` are the entries not erased yet, each
    with when its values and its key are expected gone (None: nothing bounds it)."""
    created_ms = ms(erasure.created) if erasure.created else ms(erasure.now())
    deadline: dict[str, Any] = {"requestedBy": time_of(created_ms + request.deadline_ms)}
    for name, times in (
        ("expectedValuesErasedAt", [e.values_erased_ms for e in expectations]),
        ("expectedKeyErasedAt", [e.key_erased_ms for e in expectations]),
    ):
        bounded = [t for t in times if t is not None]
        if bounded and len(bounded) == len(times):
            deadline[name] = time_of(max(bounded))
    at_risk = deadline_condition(list(expectations), created_ms, request.deadline_ms)
    deadline["atRisk"] = at_risk.status == "True"
    if at_risk.message:
        deadline["note"] = at_risk.message[:NOTE_LIMIT]
    topics = fit_topics(topics)
    summary = {
        "topics": len(topics),
        "partitionsScanned": len(scans),
        "recordsExamined": sum(s.examined for s in scans.values()),
        "digests": len(request.digests()),
        "digestsFound": ev.digests_found(entries),
        "matchesRemaining": sum(ev.matches(e) for e in entries if e.get("digest")),
        "tombstonesWritten": 0,
        **counts,
    }
    ref = ev.save(entries, erasure.blobs)
    return Picture(topics, entries, ref, summary, deadline, at_risk)


def fit_topics(topics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """status.topics within TOPICS_BUDGET: first each note cut short and each unreadBy
    list to a few names (unreadByCount keeps the count), then without notes and lists.
    Names, kinds, stages and times always stay: they are what `kubectl get` and the
    phase are read from; the evidence ConfigMaps hold the rest."""
    out = [dict(t) for t in topics]
    if _size(out) <= TOPICS_BUDGET:
        return out
    for t in out:
        note = t.get("note")
        if isinstance(note, str) and len(note) > _SHORT_NOTE:
            t["note"] = note[: _SHORT_NOTE - 3] + "..."
        if isinstance(t.get("unreadBy"), list):
            t["unreadBy"] = t["unreadBy"][:_SHORT_GROUPS]
    if _size(out) <= TOPICS_BUDGET:
        return out
    for t in out:
        t.pop("note", None)
        t.pop("unreadBy", None)
    return out


def _size(topics: Sequence[Mapping[str, Any]]) -> int:
    return len(json.dumps(topics, separators=(",", ":")))


def stored_picture(erasure: Erasure, known: list[Entry]) -> Picture:
    """What status already says, for a step that scans nothing."""
    st = erasure.status
    at_risk = Condition("DeadlineAtRisk", "Unknown", Reason.ERASURE_DEADLINE_MET, "")
    for c in st.get("conditions") or []:
        if c.get("type") == "DeadlineAtRisk" and c.get("reason") in set(Reason):
            at_risk = Condition(
                "DeadlineAtRisk", c["status"], Reason(c["reason"]), str(c.get("message", ""))
            )
    return Picture(
        [dict(t) for t in st.get("topics") or []],
        known,
        st.get("evidenceRef") or None,
        dict(st.get("summary") or {}),
        dict(st.get("deadline") or {}),
        at_risk,
    )


def phase_of(topics: Sequence[Mapping[str, Any]]) -> Phase:
    stages = [Phase(t["stage"]) for t in topics if t.get("stage") in STAGES]
    return min(stages, key=STAGES.index) if stages else Phase.KEY_ERASED


def delays(topics: Sequence[Mapping[str, Any]], now_ms: int) -> float:
    waiting = [expected_ms(t) for t in topics if t.get("stage") != Phase.KEY_ERASED]
    bounded = [e for e in waiting if e is not None]
    return next_delay(min(bounded) if bounded else None, now_ms)


def next_delay(expected_ms: int | None, now_ms: int) -> float:
    """Seconds until the next look: a quarter of the time left to the expected moment;
    once it has passed, half the time since (a quiet topic's cleaner may never come, and
    a rescan reads whole partitions: the looks grow apart); between 2 s and 300 s."""
    if expected_ms is None:
        return UNBOUNDED_DELAY_S
    gap_s = (expected_ms - now_ms) / 1000
    wanted = gap_s / 4 if gap_s > 0 else -gap_s / 2
    return min(max(wanted, MIN_DELAY_S), MAX_DELAY_S)


def expected_ms(topic: Mapping[str, Any]) -> int | None:
    return ms_of(topic.get("expectedBy"))


def ms_of(text: object) -> int | None:
    """A time as status holds it (RFC 3339, Z), in milliseconds; None if it is not one."""
    if not isinstance(text, str):
        return None
    try:
        return ms(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def time_of(ms: int) -> str:
    return cond.timestamp(datetime.fromtimestamp(ms / 1000).astimezone())
