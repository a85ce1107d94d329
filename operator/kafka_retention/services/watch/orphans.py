"""Orphan partition directories on broker volumes (spec.orphanPartitions; KAFKA-7362,
KIP-370/KIP-550), checked at the end of each policy run.

Order matters for safety. The cluster's id is read first and every log dir's
meta.properties checked against it (and its node.id against the brokers whose log.dirs
name the dir) before anything in the dir is listed: a directory of another cluster is
never listed, judged or named. The log dirs are listed before the cluster's metadata is
read, so a directory a new topic created during the check is already in the metadata
that judges it; the id is read again after, so the metadata came from that same cluster.
A directory is removed only when core.orphans.decide says so (an orphan continuously for
removalDelay, every file older than minAge), no circuit breaker holds its broker (no
topics in the metadata, too large a share of the broker's directories orphaned), and,
just before the removal, a second metadata read from the same cluster still says orphan
and the log dir's meta.properties still names that cluster and that broker. An orphan of
a live tiered topic also needs every offset it holds deleted, in remote storage or on the
live replicas' disks (orphan_tiers). First-seen
times live in status, so a restart neither resets a directory's clock nor skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core import orphan_guards as guards
from kafka_retention.core import orphans as core
from kafka_retention.core.policy_spec import OrphanSpec, PolicySpec
from kafka_retention.services.ports import BrokerVolumes, OrphanKafka
from kafka_retention.services.watch import orphan_tiers
from kafka_retention.services.watch.orphan_removal import (
    LogDir,
    Removed,
    Seen,
    caps,
    remove_due,
    said,
)

MAX_LISTED = 300
MAX_BLOCKS_IN_MESSAGE = 5
_ORDER = {"Removed": 0, "Pending": 1, "Kept": 2}
DEFAULT_LOG_RETENTION_MS = 168 * 3_600_000  # Kafka's log.retention.hours default
# The reason OrphansFound shows when several blocks held removals: the widest first.
_BLOCK_ORDER = (
    cond.Reason.CLUSTER_ID_MISMATCH,
    cond.Reason.NO_TOPICS_IN_METADATA,
    cond.Reason.NODE_ID_MISMATCH,
    cond.Reason.CLUSTER_ID_MISSING,
    cond.Reason.META_PROPERTIES_MISSING,
    cond.Reason.REMOVAL_CAP_REACHED,
)

# (spec, policy namespace) -> the volumes to look at: one for access local, one per
# broker pod for access exec.
VolumeFinder = Callable[[OrphanSpec, str], Sequence[BrokerVolumes]]


@dataclass
class OrphanReport:
    status: dict[str, Any]
    removed: list[Removed]
    # Per broker: (orphan directories, their bytes), for the gauges.
    per_broker: dict[int, tuple[int, int]]
    orphans: int
    problems: list[str] = field(default_factory=list)
    # What held removals this run, on some brokers or on all (core.orphans.Block).
    blocked: list[guards.Block] = field(default_factory=list)
    # False when the check stopped before judging anything (another cluster's log dir,
    # metadata without topics): status then stays as the last trusted check left it.
    judged: bool = True


def check(
    spec: PolicySpec,
    status: Mapping[str, Any],
    kafka: OrphanKafka,
    volumes: Sequence[BrokerVolumes],
    now: datetime,
) -> OrphanReport | None:
    """None when the policy does not look for orphans."""
    want = spec.orphans
    if want is None:
        return None
    now_ms = int(now.timestamp() * 1000)
    problems: list[str] = []
    brokers = kafka.broker_configs()
    cluster_id = kafka.cluster_id()
    owned, blocks = _identify(volumes, _owners(brokers), cluster_id, problems)
    if any(b.brokers is None for b in blocks):
        return _stopped(status, blocks, problems)
    seen = _list_all(owned, problems)
    assignment = kafka.placements()
    stop = guards.cluster_change_block(cluster_id, kafka.cluster_id()) or guards.metadata_block(
        cluster_id, assignment
    )
    if stop is not None:
        return _stopped(status, [*blocks, stop], problems)
    findings = [
        Seen(core.OrphanKey(node, log_dir, f.entry.name), f)
        for (node, log_dir), listed in seen.items()
        for f in core.classify(node, listed.entries, assignment, want.stray_dirs)
    ]
    by_broker: dict[int, list[core.Finding]] = {node: [] for node, _ in seen}
    for s in findings:
        by_broker[s.key.broker].append(s.finding)
    blocks += caps(by_broker)
    if want.topics is not None:
        # Under a binding, only directories of topics it lets the tenant touch are acted
        # on or shown (the cap above still counts every directory of the broker).
        permits = want.topics.permits
        findings = [
            s for s in findings if s.finding.dir_name.topic and permits(s.finding.dir_name.topic)
        ]
    previous = core.decode_first_seen(
        e for e in status.get("orphans") or [] if e.get("state") != "Removed"
    )
    orphan_keys = [s.key for s in findings if s.finding.verdict == "orphan"]
    first_seen = core.carry_first_seen(previous, orphan_keys, now_ms)
    decided = {
        s.key: guards.decide(
            s.finding,
            first_seen.get(s.key) if s.finding.verdict == "orphan" else previous.get(s.key),
            now_ms,
            want.removal_delay_ms,
            _min_age(want, brokers.get(s.key.broker, {})),
            want.dry_run,
        )
        for s in findings
        if s.finding.verdict != "assigned" or s.key in previous
    }
    for key, why in orphan_tiers.holds(findings, assignment, kafka, seen).items():
        # An orphan of a live tiered partition that may hold records no one else holds:
        # still an orphan (counted, its first sighting kept), never removed while so.
        decided[key] = guards.Decision("Kept", f"held: {why}", decided[key].remove_after_ms)
    removed = remove_due(
        findings, decided, kafka, seen, cluster_id, want.stray_dirs, blocks, problems
    )
    entries = [
        _entry(s, decided[s.key], first_seen.get(s.key), removed, blocks)
        for s in findings
        if s.key in decided
    ]
    entries.sort(key=lambda e: (_ORDER[e["state"]], e["broker"], e["logDir"], e["name"]))
    current = [s for s in findings if s.finding.verdict == "orphan" and s.key not in removed]
    per_broker: dict[int, tuple[int, int]] = {node: (0, 0) for node, _ in seen}
    for s in current:
        count, size = per_broker[s.key.broker]
        per_broker[s.key.broker] = (count + 1, size + s.finding.entry.size_bytes)
    reclaimed = sum(r.size_bytes for r in removed.values())
    return OrphanReport(
        {
            "orphans": entries[:MAX_LISTED],
            "orphanCount": len(current),
            "orphanBytes": sum(s.finding.entry.size_bytes for s in current),
            "orphanBytesReclaimedTotal": int(status.get("orphanBytesReclaimedTotal") or 0)
            + reclaimed,
        },
        sorted(removed.values(), key=lambda r: (r.broker, r.log_dir, r.name)),
        per_broker,
        len(current),
        problems,
        _unique(blocks),
    )


def _stopped(
    status: Mapping[str, Any], blocks: Sequence[guards.Block], problems: list[str]
) -> OrphanReport:
    """A check that judged nothing: no status change (first-seen clocks neither start
    nor reset on reads that cannot be trusted), no gauges; the blocks say why."""
    count = int(status.get("orphanCount") or 0)
    return OrphanReport({}, [], {}, count, problems, _unique(blocks), judged=False)


def _unique(blocks: Iterable[guards.Block]) -> list[guards.Block]:
    return list(dict.fromkeys(blocks))


def _owners(brokers: Mapping[int, Mapping[str, str]]) -> dict[str, frozenset[int]]:
    """Every log dir any live broker names (log.dirs, else log.dir), with the brokers
    that name it: several when brokers share one path (a pod each), else one."""
    owners: dict[str, set[int]] = {}
    for node, config in brokers.items():
        value = config.get("log.dirs") or config.get("log.dir") or ""
        for log_dir in (d.strip() for d in value.split(",")):
            if log_dir:
                owners.setdefault(log_dir, set()).add(node)
    return {d: frozenset(nodes) for d, nodes in sorted(owners.items())}


def _identify(
    volumes: Sequence[BrokerVolumes],
    owners: Mapping[str, frozenset[int]],
    cluster_id: str,
    problems: list[str],
) -> tuple[dict[tuple[int, str], BrokerVolumes], list[guards.Block]]:
    """(node id, log dir) -> the volume holding it, for each log dir whose
    meta.properties names this cluster and one of the dir's owners; the blocks the others
    raise (guards.identity_block). A volume without the log dir (a pod of another broker, a
    path of another machine) is skipped quietly; one whose meta.properties cannot be read
    is a problem, and nothing in that log dir is judged."""
    owned: dict[tuple[int, str], BrokerVolumes] = {}
    blocks: list[guards.Block] = []
    for volume in volumes:
        for log_dir, nodes in owners.items():
            try:
                identity = volume.identity(log_dir)
            except Exception as err:
                problems.append(f"reading meta.properties of log dir {log_dir}: {said(err)}")
                continue
            if identity is None:
                continue
            block = guards.identity_block(log_dir, identity, cluster_id, nodes)
            if block is not None:
                blocks.append(block)
            elif identity.node_id is not None:
                owned.setdefault((identity.node_id, log_dir), volume)
    return owned, blocks


def _list_all(
    owned: Mapping[tuple[int, str], BrokerVolumes], problems: list[str]
) -> dict[tuple[int, str], LogDir]:
    """(node id, log dir) -> its entries. One that cannot be listed is a problem, and
    its directories are judged at the next check."""
    out: dict[tuple[int, str], LogDir] = {}
    for (node, log_dir), volume in owned.items():
        try:
            out[(node, log_dir)] = LogDir(volume, volume.list(log_dir))
        except Exception as err:
            problems.append(f"listing {log_dir} of broker {node}: {said(err)}")
    return out


def _min_age(want: OrphanSpec, broker: Mapping[str, str]) -> int:
    """spec.orphanPartitions.minAge, else the broker's own log retention (a directory
    that still holds data younger than that might be something the broker would keep);
    never below the binding's floor."""
    return max(_wanted_min_age(want, broker), want.min_age_floor_ms)


