"""RecordErasure reconciliation: a state machine over status.phase, one step per run.

    Pending -> Scanning -> Tombstoned -> ValuesErased -> KeyErased (receipt signed)
                     \\-> AwaitingRetention ------------/
    (DryRun, Failed: final too)

Every run first parses the spec and asks tenancy (a refusal ends Failed with nothing
read or written; so does a topic an earlier run selected that the grant no longer
allows), then takes one step from where status says the erasure is:

    first scan ..... every selected partition read [log start, high watermark); the
                     evidence; a dry run ends here; tombstones written to compacted
                     topics only, for each (partition, digest) whose last record with
                     the key is a value (one already followed by a tombstone gets none)
    follow-up ...... the partitions involved read again once the cleaner (or retention)
                     is expected to have acted: values gone -> ValuesErased; a key
                     written again after its tombstone gets a new one
                     (MAX_TOMBSTONE_ROUNDS in all, then Failed)
    final scan ..... when every match seems gone: every partition of every topic
                     selected now, read whole; a listed key found anywhere is judged as
                     above (not finished), else KeyErased
    receipt ........ in the final scan's run only, stating that scan's time: the
                     evidence signed (Ed25519) and stored in the erasure's ConfigMaps; a
                     key that cannot be read waits, unsigned, and the next run scans
                     again before it signs

Evidence read back from the ConfigMaps that does not match the checksum status recorded
is lost: the first scan runs again. A status write the API server refuses leaves status
as it was (status.py): every step may run twice without writing anything twice.

A tombstone is NEVER written to a topic that is not compacted (delete or tiered): Kafka
would store it, one more copy of the key, and erase nothing. Those topics are reported
(AwaitingRetention) and scanned again when retention should have removed the matches.
The resource's phase is its least advanced topic's stage.

Between steps the run asks to be called again after a delay from the expected times
(`next_delay`). status.py alone writes status.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.bindings import Grant
from kafka_retention.core.conditions import EventReason, Reason
from kafka_retention.core.erasure import ErasureRequest, parse_erasure_spec
from kafka_retention.core.erasure_deadlines import (
    Cleaning,
    Expected,
    expected_compaction,
    expected_retention,
)
from kafka_retention.core.erasure_scan import (
    DigestHits,
    PartitionScan,
    TombstoneWrite,
    WrittenTombstone,
)
from kafka_retention.core.erasure_states import FINAL_PHASES, Phase
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import (
    KafkaFailure,
    KafkaUnavailable,
    SecretUnavailable,
    Unresolved,
    WriteRefused,
)
from kafka_retention.core.ledger import LedgerBehind, cluster_name
from kafka_retention.core.receipts import receipt, sign
from kafka_retention.core.specs import SpecError
from kafka_retention.services import tenancy
from kafka_retention.services.cutting import Applied
from kafka_retention.services.erasure import cut, ledger, status
from kafka_retention.services.erasure import evidence as ev
from kafka_retention.services.erasure.cut import PartitionCut
from kafka_retention.services.erasure.evidence import Entry
from kafka_retention.services.erasure.inputs import Erasure
from kafka_retention.services.erasure.outcomes import (
    Completed,
    Event,
    NotReady,
    Outcome,
    Picture,
    Refusal,
    Run,
    Scanning,
    Unsigned,
    Waiting,
)
from kafka_retention.services.erasure.picture import (
    Judged,
    build,
    delays,
    expected_ms,
    ms,
    ms_of,
    next_delay,
    phase_of,
    picture_of,
    stored_picture,
    time_of,
)
from kafka_retention.services.erasure.scan import scan
from kafka_retention.services.erasure.select import (
    Selection,
    cleaning_of,
    select_topics,
    topic_refusal,
)
from kafka_retention.services.fresh import read_positions
from kafka_retention.services.ports import ErasureKafka

__all__ = ["MAX_TOMBSTONE_ROUNDS", "finished", "next_delay", "reconcile"]

# Tombstones written for one (partition, digest): the first and two after rewrites.
MAX_TOMBSTONE_ROUNDS = 3
_UNSIGNED_DELAY_S = 30.0
# A ledger that could not be brought up to date (a full shard, conflicts, a refusal) is
# tried again after this; each try scans the erasure's partitions again first.
_LEDGER_DELAY_S = 300.0
# status.topics holds at most this many (the CRD's maxItems).
MAX_TOPICS = 500


def finished(status_: Mapping[str, Any]) -> bool:
    """Whether the erasure needs no more runs: a final phase, and at KeyErased a receipt."""
    phase = status_.get("phase")
    if phase not in FINAL_PHASES:
        return False
    return phase != Phase.KEY_ERASED or bool(status_.get("receipt"))


def reconcile(erasure: Erasure) -> Outcome:
    if finished(erasure.status):
        return Outcome(str(erasure.status.get("phase")), "already complete", finished=True)
    try:
        request = parse_erasure_spec(erasure.spec)
    except SpecError as err:
        message = f"{err}; nothing was read or written"
        return status.end(erasure, Refusal(Reason.INVALID_SPEC, message, err.field))
    phase = _phase(erasure.status)
    run = Run(erasure.generation, erasure.status.get("startedAt") or cond.timestamp(erasure.now()))
    try:
        grant = erasure.admit(erasure.spec, request) if erasure.admit is not None else None
        ungranted = _ungranted(erasure.status, grant)
        if ungranted is not None:
            return status.end(erasure, ungranted)
        kafka = erasure.connect(request)
        step = _step(Turn(erasure, run, kafka, request, grant), phase)
    except tenancy.Refused as err:
        message = f"{err}; nothing was read or written"
        return status.end(erasure, Refusal(err.reason, message, err.field))
    except (KafkaUnavailable, Unresolved, tenancy.BindingUnavailable) as err:
        reason = Reason.KAFKA_UNAVAILABLE if isinstance(err, KafkaUnavailable) else err.reason
        raise status.retry(erasure, NotReady(run, phase, reason, str(err))) from err
    except WriteRefused as err:
        message = f"the erasure's ConfigMaps not stored: HTTP {err.status} {err.reason}"
        waiting = NotReady(run, phase, Reason.STATE_NOT_PERSISTED, message)
        raise status.retry(erasure, waiting) from err
    if isinstance(step, Completed | Refusal):
        return status.end(erasure, step)
    raise status.retry(erasure, step)


Step = Completed | Refusal | Waiting | Unsigned


@dataclass(frozen=True)
class Turn:
    """One run of one erasure: what each of its steps reads (the spec parsed and admitted,
    the grant it runs under, the cluster connected)."""

    erasure: Erasure
    run: Run
    kafka: ErasureKafka
    request: ErasureRequest
    grant: Grant | None


def _phase(status_: Mapping[str, Any]) -> Phase:
    try:
        return Phase(status_.get("phase") or Phase.PENDING)
    except ValueError:
        return Phase.PENDING


def _ungranted(status_: Mapping[str, Any], grant: Grant | None) -> Refusal | None:
    """A topic an earlier run selected that the grant no longer allows (an administrator
    narrowed allow or added protect): the erasure stops before anything is contacted,
    and nothing more is written there. Pattern topics come back from status.topics, so
    the grant is applied to them again on every run, not only on the first."""
    named = {t.get("name") for t in status_.get("topics") or [] if isinstance(t, Mapping)}
    for topic in sorted(n for n in named if isinstance(n, str)):
        why = topic_refusal(grant, topic)
        if why is not None:
            message = (
                f"spec.topics selected {topic} earlier, and now {why}; the erasure stops and "
                "nothing more is written to it"
            )
            return Refusal(Reason.NOT_PERMITTED, message, "spec.topics")
    return None


def _step(turn: Turn, phase: Phase) -> Step:
    lost = ""
    if phase not in (Phase.PENDING, Phase.SCANNING):
        try:
            known = ev.load(turn.erasure.status, turn.erasure.blobs)
        except ev.EvidenceLost as err:
            # Never judged (let alone signed) from: scanned again from the start, every
            # selected partition, the log being the truth. Tombstones already written
            # are found there and not written again (_judge_entry).
            known, lost = None, f"{err}: every partition is scanned again"
        if known is not None:
            if phase == Phase.KEY_ERASED:
                # Erased but unsigned (the signing key was unavailable): a receipt
                # states a scan of its own run, never one of an earlier run.
                return _final(turn, known, [])
            return _follow(turn, known)
    status.write(turn.erasure, Scanning(turn.run, lost))
    return _first(turn)


def _selected(
    kafka: ErasureKafka, request: ErasureRequest, grant: Grant | None, first: bool = True
) -> Selection | Refusal:
    """Every topic spec.topics selects now, within the grant, with its partitions."""
    selection = select_topics(kafka, request, grant)
    done = "no record was read or written" if first else "the erasure is not complete"
    if selection.missing:
        return _not_found(request, selection.missing, done)
    if selection.problems:
        raise Unresolved(Reason.KAFKA_UNAVAILABLE, "; ".join(sorted(selection.problems.values())))
    if not selection.partitions:
        # A receipt for no topic would vouch for nothing: a pattern that matches none
        # (or none the binding allows) ends the erasure.
        message = f"no topic the binding allows matches spec.topics; {done}"
        field = "spec.topics.pattern" if request.pattern else "spec.topics"
        return Refusal(Reason.TOPIC_NOT_FOUND, message, field)
    if len(selection.partitions) > MAX_TOPICS:
        message = (
            f"spec.topics selects {len(selection.partitions)} topics; at most {MAX_TOPICS} in "
            f"one RecordErasure (status lists each): split it; {done}"
        )
        return Refusal(Reason.INVALID_SPEC, message, "spec.topics")
    return selection


def _not_found(request: ErasureRequest, missing: list[str], done: str) -> Refusal:
    """A topic that does not exist (or no longer does) ends the erasure, naming it: a
    typo must not end in a receipt for a topic never read."""
    topic = sorted(missing)[0]
    named = [i for i, t in enumerate(request.names) if t == topic]
    field = f"spec.topics.names[{named[0]}]" if named else "spec.topics.pattern"
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return Refusal(Reason.TOPIC_NOT_FOUND, f"topic {topic} does not exist{more}; {done}", field)


def _first(turn: Turn) -> Step:
    selection = _selected(turn.kafka, turn.request, turn.grant)
    if isinstance(selection, Refusal):
        return selection
    tps = [TopicPartition(t, p) for t, parts in selection.partitions.items() for p in parts]
    digests = turn.request.digests()
    scans = scan(turn.kafka, tps, digests)
    at = cond.timestamp(turn.erasure.now())
    found = ev.first_scan(scans, at)
    if found:
        return _judge(turn, selection, found, scans, [], first=True)
    # The first scan read every selected partition and found nothing: it is the final one.
    topics = [
        {
            "name": t,
            "kind": selection.cleaning[t].kind,
            "stage": Phase.KEY_ERASED,
            "note": f"none of the {len(digests)} digests is in its "
            f"{len(selection.partitions[t])} partitions",
        }
        for t in sorted(selection.partitions)
    ]
    picture = picture_of(
        turn.erasure, turn.request, ev.nothing_found(scans, at), scans, topics, [], {}
    )
    message = f"none of the {len(digests)} digests was found in {len(scans)} partitions"
    if turn.request.dry_run:
        return Completed(turn.run, Phase.DRY_RUN, picture, Reason.DRY_RUN_COMPLETED, message)
    events: list[Event] = [(EventReason.KEY_ERASED, message)]
    return _sign(turn, picture, events, at)


def _final(turn: Turn, known: list[Entry], events: list[Event]) -> Step:
    """The scan that grants KeyErased: every partition of every topic selected now (the
    pattern and the grant applied again), log start to high watermark. A listed key
    found anywhere, in a partition or topic where it never was too, gets its entry and
    (compacted topics) its tombstone: then the erasure is not finished."""
    selection = _selected(turn.kafka, turn.request, turn.grant, first=False)
    if isinstance(selection, Refusal):
        return selection
    tps = [TopicPartition(t, p) for t, parts in selection.partitions.items() for p in parts]
    scans = scan(turn.kafka, tps, turn.request.digests())
    return _judge(turn, selection, known, scans, [], first=False, final=events)


def _follow(turn: Turn, known: list[Entry]) -> Step:
    """The topics not erased yet and due for a look, scanned again where the keys were."""
    now_ms = ms(turn.erasure.now())
    topics = [dict(t) for t in turn.erasure.status.get("topics") or []]
    open_ = [t for t in topics if t.get("stage") != Phase.KEY_ERASED]
    held = _phase(turn.erasure.status) == Phase.CUT_HELD
    scanned = _last_scans(known)
    due = [str(t.get("name")) for t in open_ if _due(t, held, scanned, now_ms)]
    waiting = [t for t in open_ if str(t.get("name")) not in due]
    due += _retention_passed(turn.kafka, known, waiting)
    due += _released(turn, known, [t for t in waiting if str(t.get("name")) not in due])
    if not due:
        picture = stored_picture(turn.erasure, known)
        phase = phase_of(topics)
        # A held cut's condition names its group and partition: kept while nothing moved.
        reason, message = _stored_erased(turn.erasure, phase) or (
            Reason.AWAITING_RETENTION,
            "waiting for retention",
        )
        return _waiting(
            turn.erasure,
            turn.run,
            phase,
            picture,
            reason,
            message,
            _delay(phase, topics, now_ms),
            [],
        )
    selection = cleaning_of(turn.kafka, due)
    if selection.missing:
        return _not_found(turn.request, selection.missing, "the erasure is not complete")
    if selection.problems:
        raise Unresolved(Reason.KAFKA_UNAVAILABLE, "; ".join(sorted(selection.problems.values())))
    tps = {
        ev.tp_of(e) for e in known if e.get("digest") and ev.tp_of(e).topic in selection.partitions
    }
    scans = scan(turn.kafka, tps, turn.request.digests())
    kept = [t for t in topics if t.get("name") not in selection.partitions]
    return _judge(turn, selection, known, scans, kept, first=False)


def _due(topic: Mapping[str, Any], held: bool, scanned: Mapping[str, int], now_ms: int) -> bool:
    """Whether a topic not erased yet is scanned in this run (before the checks of
    retention and of held cuts, which read offsets only). `scanned`: each topic's last
    scan (_last_scans)."""
    if topic.get("kind") == "compacted":
        # Every run, at the cleaner's pace; at its own while a held cut wakes the erasure.
        return not held or _own_time(topic, scanned, now_ms)
    expected = expected_ms(topic)
    if expected is None:
        # Nothing bounds it: a held cut waits for its group (_released), the rest look now.
        return topic.get("stage") != Phase.CUT_HELD
    return expected <= now_ms


def _released(
    turn: Turn, known: Sequence[Entry], waiting: Sequence[Mapping[str, Any]]
) -> list[str]:
    """The topics whose cut was held where every protected group has now committed past
    each held partition's last match (positions only, no record read): scanned now, and
    cut if the scan still finds the keys."""
    held = {str(t.get("name")) for t in waiting if t.get("stage") == Phase.CUT_HELD}
    last: dict[TopicPartition, int] = {}
    for entry in known:
        tp, cut_at = ev.tp_of(entry), ev.last_cut(entry)
        # Held: a partition with a match its latest cut (if any) did not pass.
        if (
            entry.get("digest")
            and tp.topic in held
            and (cut_at is None or cut_at <= ev.last_match(entry))
        ):
            last[tp] = max(last.get(tp, -1), ev.last_match(entry))
    if not last or not turn.request.protect_groups:
        return sorted({tp.topic for tp in last})
    positions = read_positions(turn.kafka, sorted(last), lambda _tp: turn.request.protect_groups)
    released: set[str] = set()
    for tp, at in positions.items():
        if all(p is not None and p > last[tp] for p in at.values()):
            released.add(tp.topic)
    return sorted(released)


def _last_scans(known: Sequence[Entry]) -> dict[str, int]:
    """Each topic's latest scan time (ms) in the evidence: one pass over the entries, not
    one a compacted topic (a held cut's wake-ups come every HELD_DELAY_S)."""
    out: dict[str, int] = {}
    for e in known:
        topic = str(e.get("topic"))
        for s in e.get("scans") or []:
            if isinstance(s, Mapping) and (at := ms_of(s.get("at"))) is not None:
                out[topic] = max(out.get(topic, at), at)
    return out


def _own_time(topic: Mapping[str, Any], scanned: Mapping[str, int], now_ms: int) -> bool:
    """Whether a compacted topic's own cadence (next_delay from its expected time, since
    its last scan) has come. A held cut wakes the erasure every HELD_DELAY_S for a
    position read; without this, each wake-up would read every compacted topic whole."""
    last = scanned.get(str(topic.get("name")))
    if last is None:
        return True
    # 0.9: a wake-up may come a little before the delay it was given.
    return now_ms - last >= 0.9 * 1000 * next_delay(expected_ms(topic), last)


def _retention_passed(
    kafka: ErasureKafka, known: Sequence[Entry], waiting: Sequence[Mapping[str, Any]]
) -> list[str]:
    """The topics awaiting retention whose log start offsets already passed every match
    (retention came before its bound): worth a scan now, which reads what is left. One
    log_bounds call, no record read."""
    names = {str(t.get("name")) for t in waiting}
    last: dict[TopicPartition, int] = {}
    for entry in known:
        tp = ev.tp_of(entry)
        if entry.get("digest") and tp.topic in names:
            last[tp] = max(last.get(tp, -1), ev.last_match(entry))
    if not last:
        return []
    starts, _ = kafka.log_bounds(list(last))
    unpassed: set[str] = set()
    for tp, offset in last.items():
        start = starts.get(tp)
        if not isinstance(start, int) or start <= offset:
            unpassed.add(tp.topic)
    return sorted({tp.topic for tp in last} - unpassed)


def _judge(
    turn: Turn,
    selection: Selection,
    known: list[Entry],
    scans: Mapping[TopicPartition, PartitionScan],
    kept_topics: list[dict[str, Any]],
    first: bool,
    final: list[Event] | None = None,
) -> Step:
    """Where each entry stands after this run's scans, the tombstones it needs written,
    and the step that follows. `final`: the scans are _final's (every partition of every
    selected topic), with the events of the run so far; only then is KeyErased granted,
    else a scan that finds every key gone leads to _final (with `grant`)."""
    now = turn.erasure.now()
    at, now_ms = cond.timestamp(now), ms(now)
    entries = list(known)
    seen = {(ev.tp_of(e), e.get("digest")) for e in entries}
    # A listed key found where it was not before (a partition scanned for another one).
    for tp, partition_scan in sorted(scans.items()):
        for listed, listed_hits in sorted(partition_scan.hits.items()):
            if listed_hits.records and (tp, listed) not in seen:
                entries.append(
                    {"topic": tp.topic, "partition": tp.partition, "digest": listed, "scans": []}
                )
    judged = Judged()
    _guard(turn, selection, scans, judged, first or turn.request.dry_run)
    cutting = turn.request.on_delete_topics == "cut"
    for i, entry in enumerate(entries):
        tp, digest = ev.tp_of(entry), entry.get("digest")
        if tp.topic not in selection.cleaning or tp not in scans or not digest:
            judged.entries.append(entry)
            continue
        found = scans[tp]
        hits = found.hits.get(str(digest))
        entry = _judge_entry(
            judged,
            i,
            entry,
            selection.cleaning[tp.topic],
            found,
            hits,
            at,
            now_ms,
            first,
            judged.cuts.get(tp) if cutting else None,
        )
        judged.entries.append(entry)
    if judged.exhausted:
        message = (
            f"a listed key was written again after {MAX_TOMBSTONE_ROUNDS} tombstones or cuts "
            f"in {', '.join(judged.exhausted[:5])}: a producer still writes it; stop it, "
            "then create a new RecordErasure"
        )
        picture = build(turn.erasure, turn.request, judged, scans, selection, kept_topics)
        return Completed(turn.run, Phase.FAILED, picture, Reason.KEY_REWRITTEN, message)
    events: list[Event] = list(final or [])
    if final is not None and not judged.writes and not turn.request.dry_run and _all_erased(judged):
        # Erased: the receipt shows this scan of every partition, matches or not.
        judged.entries = ev.with_partition_scans(judged.entries, scans, at)
    if judged.to_cut and not turn.request.dry_run:
        # Before anything is written in this run: a refusal leaves no tombstone unrecorded.
        above = _above_limit(turn, judged)
        if above is not None:
            return above
    if judged.writes and not turn.request.dry_run:
        events.append(_write(turn.kafka, judged))
    if judged.to_cut and not turn.request.dry_run:
        events.append(_cut(turn.kafka, judged, at, turn.request.protect_groups))
    picture = build(turn.erasure, turn.request, judged, scans, selection, kept_topics)
    if turn.request.dry_run:
        message = (
            f"{picture.summary['digestsFound']} of {picture.summary['digests']} digests found, "
            f"{picture.summary['matchesRemaining']} records; {len(judged.writes)} tombstones "
            "would be written"
        )
        if judged.cuts:
            message += f"; {cut.describe(judged.cuts)}"
            if not cutting:
                message += " (onDeleteTopics is report: nothing would be cut)"
        return Completed(turn.run, Phase.DRY_RUN, picture, Reason.DRY_RUN_COMPLETED, message)
    phase = phase_of(picture.topics)
    previous = _phase(turn.erasure.status)
    if picture.at_risk.status == "True" and not _was_at_risk(turn.erasure):
        events.append((EventReason.ERASURE_DEADLINE_AT_RISK, picture.at_risk.message[:1000]))
    if phase == Phase.KEY_ERASED:
        if final is None:
            known = [dict(e) for e in picture.evidence]
            return _final(turn, known, events)
        if previous != Phase.KEY_ERASED:
            message = f"no record with any of the {picture.summary['digests']} digests is left"
            events.append((EventReason.KEY_ERASED, message))
        return _sign(turn, picture, events, at)
    if phase == Phase.CUT_HELD and previous != Phase.CUT_HELD:
        held = cut.held_message(judged.cuts.values())
        events.append((EventReason.CUT_HELD, held[:1000]))
    if phase == Phase.VALUES_ERASED and previous != Phase.VALUES_ERASED:
        events.append(
            (EventReason.VALUES_ERASED, "no value with a listed key is left; tombstones remain")
        )
    reason, message = _erased_reason(phase, judged)
    if phase == Phase.CUT_HELD and not any(c.held for c in judged.cuts.values()):
        # Held on a topic this run did not scan: what the run that held it said.
        reason, message = _stored_erased(turn.erasure, phase) or (reason, message)
    return _waiting(
        turn.erasure,
        turn.run,
        phase,
        picture,
        reason,
        message,
        _delay(phase, picture.topics, now_ms),
        events,
    )


def _all_erased(judged: Judged) -> bool:
    return all(stage == Phase.KEY_ERASED for stages in judged.stages.values() for stage in stages)


def _judge_entry(
    judged: Judged,
    i: int,
    entry: Entry,
    cleaning: Cleaning,
    found: PartitionScan,
    hits: DigestHits | None,
    at: str,
    now_ms: int,
    first: bool,
    planned: PartitionCut | None,
) -> Entry:
    """Where one (partition, digest) stands. `planned`: its partition's cut this run
    (onDeleteTopics: cut, on a topic that cannot be compacted), else None."""
    topic = found.tp.topic
    tombstone = entry.get("tombstone")
    stage: Phase
    answered = False  # a tombstone this run found after the key's last value
    if hits is None or not hits.records:
        stage = Phase.KEY_ERASED
    elif cleaning.kind != "compacted" and planned is not None:
        stage = Phase.CUT_HELD if planned.held else Phase.CUT
        cut_at = ev.last_cut(entry)
        # Records with the key at or past an earlier cut were written after it; below
        # it, the cut did not take (it failed, or was held): cut again, not a rewrite.
        rewrite = cut_at is not None and hits.first_offset >= cut_at
        if stage == Phase.CUT and rewrite and ev.rewrites(entry) + 1 >= MAX_TOMBSTONE_ROUNDS:
            judged.exhausted.append(f"{found.tp} ({entry['digest']})")
        elif stage == Phase.CUT:
            judged.to_cut[i] = rewrite
            judged.rewritten |= rewrite
    elif cleaning.kind != "compacted":
        stage = Phase.AWAITING_RETENTION  # reported: never a tombstone here
    elif not hits.values:
        stage = Phase.VALUES_ERASED
    elif (
        hits.last_tombstone_offset is not None
        and hits.last_value_offset is not None
        and hits.last_value_offset < hits.last_tombstone_offset
    ):
        # A tombstone already follows every value: the one status records, or one a run
        # wrote whose status was never stored (a refused patch, lost evidence), or the
        # producer's own. Never a second one: the step is idempotent.
        stage = Phase.TOMBSTONED
        recorded = int(tombstone["offset"]) if tombstone is not None else None
        if recorded != hits.last_tombstone_offset:
            # A value after the recorded tombstone was answered by a run whose status was
            # not stored: that round counts (MAX_TOMBSTONE_ROUNDS).
            answered = recorded is not None and hits.last_value_offset > recorded
            entry = ev.with_tombstone(
                entry, WrittenTombstone(hits.last_tombstone_offset, hits.last_timestamp_ms)
            )
        if found.end == hits.last_tombstone_offset + 1:
            judged.segment_roll = True  # nothing written after it: the segment cannot roll
    else:
        stage = Phase.TOMBSTONED
        # After the first scan, a value to tombstone is one written after the erasure began.
        rewrite = not first
        if rewrite and ev.rewrites(entry) + 1 >= MAX_TOMBSTONE_ROUNDS:
            judged.exhausted.append(f"{found.tp} ({entry['digest']})")
        elif hits.last_value_offset is not None:
            write = TombstoneWrite(found.tp, str(entry["digest"]), hits.last_value_offset)
            judged.writes[i] = (write, rewrite)
            judged.rewritten |= rewrite
    label = Phase.SCANNING if first else stage
    if answered or (i in judged.writes and judged.writes[i][1]) or judged.to_cut.get(i):
        label = ev.KEY_REWRITTEN  # type: ignore[assignment]
    entry = ev.add_scan(entry, ev.scan_record(label, at, found, hits))
    # When the next milestone is expected: the cleaner's from the tombstone's time (now,
    # for one about to be written), retention's from the last match's.
    written_ms = ev.tombstone_ms(entry) if i not in judged.writes else None
    tomb_ms = written_ms if written_ms is not None else now_ms
    expected: Expected | None = None
    if stage in (Phase.TOMBSTONED, Phase.VALUES_ERASED):
        expected = expected_compaction(cleaning, tomb_ms)
    elif stage in (Phase.AWAITING_RETENTION, Phase.CUT_HELD) and hits is not None:
        expected = _by_retention(cleaning, expected_retention(cleaning, hits.last_timestamp_ms))
    elif stage == Phase.CUT:
        # Cut in this run, verified by the next one's scan.
        expected = Expected(now_ms, now_ms, "cut now", topic, "onDeleteTopics")
    if expected is not None:
        milestone = (
            expected.values_erased_ms if stage == Phase.TOMBSTONED else expected.key_erased_ms
        )
        judged.expected.setdefault(topic, []).append(milestone)
        judged.expectations.append(expected)
        if expected.key_erased_ms is None:
            judged.notes.setdefault(topic, set()).add(expected.note)
    judged.stages.setdefault(topic, []).append(stage)
    return entry


def _guard(
    turn: Turn,
    selection: Selection,
    scans: Mapping[TopicPartition, PartitionScan],
    judged: Judged,
    first: bool,
) -> None:
    """The fresh read of the partitions with a match (cut.py): who has not read past a
    match, per topic; and on topics that cannot be compacted, where each partition would
    be cut and who holds it: for a cut (onDeleteTopics: cut), else for status's account."""
    lasts = cut.last_matches({tp: s for tp, s in scans.items() if tp.topic in selection.cleaning})
    if not first:
        # A follow-up reads groups only for a cut (a tombstoned topic is looked at every
        # few seconds, and a group read is a consumer handle per group): unreadBy stays
        # what the first scan, or the latest cut, found.
        cutting = turn.request.on_delete_topics == "cut"
        lasts = {
            tp: last for tp, last in lasts.items() if cutting and _cuttable(selection, tp.topic)
        }
    groups = cut.read_groups(turn.kafka, turn.request.protect_groups, lasts)
    for tp in lasts:
        judged.unread.setdefault(tp.topic, set()).update(groups.unread(tp))
    judged.groups_not_read = groups.not_read
    # Planned in report mode too: status shows what a cut would cost (nothing is cut).
    uncompacted = {tp: last for tp, last in lasts.items() if _cuttable(selection, tp.topic)}
    judged.cuts = cut.plan(
        cut.Groups(groups.fresh, uncompacted, groups.not_read),
        scans,
        turn.request.protect_groups,
    )


def _cuttable(selection: Selection, topic: str) -> bool:
    """Delete and tiered topics: DeleteRecords works there. Never a compacted one (Kafka
    answers POLICY_VIOLATION on compact alone; compact,delete takes tombstones)."""
    return selection.cleaning[topic].kind != "compacted"


def _above_limit(turn: Turn, judged: Judged) -> Refusal | None:
    """The binding's partitionsPerPurge caps the partitions one run cuts, as it caps a
    RecordPurge's; spec.maxCollateralRecords: the cuts of this run, with what the
    erasure's earlier cuts removed, must not take more of other keys' records than the
    user accepted from the dry run. Else nothing is cut and the erasure ends naming the
    field."""
    wanted = {ev.tp_of(judged.entries[i]) for i in judged.to_cut}
    grant = turn.grant
    if grant is not None and len(wanted) > grant.partitions_per_purge:
        # A cut is DeleteRecords, as a RecordPurge's: the same cap on one request.
        message = (
            f"the cuts would cover {len(wanted)} partitions; KafkaClusterBinding "
            f"{grant.binding} allows {grant.partitions_per_purge} in one cut "
            "(spec.limits.partitionsPerPurge): erase from fewer topics at a time; nothing "
            "was cut"
        )
        return Refusal(Reason.QUOTA_EXCEEDED, message, "spec.topics")
    limit = turn.request.max_collateral_records
    if limit is None:
        return None
    now = sum(judged.cuts[tp].collateral_records for tp in wanted)
    # Under cut, status.summary carries what the erasure's cuts removed (picture.build).
    summary = turn.erasure.status.get("summary") or {}
    before = int(summary.get("collateralRecords") or 0)
    if before + now <= limit:
        return None
    message = (
        f"the cuts would remove {now} records of other keys"
        + (f" after {before} removed by earlier cuts" if before else "")
        + f", more than spec.maxCollateralRecords ({limit}); nothing was cut in this run"
    )
    return Refusal(Reason.COLLATERAL_ABOVE_LIMIT, message, "spec.maxCollateralRecords")


def _cut(kafka: ErasureKafka, judged: Judged, at: str, protect: Sequence[str]) -> Event:
    """The cuts of the partitions whose entries need one (never a held or compacted one:
    _judge_entry asks for none there), recorded in each entry of the partition. A cut
    Kafka did not take is named in status and tried again after the next scan."""
    wanted = {ev.tp_of(judged.entries[i]) for i in judged.to_cut}
    applied = cut.apply(kafka, {tp: judged.cuts[tp] for tp in wanted}, protect)
    done: dict[TopicPartition, Applied] = {}
    for tp in sorted(wanted):
        result = applied.get(tp)
        planned = judged.cuts[tp]
        if planned.truncated:
            judged.cut_failed[tp] = (
                f"the high watermark fell to {planned.high_watermark}, below the "
                f"{planned.scanned_to} this run scanned: the log was truncated"
            )
        elif result is not None and result.done and result.log_start_after is not None:
            done[tp] = result
        else:
            why = "no answer" if result is None else str(result.failure or result.unverified)
            judged.cut_failed[tp] = why
    for i in judged.to_cut:
        tp = ev.tp_of(judged.entries[i])
        if tp in done:
            planned = judged.cuts[tp]
            low = done[tp].log_start_after
            assert low is not None
            judged.entries[i] = ev.with_cut(
                judged.entries[i],
                planned.target,
                low,
                at,
                (planned.collateral_records, planned.collateral_bytes),
            )
    for tp in done:
        planned = judged.cuts[tp]
        for name, value in (
            ("recordsCut", planned.records),
            ("collateralRecords", planned.collateral_records),
            ("collateralBytes", planned.collateral_bytes),
        ):
            judged.counted[name] = judged.counted.get(name, 0) + value
    shown = ", ".join(
        f"{tp} at {judged.cuts[tp].target} (low watermark {done[tp].log_start_after})"
        for tp in sorted(done)[:5]
    )
    more = f" and {len(done) - 5} more" if len(done) > 5 else ""
    message = (
        f"{len(done)} partitions cut just past their last match: {shown}{more}; "
        f"{judged.counted.get('collateralRecords', 0)} records "
        f"({judged.counted.get('collateralBytes', 0)} bytes) of other keys removed"
    )
    if judged.cut_failed:
        first = min(judged.cut_failed)
        message += (
            f"; {len(judged.cut_failed)} not cut ({first}: {judged.cut_failed[first]}), "
            "tried again after the next scan"
        )
    return (EventReason.RECORDS_CUT, message[:1000])


def _by_retention(cleaning: Cleaning, gone_ms: int | None) -> Expected:
    """A delete or tiered topic's bound: retention removes the matches (None: never)."""
    note = (
        f"retention.ms is -1 on topic {cleaning.topic}: retention never removes the records"
        if gone_ms is None
        else f"retention removes the records by {time_of(gone_ms)}"
    )
    return Expected(gone_ms, gone_ms, note, cleaning.topic, "retention.ms")


def _write(kafka: ErasureKafka, judged: Judged) -> Event:
    """The tombstones, each to its partition (compacted topics only: _judge_entry never
    asks for one elsewhere); a write that fails leaves the whole step to be tried again
    (a second tombstone for the same key adds no data)."""
    answers = kafka.write_tombstones([w for w, _ in judged.writes.values()])
    failed = {key: answer for key, answer in answers.items() if isinstance(answer, KafkaFailure)}
    missing = [w for w, _ in judged.writes.values() if (w.tp, w.digest) not in answers]
    if failed or missing:
        first = min(failed) if failed else (missing[0].tp, missing[0].digest)
        why = failed.get(first, "no answer")
        raise KafkaUnavailable(
            f"{len(failed) + len(missing)} tombstones not written; {first[0]}: {why}"
        )
    for i, (write, _) in judged.writes.items():
        written = answers[(write.tp, write.digest)]
        assert not isinstance(written, KafkaFailure)
        judged.entries[i] = ev.with_tombstone(judged.entries[i], written)
    partitions = len({w.tp for w, _ in judged.writes.values()})
    rewrites = sum(1 for _, rewrite in judged.writes.values() if rewrite)
    message = f"{len(judged.writes)} tombstones written to {partitions} partitions"
    if rewrites:
        message += f" ({rewrites} for keys written again after their tombstone)"
    message += f"; {_digest_list({w.digest for w, _ in judged.writes.values()})}"
    return (EventReason.TOMBSTONES_WRITTEN, message)


def _digest_list(digests: set[str], shown: int = 5) -> str:
    """Digests for an event (an Event message is cut at 1024 characters: a few, then a
    count)."""
    listed = sorted(digests)
    text = "digests " + ", ".join(listed[:shown])
    return text + (f" and {len(listed) - shown} more" if len(listed) > shown else "")


def _sign(turn: Turn, picture: Picture, events: list[Event], scanned_at: str) -> Step:
    """The receipt: the evidence, signed, in the erasure's ConfigMaps. It states the time
    of the scan of every partition that found no listed key (`scanned_at`, this run's:
    a key that is unavailable now is tried at the next run, after a scan of its own)."""
    found = ev.digests_found(picture.evidence)
    reason = Reason.KEY_ERASED if found else Reason.NOTHING_FOUND
    try:
        key = turn.erasure.signing_key()
    except SecretUnavailable as err:
        return Unsigned(turn.run, picture, reason, str(err), _UNSIGNED_DELAY_S, events)
    completed = scanned_at
    document = receipt(
        turn.erasure.name,
        turn.erasure.namespace,
        turn.erasure.uid,
        turn.kafka.cluster_id(),
        picture.evidence,
        completed,
        # Every listed digest: one found nowhere is still one the receipt vouches for.
        digests=turn.request.digests(),
        phases={**ev.phases_reached(picture.evidence), Phase.KEY_ERASED: completed},
    )
    signed = sign(document, key)
    ref = turn.erasure.blobs.save("receipt", json.dumps(signed, sort_keys=True))
    if turn.erasure.ledger is not None:
        # Before status names the receipt: a ledger that cannot be brought up to date
        # leaves the erasure unsigned in status (LedgerBehind), and a later run signs and
        # records again; the receipt stays stored meanwhile. Not the 10 s retry of a
        # failed status write: each run scans again, and a full shard stays full.
        try:
            ledger.record(
                turn.erasure.ledger,
                signed,
                cluster_name(turn.request.cluster, turn.erasure.namespace),
            )
        except LedgerBehind as err:
            message = f"the receipt is signed but not recorded in the ledger: {err.reason}"
            return Unsigned(
                turn.run,
                picture,
                reason,
                message[:2000],
                _LEDGER_DELAY_S,
                events,
                why=Reason.LEDGER_BEHIND,
            )
    stored = {
        "configMap": ref["configMap"],
        "sha256": signed["sha256"],
        "keyId": signed["signature"]["keyId"],
        "algorithm": signed["signature"]["algorithm"],
        "signedAt": cond.timestamp(turn.erasure.now()),
    }
    events = [
        *events,
        (
            EventReason.ERASURE_RECEIPT,
            f"receipt sha256 {stored['sha256']}, key {stored['keyId']}, "
            f"ConfigMap {stored['configMap']}",
        ),
    ]
    message = (
        "none of the listed digests was found: the scan is the evidence"
        if reason == Reason.NOTHING_FOUND
        else "no record with a listed key is left"
    )
    return Completed(turn.run, Phase.KEY_ERASED, picture, reason, message, stored, events)


def _erased_reason(phase: Phase, judged: Judged) -> tuple[Reason, str]:
    if judged.rewritten:
        return (
            Reason.KEY_REWRITTEN,
            "a listed key was written again after its tombstone; a new tombstone was written",
        )
    if phase == Phase.TOMBSTONED:
        if judged.segment_roll:
            return Reason.AWAITING_SEGMENT_ROLL, (
                "a tombstone is the last record of its partition: the segment rolls (and "
                "the cleaner can act) only when something is written after it"
            )
        return Reason.AWAITING_COMPACTION, "tombstones written; waiting for the log cleaner"
    if phase == Phase.AWAITING_RETENTION:
        return Reason.AWAITING_RETENTION, "waiting for retention to remove the matches"
    if phase == Phase.CUT_HELD:
        return Reason.CUT_HELD, cut.held_message(judged.cuts.values())
    if phase == Phase.CUT:
        failed = ""
        if judged.cut_failed:
            first = min(judged.cut_failed)
            failed = (
                f"; {len(judged.cut_failed)} partitions not cut ({first}: "
                f"{judged.cut_failed[first]}): tried again after the next scan"
            )
        return Reason.RECORDS_CUT, (
            "records cut just past the last matches; the next scan of what is left "
            f"verifies it{failed}"
        )
    return Reason.VALUES_ERASED, "no value is left; waiting for the cleaner to drop the tombstones"


def _delay(phase: Phase, topics: Sequence[Mapping[str, Any]], now_ms: int) -> float:
    """Seconds to the next look: from the expected times, and soon for a held cut."""
    wanted = delays(topics, now_ms)
    return min(wanted, cut.HELD_DELAY_S) if phase == Phase.CUT_HELD else wanted


def _stored_erased(erasure: Erasure, phase: Phase) -> tuple[Reason, str] | None:
    """The stored Erased condition's reason and message, when status is at `phase` already
    and that phase is CutHeld (None otherwise)."""
    if phase != Phase.CUT_HELD or _phase(erasure.status) != phase:
        return None
    for c in erasure.status.get("conditions") or []:
        if c.get("type") == "Erased" and c.get("reason") == Reason.CUT_HELD:
            return Reason.CUT_HELD, str(c.get("message", ""))
    return None


def _waiting(
    erasure: Erasure,
    run: Run,
    phase: Phase,
    picture: Picture,
    reason: Reason,
    message: str,
    delay: float,
    events: list[Event],
) -> Waiting:
    return Waiting(run, phase, picture, reason, message, delay, events)


def _was_at_risk(erasure: Erasure) -> bool:
    return any(
        c.get("type") == "DeadlineAtRisk" and c.get("status") == "True"
        for c in erasure.status.get("conditions") or []
    )
