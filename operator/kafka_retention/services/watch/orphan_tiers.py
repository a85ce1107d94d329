"""The orphan check on tiered topics (KIP-405): an orphan directory of a partition whose
topic still exists and keeps data in remote storage is removed only when every offset it
holds is deleted, in remote storage or on the live replicas' disks (core.orphan_tiers).
Where that cannot be shown (the tier offsets or the directory's own offsets cannot be
read) the directory is held, and its status entry says why.

The reads are optional: the cluster view a check gets must also read topic configs
(`TopicConfigReads`) for any topic to be known as tiered, and tier offsets
(`TierOffsetReads`, the TieredKafka port's read plus the log start) for a tiered topic's
orphan to be removable; a volume that cannot read a directory's offsets
(`SegmentOffsetReads`) leaves it held whenever they would matter. So a plain OrphanKafka
(the unit fakes) judges as before, and the operator's KafkaAdmin does all of it. Only
broker log dirs are ever read or changed here: remote storage is the brokers' own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from kafka_retention.core import orphan_tiers as tiers
from kafka_retention.core import orphans as core
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable, OffsetKind
from kafka_retention.core.tiers import TierOffsets, is_tiered
from kafka_retention.services.watch.orphan_removal import LogDir, Seen, said

log = logging.getLogger(__name__)


@runtime_checkable
class TopicConfigReads(Protocol):
    def topic_configs(
        self, topics: Iterable[str]
    ) -> Mapping[str, Mapping[str, str] | KafkaFailure]: ...


@runtime_checkable
class TierOffsetReads(Protocol):
    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> Mapping[TopicPartition, int | KafkaFailure]: ...
    def tier_offsets(
        self, tps: Iterable[TopicPartition]
    ) -> Mapping[TopicPartition, TierOffsets]: ...


@runtime_checkable
class SegmentOffsetReads(Protocol):
    def held_offsets(self, log_dir: str, name: str) -> tiers.HeldOffsets: ...


def holds(
    findings: Sequence[Seen],
    assignment: core.Assignment,
    kafka: object,
    seen: Mapping[tuple[int, str], LogDir],
) -> dict[core.OrphanKey, str]:
    """The orphans of live tiered partitions that must stay this check, with why."""
    live: dict[core.OrphanKey, TopicPartition] = {}
    for s in findings:
        f = s.finding
        topic = core.live_topic_name(f.dir_name, f.entry.topic_id, assignment)
        if f.verdict == "orphan" and topic is not None and f.dir_name.partition is not None:
            live[s.key] = TopicPartition(topic, f.dir_name.partition)
    if not live or not isinstance(kafka, TopicConfigReads):
        return {}
    tiered = _tiered({tp.topic for tp in live.values()}, kafka)
    out: dict[core.OrphanKey, str] = {}
    wanted: dict[core.OrphanKey, TopicPartition] = {}
    for key, tp in live.items():
        why = tiered.get(tp.topic)
        if isinstance(why, str):
            out[key] = why
        elif why:
            wanted[key] = tp
    if not wanted:
        return out
    gaps = _gaps(set(wanted.values()), kafka)
    for key, tp in wanted.items():
        gap = gaps.get(tp)
        if isinstance(gap, str):
            out[key] = gap
        elif gap is not None:
            why = _gap_hold(gap, key, seen[(key.broker, key.log_dir)])
            if why is not None:
                out[key] = why
    return out


def _tiered(topics: set[str], kafka: TopicConfigReads) -> dict[str, bool | str]:
    """Whether each topic is tiered, or why that is unknown (then its orphans stay)."""
    try:
        configs = kafka.topic_configs(sorted(topics))
    except Exception as err:
        return dict.fromkeys(topics, f"whether the topic is tiered is unknown: {_said(err)}")
    out: dict[str, bool | str] = {}
    for topic in topics:
        config = configs.get(topic)
        if config is None or isinstance(config, KafkaFailure):
            what = "no answer" if config is None else str(config)
            out[topic] = f"whether the topic is tiered is unknown: {what}"
        else:
            out[topic] = is_tiered(dict(config))
    return out


def _gaps(
    tps: set[TopicPartition], kafka: TopicConfigReads
) -> dict[TopicPartition, tiers.Gap | str | None]:
    """Each live tiered partition's gap (core.orphan_tiers.tier_gap), or why it cannot be
    told: the tier offsets are read once per check, for the partitions that have orphans."""
    if not isinstance(kafka, TierOffsetReads):
        return dict.fromkeys(tps, "tiered topic: this operator cannot read tier offsets")
    wanted = sorted(tps)
    try:
        starts = kafka.offsets(wanted, "earliest")
        where = kafka.tier_offsets(wanted)
    except Exception as err:
        return dict.fromkeys(tps, f"tiered topic: tier offsets unreadable: {_said(err)}")
    out: dict[TopicPartition, tiers.Gap | str | None] = {}
    for tp in wanted:
        start, offsets = starts.get(tp), where.get(tp)
        if not isinstance(start, int) or offsets is None:
            why = str(start) if isinstance(start, KafkaFailure) else "no answer"
            out[tp] = f"tiered topic: tier offsets unreadable: {why}"
            continue
        try:
            out[tp] = tiers.tier_gap(start, offsets)
        except tiers.TiersUnknown as err:
            out[tp] = f"tiered topic: tier offsets unreadable: {err}"
    return out


def _gap_hold(gap: tiers.Gap, key: core.OrphanKey, listed: LogDir) -> str | None:
    volume = listed.volume
    if not isinstance(volume, SegmentOffsetReads):
        return tiers.gap_hold(gap, None, "not read through this access to broker volumes")
    try:
        held = volume.held_offsets(key.log_dir, key.name)
    except Exception as err:
        return tiers.gap_hold(gap, None, said(err))
    return tiers.gap_hold(gap, held)


def _said(err: Exception) -> str:
    """What status may say of a failed read of the cluster: the adapter's own words for
    KafkaUnavailable, else only the failure's kind (the operator's log has the rest)."""
    if isinstance(err, KafkaUnavailable):
        return str(err)
    log.warning("orphan check, reading tiers: %s", err)
    return f"{type(err).__name__} (details in the operator's log)"
