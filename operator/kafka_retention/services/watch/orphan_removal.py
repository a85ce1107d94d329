"""The orphan check's removals: what is due, on brokers no circuit breaker holds, after
the safety rule's fresh reads (the cluster's metadata, each log dir's meta.properties)
just before the first delete; and the records the check keeps of what it saw."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_retention.core import orphan_guards as guards
from kafka_retention.core import orphans as core
from kafka_retention.core.failures import ExecFailed, KafkaUnavailable, VolumeError
from kafka_retention.services.ports import BrokerVolumes, OrphanKafka

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Removed:
    broker: int
    log_dir: str
    name: str
    size_bytes: int
    reason: str


@dataclass(frozen=True)
class Seen:
    key: core.OrphanKey
    finding: core.Finding


@dataclass(frozen=True)
class LogDir:
    """A listed log dir, whose meta.properties named this cluster and one of its owners,
    and the volume it was listed through (the only one a removal in it goes through)."""

    volume: BrokerVolumes
    entries: list[core.Entry]


def said(err: Exception) -> str:
    """What status may say about a failure on a broker volume: the adapters' own words
    (ExecFailed keeps the pod's stderr out of its message), or this machine's OS error;
    of anything else only its kind, since it may carry what a pod printed, and the pod
    may be another team's. The operator's log has it all."""
    log.warning("broker volume: %s", err)
    if isinstance(err, VolumeError | ExecFailed | ValueError | OSError):
        return str(err)
    return f"{type(err).__name__} (details in the operator's log)"


def caps(by_broker: Mapping[int, Sequence[core.Finding]]) -> list[guards.Block]:
    caps = (guards.removal_cap_block(node, found) for node, found in sorted(by_broker.items()))
    return [b for b in caps if b is not None]


def remove_due(
    findings: Sequence[Seen],
    decided: Mapping[core.OrphanKey, guards.Decision],
    kafka: OrphanKafka,
    seen: Mapping[tuple[int, str], LogDir],
    cluster_id: str,
    stray_dirs: bool,
    blocks: list[guards.Block],
    problems: list[str],
) -> dict[core.OrphanKey, Removed]:
    """Removes what is due on brokers no block holds, after the safety rule's fresh reads:
    the metadata (from the same cluster, with topics, the cap checked again against it)
    and each log dir's meta.properties (still this cluster and this broker). Blocks met
    on the way are added to `blocks`."""
    due = [
        s
        for s in findings
        if decided.get(s.key, guards.Decision("Kept", "")).state == "Remove"
        and not any(b.holds(s.key.broker) for b in blocks)
    ]
    if not due:
        return {}
    try:
        fresh = kafka.placements()  # the safety rule's fresh read, just before removing
        fresh_id = kafka.cluster_id()
    except KafkaUnavailable as err:
        problems.append(f"no fresh metadata before removing orphans: {err}")
        return {}
    stop = guards.cluster_change_block(cluster_id, fresh_id) or guards.metadata_block(
        fresh_id, fresh
    )
    if stop is not None:
        blocks.append(stop)
        return {}
    nodes = {s.key.broker for s in due}
    blocks += caps(
        {
            node: [
                f
                for (n, _), listed in seen.items()
                if n == node
                for f in core.classify(node, listed.entries, fresh, stray_dirs)
            ]
            for node in nodes
        }
    )
    removed: dict[core.OrphanKey, Removed] = {}
    confirmed: dict[tuple[int, str], bool] = {}
    for s in due:
        where = (s.key.broker, s.key.log_dir)
        if any(b.holds(s.key.broker) for b in blocks):
            continue
        if not guards.still_orphan(s.finding, fresh, s.key.broker, cluster_id, fresh_id):
            continue
        volume = seen[where].volume
        if where not in confirmed:
            confirmed[where] = still_theirs(volume, s.key, fresh_id, blocks, problems)
        if not confirmed[where]:
            continue
        try:
            volume.remove(s.key.log_dir, s.key.name)
        except Exception as err:
            problems.append(f"removing {s.key.name} from broker {s.key.broker}: {said(err)}")
            continue
        removed[s.key] = Removed(
            s.key.broker, s.key.log_dir, s.key.name, s.finding.entry.size_bytes, s.finding.reason
        )
    return removed


def still_theirs(
    volume: BrokerVolumes,
    key: core.OrphanKey,
    cluster_id: str,
    blocks: list[guards.Block],
    problems: list[str],
) -> bool:
    """The log dir's identity read again just before its first removal this run, through
    the volume that listed it: it must still name this cluster and this broker."""
    try:
        identity = volume.identity(key.log_dir)
    except Exception as err:
        problems.append(f"reading meta.properties of log dir {key.log_dir}: {said(err)}")
        return False
    if identity is None:
        problems.append(f"log dir {key.log_dir} of broker {key.broker} is gone")
        return False
    block = guards.identity_block(key.log_dir, identity, cluster_id, frozenset({key.broker}))
    if block is not None:
        blocks.append(block)
    return block is None
