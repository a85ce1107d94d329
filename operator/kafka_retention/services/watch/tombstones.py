"""Tombstone safety for a policy's spec.tombstones groups on the compacted topics it
matches, at the end of each run; and, when enabled, delete.retention.ms raised so the
slowest group is back inside it (never lowered, never above the cap)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core import tombstones as ts
from kafka_retention.core import topics as topic_rules
from kafka_retention.core.conditions import Reason
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.plan_row import TombstoneRow
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.services.fresh import unsupported_groups
from kafka_retention.services.ports import PolicyKafka

MAX_LISTED = 100
MAX_RAISES_LISTED = 50
MAX_INVENTORY_LISTED = 500


@dataclass
class Raise:
    topic: str
    from_ms: int
    to_ms: int


@dataclass
class TombstoneReport:
    risks: list[ts.TombstoneRisk]
    raised: list[Raise]
    status: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    # (group, topic) pairs at risk now that were not at the previous run: one event each.
    new_pairs: list[tuple[str, str]] = field(default_factory=list)


def watch(
    spec: PolicySpec,
    status: Mapping[str, Any],
    topics: Iterable[str],
    kafka: PolicyKafka,
    finished: datetime,
    scanned: Sequence[TombstoneRow] = (),
) -> TombstoneReport | None:
    """None when the policy lists no tombstone groups. `scanned`: the plan's tombstone
    scan rows, folded into status.tombstoneInventory when the spec asks for it."""
    if spec.tombstones is None:
        return None
    want = spec.tombstones
    now_ms = int(finished.timestamp() * 1000)
    problems: list[str] = []
    # Topics come from a plan, which Spark pods may have written back through ConfigMaps
    # a tenant can forge: only topics this policy selects (under its binding) are read,
    # and only theirs may have delete.retention.ms raised.
    mine = set(spec.topics.select(topics))
    scanned = [row for row in scanned if row.topic in mine]
    configs = kafka.topic_configs(sorted(mine))
    retention: dict[str, int] = {}
    for topic, config in configs.items():
        if isinstance(config, KafkaFailure):
            problems.append(f"{topic}: {config}")
        elif topic_rules.is_compacted(config):
            retention[topic] = topic_rules.delete_retention_ms(config)
    lags = _lags(kafka, sorted(retention), want.groups, now_ms, problems)
    risks = ts.at_risk(lags, retention, want.warn_at_percent)
    raised: list[Raise] = []
    # A dry run changes nothing on the cluster: the risk is reported, no setting raised.
    if want.raise_max_ms is not None and not spec.dry_run:
        slowest: dict[str, int] = {}
        for risk in risks:
            slowest[risk.tp.topic] = max(slowest.get(risk.tp.topic, 0), risk.lag_ms)
        for topic, lag in sorted(slowest.items()):
            target = ts.raised_delete_retention(
                retention[topic], lag, want.warn_at_percent, want.raise_max_ms
            )
            if target is None:
                continue
            failure = kafka.set_topic_config(topic, "delete.retention.ms", str(target))
            if failure is not None:
                problems.append(f"raising delete.retention.ms of {topic}: {failure}")
            else:
                raised.append(Raise(topic, retention[topic], target))
    before = {(e["group"], e["topic"]) for e in status.get("tombstones") or []}
    new_pairs = sorted({(r.group, r.tp.topic) for r in risks} - before)
    at = cond.timestamp(finished)
    inventory: dict[str, Any] = {}
    if want.inventory:
        if retention and not scanned:
            problems.append("tombstone inventory: no record scan ran (it needs Spark)")
        inventory["tombstoneInventory"] = [
            {
                "topic": t.topic,
                "partitions": t.partitions,
                "recordsScanned": t.records_scanned,
                "tombstones": t.tombstones,
                "oldestAgeSeconds": None if t.oldest_age_ms is None else t.oldest_age_ms // 1000,
                "deleteRetentionSeconds": t.delete_retention_ms // 1000,
                "scannedAt": at,
            }
            for t in ts.fold_inventory(scanned, retention)[:MAX_INVENTORY_LISTED]
        ]
    history = [
        {"topic": r.topic, "fromMs": r.from_ms, "toMs": r.to_ms, "at": at} for r in raised
    ] + list(status.get("deleteRetentionRaised") or [])
    return TombstoneReport(
        risks,
        raised,
        {
            "tombstones": [
                {
                    "group": r.group,
                    "topic": r.tp.topic,
                    "partition": r.tp.partition,
                    "lagSeconds": r.lag_ms // 1000,
                    "deleteRetentionSeconds": r.delete_retention_ms // 1000,
                    "marginSeconds": r.margin_ms // 1000,
                }
                for r in risks[:MAX_LISTED]
            ],
            "deleteRetentionRaised": history[:MAX_RAISES_LISTED],
            **inventory,
        },
        problems,
        new_pairs,
    )


def _lags(
    kafka: PolicyKafka,
    topics: Sequence[str],
    groups: Sequence[str],
    now_ms: int,
    problems: list[str],
) -> dict[tuple[str, TopicPartition], int]:
    """Each group's time lag per partition of the compacted topics: the age of its next
    unread record (0 when it has read everything; no entry without a committed offset)."""
    if not topics:
        return {}
    tps: list[TopicPartition] = []
    for topic, parts in kafka.topic_partitions(topics).items():
        if isinstance(parts, KafkaFailure):
            problems.append(f"{topic}: {parts}")
            continue
        tps += [TopicPartition(topic, p) for p in parts]
    ends = kafka.offsets(tps, "latest")
    lags: dict[tuple[str, TopicPartition], int] = {}
    positions = kafka.group_positions(dict.fromkeys(groups, tps))
    # A listed group that is no group, where share or streams groups cannot exist, has no
    # lag to watch: said, rather than read silently as a group that has not started.
    unknown = unsupported_groups(kafka, {g: read.type for g, read in positions.items()})
    if unknown is not None:
        problems.append(f"{unknown.message()} ({Reason.GROUP_TYPE_UNSUPPORTED})")
    for group in sorted(groups):
        # The group's next unread record on each partition where it has one: one batched
        # point read per group (groups on one partition stand at different offsets).
        batch: dict[TopicPartition, tuple[int, int]] = {}
        for tp, committed in positions[group].positions.items():
            end = ends.get(tp)
            if committed is None or not isinstance(end, int):
                continue
            if committed >= end:
                lags[(group, tp)] = 0
            else:
                batch[tp] = (committed, end)
        if batch:
            for tp, when in kafka.record_times_at(batch).items():
                lags[(group, tp)] = max(0, now_ms - when)
    return lags


def condition(report: TombstoneReport) -> cond.Condition:
    """TombstonesAtRisk: True while a listed group's lag is past its share of
    delete.retention.ms, naming the smallest margin."""
    if report.risks:
        first = report.risks[0]
        raised = "; ".join(f"raised {r.topic} to {r.to_ms}ms" for r in report.raised)
        message = (
            f"group {first.group} lags {first.lag_ms // 1000}s on compacted {first.tp} "
            f"(delete.retention.ms {first.delete_retention_ms}, margin "
            f"{first.margin_ms // 1000}s); {len(report.risks)} partition(s) at risk"
            + (f"; {raised}" if raised else "")
        )
        return cond.Condition("TombstonesAtRisk", "True", cond.Reason.TOMBSTONES_AT_RISK, message)
    safe = "every listed group is within its share of delete.retention.ms"
    return cond.Condition("TombstonesAtRisk", "False", cond.Reason.TOMBSTONES_SAFE, safe)
