"""Unread-record loss of a policy's spec.notify groups, found at the end of each run from
the offsets the run already holds (no extra reads unless a loss needs its cause named),
reported once: the cursor of what was reported is kept in status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core import loss
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.purge_ledger import RECORD_PURGE, PurgeLedger
from kafka_retention.services.ports import PolicyKafka

# Keys shown per loss in status and events (the plan may hold more).
MAX_KEYS_LISTED = 5
_PENDING = "pending"


@dataclass
class LossReport:
    new: list[loss.Loss]
    # Status fields to patch: losses, unconsumedLostTotal, lossCursor, atRisk.
    status: dict[str, Any]
    risks: list[loss.Risk]


def watch(
    spec: PolicySpec,
    status: Mapping[str, Any],
    rows: Sequence[PlanRow],
    moved: Mapping[TopicPartition, tuple[int, int]],
    kafka: PolicyKafka,
    finished: datetime,
    purges: PurgeLedger | None = None,
    cluster: str | None = None,
    namespace: str | None = None,
) -> LossReport | None:
    """None when the policy watches no group. `cluster`: the policy's, keyed as the
    ledger keys purges' (PeerIndex.cluster), to name a purge on it as a loss's cause.
    `namespace`: the policy's; a purge of another namespace is named only as existing
    (purge_ledger.seen_from), never by its namespace or name."""
    groups = spec.rules.notify_groups
    if not groups:
        return None
    observed = []
    own: dict[TopicPartition, loss.OwnCut] = {}
    samples: dict[tuple[str, TopicPartition], list[tuple[int, str | None]]] = {}
    for row in rows:
        if row.log_start_offset is None:  # a failed partition: nothing observed
            continue
        tp = TopicPartition(row.topic, row.partition)
        before, after = moved.get(tp, (row.log_start_offset, row.log_start_offset))
        if after > before and not spec.dry_run:
            own[tp] = loss.OwnCut(before, after, row.rule or "policy")
        committed = {g.group: g.committed_offset for g in row.groups if g.group in groups}
        for g in row.groups:
            if g.group in groups and g.unconsumed_sample:
                samples[(g.group, tp)] = [(s.offset, s.key) for s in g.unconsumed_sample]
        observed.append(loss.Observed(tp, max(after, row.log_start_offset), committed))
    old = loss.decode_cursor(status.get("lossCursor"))
    found, kept = loss.detect(observed, groups, old, own, lambda tp: _PENDING)
    seen = {o.tp for o in observed}
    # Partitions this run did not see (a read error, a skipped topic) keep their cursor.
    for key, offset in old.items():
        if key[0] in groups and TopicPartition(key[1], key[2]) not in seen:
            kept.setdefault(key, offset)
    since = _previous_check_ms(status)
    found = _name_causes(
        found,
        kafka,
        int(finished.timestamp() * 1000),
        purges,
        cluster,
        since,
        namespace,
    )
    found = [_with_sample(lost, samples.get((lost.group, lost.tp), [])) for lost in found]
    detected_at = cond.timestamp(finished)
    entries = [_entry(lost, detected_at) for lost in found]
    risks = _at_risk(spec, rows, moved, kafka, int(finished.timestamp() * 1000))
    total = int(status.get("unconsumedLostTotal") or 0) + sum(lost.records for lost in found)
    listed = (entries[::-1] + list(status.get("losses") or []))[: loss.MAX_LOSSES_LISTED]
    return LossReport(
        found,
        {
            "losses": listed,
            "unconsumedLostTotal": total,
            "lossCursor": loss.encode_cursor(kept),
            "atRisk": [
                {
                    "group": risk.group,
                    "topic": risk.tp.topic,
                    "partition": risk.tp.partition,
                    "committedOffset": risk.committed,
                    "withinSeconds": risk.within_ms // 1000,
                    "by": risk.by,
                }
                for risk in risks[: loss.MAX_LOSSES_LISTED]
            ],
        },
        risks,
    )


def _entry(lost: loss.Loss, detected_at: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "group": lost.group,
        "topic": lost.tp.topic,
        "partition": lost.tp.partition,
        "fromOffset": lost.from_offset,
        "toOffset": lost.to_offset,
        "records": lost.records,
        "cause": lost.cause,
        "detectedAt": detected_at,
    }
    if lost.by is not None:
        entry["recordPurge"] = lost.by
    if lost.sample:
        entry["sampleKeys"] = [{"offset": o, "key": k} for o, k in lost.sample]
    return entry


def _with_sample(lost: loss.Loss, sample: Sequence[tuple[int, str | None]]) -> loss.Loss:
    """The sampled keys that fall in the lost range (read before this run's cut)."""
    keys = [(o, k) for o, k in sample if lost.from_offset <= o < lost.to_offset]
    return replace(lost, sample=tuple(keys[:MAX_KEYS_LISTED])) if keys else lost


def _previous_check_ms(status: Mapping[str, Any]) -> int | None:
    """When the previous run ended: a loss found now happened after it."""
    done = (status.get("lastRun") or {}).get("completedAt")
    return None if not done else int(datetime.fromisoformat(done).timestamp() * 1000)


def _at_risk(
    spec: PolicySpec,
    rows: Sequence[PlanRow],
    moved: Mapping[TopicPartition, tuple[int, int]],
    kafka: PolicyKafka,
    now_ms: int,
) -> list[loss.Risk]:
    """Watched groups with unread records that time retention reaches within
    spec.notify.atRiskWithin, soonest first. Costs one DescribeConfigs for the topics and
    a few ListOffsets for the partitions where a watched group has unread records."""
    groups = set(spec.rules.notify_groups)
    lagging: dict[TopicPartition, dict[str, int]] = {}
    for row in rows:
        if row.log_start_offset is None or row.high_watermark is None:
            continue  # a failed partition
        tp = TopicPartition(row.topic, row.partition)
        start = max(row.log_start_offset, moved.get(tp, (0, 0))[1])
        for g in row.groups:
            committed = g.committed_offset
            # Already lost (below the log start) is a loss, not a risk; nothing unread, none.
            if (
                g.group in groups
                and committed is not None
                and start <= committed < row.high_watermark
            ):
                lagging.setdefault(tp, {})[g.group] = committed
    if not lagging:
        return []
    configs = kafka.topic_configs(sorted({tp.topic for tp in lagging}))
    steps = loss.windows(spec.at_risk_within_ms)
    by_time: dict[int, list[TopicPartition]] = {}
    retention: dict[TopicPartition, tuple[int, str]] = {}
    for tp in lagging:
        config = configs.get(tp.topic)
        found = loss.retention_of(
            {} if isinstance(config, KafkaFailure) or config is None else config,
            spec.rules,
        )
        if found is None:
            continue
        retention[tp] = found
        for w in steps:
            by_time.setdefault(now_ms - found[0] + w, []).append(tp)
    offsets: dict[TopicPartition, dict[int, int | None]] = {}
    for when, tps in by_time.items():
        for tp, off in kafka.offsets_for_timestamp(tps, when).items():
            if isinstance(off, KafkaFailure):
                continue  # no answer: no claim either way for this window
            window = when - now_ms + retention[tp][0]
            offsets.setdefault(tp, {})[window] = off if off >= 0 else None
    risks = []
    for tp, per_group in lagging.items():
        if tp not in retention:
            continue
        for group, committed in sorted(per_group.items()):
            left = loss.time_left(committed, offsets.get(tp, {}))
            if left is not None:
                risks.append(loss.Risk(group, tp, committed, left, retention[tp][1]))
    return sorted(risks, key=lambda r: (r.within_ms, r.group, r.tp))


def _name_causes(
    found: list[loss.Loss],
    kafka: PolicyKafka,
    now_ms: int,
    purges: PurgeLedger | None,
    cluster: str | None,
    since_ms: int | None,
    namespace: str | None = None,
) -> list[loss.Loss]:
    """Pending causes named: a RecordPurge the ledger knows moved the log start into the
    range; else the broker's retention or external, from the topics' retention settings
    and first records, read only for the partitions that need them."""
    named: list[loss.Loss] = []
    # The purges on this cluster are looked up once for every loss of the run: finding
    # them may read each purge's KafkaClusterBinding.
    on_cluster = None
    if purges is not None and any(lost.cause == _PENDING for lost in found):
        on_cluster = purges.on_cluster(cluster)
    for lost in found:
        purge = None
        if lost.cause == _PENDING and on_cluster is not None:
            purge = on_cluster.cause(lost.tp, lost.from_offset, lost.to_offset, since_ms, namespace)
        named.append(replace(lost, cause=RECORD_PURGE, by=purge) if purge else lost)
    pending = sorted({lost.tp for lost in named if lost.cause == _PENDING})
    if not pending:
        return named
    configs = kafka.topic_configs(sorted({tp.topic for tp in pending}))
    firsts = kafka.first_record_times(pending)
    cause: dict[TopicPartition, str] = {}
    for tp in pending:
        config = configs.get(tp.topic)
        first = firsts.get(tp)
        if isinstance(config, KafkaFailure) or config is None or isinstance(first, KafkaFailure):
            # Unknown settings: say external rather than blame the broker without grounds.
            cause[tp] = loss.EXTERNAL
            continue
        plausible = loss.broker_retention_plausible(config, first, now_ms)
        cause[tp] = loss.BROKER_RETENTION if plausible else loss.EXTERNAL
    return [
        replace(lost, cause=cause[lost.tp]) if lost.cause == _PENDING else lost for lost in named
    ]


def at_risk_condition(report: LossReport, spec: PolicySpec) -> cond.Condition:
    """AtRisk: True while retention will reach unread records of a watched group within
    spec.notify.atRiskWithin, naming the soonest."""
    if report.risks:
        first = report.risks[0]
        groups = sorted({r.group for r in report.risks})
        message = (
            f"{first.by} reaches unread records of group {first.group} on {first.tp} "
            f"(from offset {first.committed}) within {first.within_ms // 1000}s; "
            f"{len(report.risks)} partition(s) of {', '.join(groups)} at risk; see status.atRisk"
        )
        return cond.Condition("AtRisk", "True", cond.Reason.UNREAD_AT_RISK, message)
    within = spec.at_risk_within_ms // 1000
    message = f"no watched group's unread records within {within}s of retention"
    return cond.Condition("AtRisk", "False", cond.Reason.NO_RISK, message)


def data_loss_condition(report: LossReport) -> cond.Condition:
    """DataLoss: True when this run found new losses (with the totals), else False."""
    total = report.status["unconsumedLostTotal"]
    if report.new:
        records = sum(lost.records for lost in report.new)
        groups = sorted({lost.group for lost in report.new})
        message = (
            f"{records} unread records lost by {', '.join(groups)} this run "
            f"({total} since the policy began); see status.losses"
        )
        return cond.Condition("DataLoss", "True", cond.Reason.UNCONSUMED_RECORDS_DELETED, message)
    message = f"no new loss ({total} records since the policy began)"
    return cond.Condition("DataLoss", "False", cond.Reason.NO_LOSS, message)
