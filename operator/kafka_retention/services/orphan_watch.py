"""Orphan partition directories on broker volumes (spec.orphanPartitions; KAFKA-7362,
KIP-370/KIP-550), checked at the end of each policy run.

Order matters for safety: the log dirs are listed first and the cluster's metadata read
after, so a directory a new topic created during the check is already in the metadata
that judges it. A directory is removed only when core.orphans.decide says so (an orphan
continuously for removalDelay, every file older than minAge) and a second metadata read,
just before the removal, still says orphan. First-seen times live in status, so a
restart neither resets a directory's clock nor skips it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kafka_retention.adapters.kafka import KafkaUnavailable
from kafka_retention.core import conditions as cond
from kafka_retention.core import orphans as core
from kafka_retention.core.policy_spec import OrphanSpec, PolicySpec
from kafka_retention.services.ports import BrokerVolumes, OrphanKafka

log = logging.getLogger(__name__)
MAX_LISTED = 300
_ORDER = {"Removed": 0, "Pending": 1, "Kept": 2}
DEFAULT_LOG_RETENTION_MS = 168 * 3_600_000  # Kafka's log.retention.hours default

# (spec, policy namespace) -> the volumes to look at: one for access local, one per
# broker pod for access exec.
VolumeFinder = Callable[[OrphanSpec, str], Sequence[BrokerVolumes]]


@dataclass(frozen=True)
class Removed:
    broker: int
    log_dir: str
    name: str
    size_bytes: int
    reason: str


@dataclass
class OrphanReport:
    status: dict[str, Any]
    removed: list[Removed]
    # Per broker: (orphan directories, their bytes), for the gauges.
    per_broker: dict[int, tuple[int, int]]
    orphans: int
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Seen:
    key: core.OrphanKey
    finding: core.Finding


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
    seen = _list_all(volumes, _log_dirs(brokers), problems)
    assignment = kafka.placements()
    findings = [
        _Seen(core.OrphanKey(node, log_dir, f.entry.name), f)
        for (node, log_dir), entries in seen.items()
        for f in core.classify(node, entries, assignment, want.stray_dirs)
    ]
    previous = core.decode_first_seen(
        e for e in status.get("orphans") or [] if e.get("state") != "Removed"
    )
    orphan_keys = [s.key for s in findings if s.finding.verdict == "orphan"]
    first_seen = core.carry_first_seen(previous, orphan_keys, now_ms)
    decided = {
        s.key: core.decide(
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
    removed = _remove_due(findings, decided, kafka, volumes, problems)
    entries = [
        _entry(s, decided[s.key], first_seen.get(s.key), removed)
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
    )


def _log_dirs(brokers: Mapping[int, Mapping[str, str]]) -> list[str]:
    """Every log dir any live broker names (log.dirs, else log.dir), once."""
    dirs: set[str] = set()
    for config in brokers.values():
        value = config.get("log.dirs") or config.get("log.dir") or ""
        dirs.update(d.strip() for d in value.split(",") if d.strip())
    return sorted(dirs)


def _list_all(
    volumes: Sequence[BrokerVolumes], log_dirs: Sequence[str], problems: list[str]
) -> dict[tuple[int, str], list[core.Entry]]:
    """(node id, log dir) -> its entries. A volume that lacks a log dir (a pod of another
    broker, a path of another machine) is skipped quietly; one that cannot be listed is
    a problem, and its directories are judged at the next check."""
    out: dict[tuple[int, str], list[core.Entry]] = {}
    for volume in volumes:
        for log_dir in log_dirs:
            try:
                node = volume.node_id(log_dir)
            except Exception as err:
                log.debug("no log dir %s here: %s", log_dir, err)
                continue
            if (node, log_dir) in out:
                continue
            try:
                out[(node, log_dir)] = volume.list(log_dir)
            except Exception as err:
                problems.append(f"listing {log_dir} of broker {node}: {err}")
    return out


def _min_age(want: OrphanSpec, broker: Mapping[str, str]) -> int:
    """spec.orphanPartitions.minAge, else the broker's own log retention: a directory
    that still holds data younger than that might be something the broker would keep."""
    if want.min_age_ms is not None:
        return want.min_age_ms
    for key, unit in (("log.retention.ms", 1), ("log.retention.minutes", 60_000)):
        if broker.get(key) not in (None, ""):
            value = int(broker[key]) * unit
            return value if value >= 0 else 2**62  # -1: unlimited, never old enough
    hours = broker.get("log.retention.hours")
    return DEFAULT_LOG_RETENTION_MS if not hours else int(hours) * 3_600_000


def _remove_due(
    findings: Sequence[_Seen],
    decided: Mapping[core.OrphanKey, core.Decision],
    kafka: OrphanKafka,
    volumes: Sequence[BrokerVolumes],
    problems: list[str],
) -> dict[core.OrphanKey, Removed]:
    due = [s for s in findings if decided.get(s.key, core.Decision("Kept", "")).state == "Remove"]
    if not due:
        return {}
    try:
        fresh = kafka.placements()  # the safety rule's fresh read, just before removing
    except KafkaUnavailable as err:
        problems.append(f"no fresh metadata before removing orphans: {err}")
        return {}
    removed: dict[core.OrphanKey, Removed] = {}
    for s in due:
        if not core.still_orphan(s.finding, fresh, s.key.broker):
            continue
        volume = _owner(volumes, s.key)
        if volume is None:
            continue
        try:
            volume.remove(s.key.log_dir, s.key.name)
        except Exception as err:
            problems.append(f"removing {s.key.name} from broker {s.key.broker}: {err}")
            continue
        removed[s.key] = Removed(
            s.key.broker, s.key.log_dir, s.key.name, s.finding.entry.size_bytes, s.finding.reason
        )
    return removed


def _owner(volumes: Sequence[BrokerVolumes], key: core.OrphanKey) -> BrokerVolumes | None:
    """The volume whose log dir belongs to the key's broker (checked again by node id)."""
    for volume in volumes:
        try:
            if volume.node_id(key.log_dir) == key.broker:
                return volume
        except Exception as err:
            log.debug("no log dir %s here: %s", key.log_dir, err)
    return None


def _entry(
    seen: _Seen,
    decision: core.Decision,
    first_seen: int | None,
    removed: Mapping[core.OrphanKey, Removed],
) -> dict[str, Any]:
    f = seen.finding
    state = "Removed" if seen.key in removed else decision.state
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


def _why(f: core.Finding, decision: core.Decision) -> str:
    if f.verdict == "orphan":
        return f"{f.reason}; {decision.reason}"
    return decision.reason


def condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    report: OrphanReport,
    generation: int | None,
    now: datetime,
) -> list[dict[str, Any]]:
    """OrphansFound: True while orphan directories remain on any broker."""
    if report.orphans:
        size = report.status["orphanBytes"]
        brokers = sorted(b for b, (n, _) in report.per_broker.items() if n)
        message = (
            f"{report.orphans} orphan partition director{'y' if report.orphans == 1 else 'ies'} "
            f"({size} bytes) on broker(s) {', '.join(map(str, brokers))}"
            + (f"; {len(report.removed)} removed this run" if report.removed else "")
            + "; see status.orphans"
        )
        return cond.set_condition(
            conditions, "OrphansFound", "True", cond.Reason.ORPHANS_FOUND, message, generation, now
        )
    message = "no orphan partition directories" + (
        f" ({len(report.removed)} removed this run)" if report.removed else ""
    )
    return cond.set_condition(
        conditions, "OrphansFound", "False", cond.Reason.NO_ORPHANS, message, generation, now
    )