def _wanted_min_age(want: OrphanSpec, broker: Mapping[str, str]) -> int:
    if want.min_age_ms is not None:
        return want.min_age_ms
    for key, unit in (("log.retention.ms", 1), ("log.retention.minutes", 60_000)):
        if broker.get(key) not in (None, ""):
            value = int(broker[key]) * unit
            return value if value >= 0 else 2**62  # -1: unlimited, never old enough
    hours = broker.get("log.retention.hours")
    return DEFAULT_LOG_RETENTION_MS if not hours else int(hours) * 3_600_000


def _entry(
    seen: Seen,
    decision: guards.Decision,
    first_seen: int | None,
    removed: Mapping[core.OrphanKey, Removed],
    blocks: Sequence[guards.Block],
) -> dict[str, Any]:
    f = seen.finding
    state = "Removed" if seen.key in removed else decision.state
    held = next((b for b in blocks if b.holds(seen.key.broker)), None)
    if state == "Remove" and held is not None:
        # Due, but a block held its broker: kept this run, its first sighting kept too.
        state = "Kept"
        decision = guards.Decision("Kept", f"held: {held.reason}", decision.remove_after_ms)
    out: dict[str, Any] = {
        "broker": seen.key.broker,
        "logDir": seen.key.log_dir,
        "name": seen.key.name,
        "kind": f.kind,
        "sizeBytes": f.entry.size_bytes,
        "state": "Pending" if state == "Remove" else state,
        "reason": f.reason if state in ("Removed", "Remove") else _why(f, decision),
    }
    if first_seen is not None and f.verdict == "orphan":
        (encoded,) = core.encode_first_seen({seen.key: first_seen})
        out["firstSeen"] = encoded["firstSeen"]
        if decision.remove_after_ms is not None:
            out["removeAfter"] = cond.timestamp(
                datetime.fromtimestamp(-(-decision.remove_after_ms // 1000), tz=UTC)
            )
    return out


def _why(f: core.Finding, decision: guards.Decision) -> str:
    if f.verdict == "orphan":
        return f"{f.reason}; {decision.reason}"
    return decision.reason


def condition(report: OrphanReport) -> cond.Condition:
    """OrphansFound: True while orphan directories remain on any broker. When something
    held removals, the reason is the widest block and the message says each one; the
    status is then Unknown unless orphans were judged and found, since a held check may
    have left log dirs unjudged."""
    summary = ""
    if report.orphans and report.judged:
        size = report.status["orphanBytes"]
        brokers = sorted(b for b, (n, _) in report.per_broker.items() if n)
        summary = (
            f"{report.orphans} orphan partition director{'y' if report.orphans == 1 else 'ies'} "
            f"({size} bytes) on broker(s) {', '.join(map(str, brokers))}"
            + (f"; {len(report.removed)} removed this run" if report.removed else "")
            + "; see status.orphans"
        )
    if report.blocked:
        widest = min(report.blocked, key=lambda b: _BLOCK_ORDER.index(b.reason))
        said = [b.message for b in report.blocked[:MAX_BLOCKS_IN_MESSAGE]]
        if len(report.blocked) > MAX_BLOCKS_IN_MESSAGE:
            said.append(f"and {len(report.blocked) - MAX_BLOCKS_IN_MESSAGE} more")
        if not report.judged:
            summary = "status.orphans is as the last complete check left it"
        message = "; ".join(said) + (f". {summary}" if summary else "")
        found: cond.ConditionStatus = "True" if report.judged and report.orphans else "Unknown"
        return cond.Condition("OrphansFound", found, widest.reason, message)
    if report.orphans:
        return cond.Condition("OrphansFound", "True", cond.Reason.ORPHANS_FOUND, summary)
    message = "no orphan partition directories" + (
        f" ({len(report.removed)} removed this run)" if report.removed else ""
    )
    return cond.Condition("OrphansFound", "False", cond.Reason.NO_ORPHANS, message)
