"""One RetentionPolicy run, once its batch is planned: check every cut again with fresh
offsets through the same planning core, hold it back to what overlapping policies allow,
delete, verify, and write status.

Safety, in order: nothing is deleted on an invalid spec or from a failed read; a planned
cut is re-checked against offsets and committed offsets read just before DeleteRecords
and may only be lowered there; where policies overlap on a partition the smallest cut
wins (core.overlap); dryRun deletes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.cluster_features import UnknownGroups, unknown_groups
from kafka_retention.core.conditions import Reason
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable
from kafka_retention.core.overlap import (
    Holder,
    Peer,
    PeerIndex,
    conservative_cut,
    namespace_of,
    overlap_note,
)
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.services.cutting import delete_and_verify
from kafka_retention.services.fresh import read_facts
from kafka_retention.services.policy import report
from kafka_retention.services.policy.run import PolicyRun, RunOutcome, failed, ready_conditions
from kafka_retention.services.ports import KafkaCutter, PolicyKafka
from kafka_retention.services.watch.orphans import VolumeFinder
from kafka_retention.services.watch.tiers import PolicyTiers, TierReport
from kafka_retention.services.watch.watches import watch


def apply_plan(
    run: PolicyRun,
    spec: PolicySpec,
    plan: PolicyPlan,
    kafka: PolicyKafka,
    peers: PeerIndex,
    started: datetime,
    retry_delay: float = 15.0,
    purges: PurgeLedger | None = None,
    find_volumes: VolumeFinder | None = None,
    tiers: PolicyTiers | None = None,
) -> RunOutcome:
    """Re-check, hold back for overlapping policies, delete, verify and report. `purges`
    lets a loss be blamed on the RecordPurge that caused it; `find_volumes` reaches the
    brokers' log dirs for spec.orphanPartitions; `tiers`: the policy's tiered topics and
    its batch's reads of them, for status.tiers and RemoteDeletionPending."""
    # Only topics this policy selects (under its binding's allow/protect): a plan comes
    # back from Spark pods through ConfigMaps in the policy's namespace, which whoever
    # may write ConfigMaps there could have forged.
    plan = selected_plan(spec, plan)
    rows = [r for r in plan.rows if not r.error]
    failures = [f"{r.topic}-{r.partition}: {r.error}" for r in plan.rows if r.error]
    cuts: dict[TopicPartition, tuple[int, int]] = {}
    notes: dict[str, str] = {}
    held: dict[str, list[report.HeldBack]] = {}
    # What the cluster runs (status.kafka), read once a run (cached per connection), and
    # whether a group this policy names is absent where share or streams groups cannot
    # exist (GroupsReadable). Only said: an absent group is read as before, and a forged
    # plan's group types change no cut (the cuts are re-read fresh below).
    features = kafka.cluster_features()
    unknown = unknown_groups(plan.group_types, features)
    try:
        # A reader's policy (its entry grants protect, not retention) cuts nothing: its
        # plan serves its status and watches, with no fresh re-read for cuts.
        if spec.cuts:
            cuts, notes, held = _safe_cuts(run, spec, kafka, rows, peers, started)
    except KafkaUnavailable as err:
        return failed(run, spec, Reason.KAFKA_UNAVAILABLE, err, started, retry_delay)
    # When the deletes went out: RemoteDeletionPending says how long after it the last
    # remote segment below the cuts was deleted.
    cut_at = run.now() if cuts and not spec.dry_run else None
    moved, delete_failures = _delete(kafka, cuts, spec.dry_run)
    failures += delete_failures
    finished = run.now()
    deleted = report.deleted(rows, moved)
    lost = report.losses(rows, cuts, moved, spec)
    if not spec.cuts:
        message = (
            f"holds back other namespaces' cuts on {len({r.topic for r in rows})} topics "
            "by its groups (its binding grants protect, not retention); deletes nothing"
        )
    elif spec.dry_run:
        would = sum(target - before for before, target in cuts.values())
        message = f"dry run: would delete {would} records from {len(cuts)} partitions"
    else:
        message = f"deleted {deleted.records} records from {len(deleted.by_topic)} topics"
    watches = watch(
        run.key,
        run.status,
        spec,
        plan,
        rows,
        moved,
        kafka,
        peers,
        finished,
        purges,
        find_volumes,
        tiers,
        cut_at,
    )
    failures += watches.problems
    groups = report.group_summary(rows, plan.group_types)
    degraded = "; ".join(failures[:5])
    interval = spec.interval_ms / 1000
    run.store.patch(
        {
            **({"kafka": features.status()} if features is not None else {}),
            **watches.status(),
            **report.run_status(
                run.status,
                run.generation,
                spec,
                plan,
                rows,
                moved,
                deleted,
                lost,
                notes,
                groups,
                held=held,
                cut_by_topic=report.partitions_cut(cuts, moved, spec.dry_run),
                started=started,
                finished=finished,
                next_run=finished + timedelta(seconds=interval),
                degraded=degraded,
                tiered=watches.tiers.topics if watches.tiers is not None else None,
            ),
            "conditions": _groups_readable(
                watches.conditions(
                    ready_conditions(run, "True", Reason.RUN_SUCCEEDED, message, degraded=degraded),
                    spec,
                    run.generation,
                    finished,
                ),
                unknown,
                run.generation,
                finished,
            ),
        }
    )
    watched = watches.losses
    return RunOutcome(
        True,
        message,
        next_run_in=interval,
        records_deleted=deleted.records,
        bytes_reclaimed=deleted.bytes_estimate,
        partitions_cut=deleted.partitions_cut,
        deleted_by_topic=deleted.by_topic,
        losses=lost,
        notify_losses=watched.new if watched is not None else [],
        at_risk=watched.risks if watched is not None else None,
        tombstones=watches.tombstones,
        orphans=watches.orphans,
        failures=failures,
        groups=groups,
        **_remote(watches.tiers),
    )


def _groups_readable(
    conditions: list[dict[str, Any]],
    unknown: UnknownGroups | None,
    generation: int | None,
    now: datetime,
) -> list[dict[str, Any]]:
    """GroupsReadable: False while a named group is no group on a cluster that cannot have
    share or streams groups; set back to True once that ends. Absent on a policy that
    never met the case, as every policy on a cluster with every group type."""
    if unknown is not None:
        return cond.set_condition(
            conditions,
            "GroupsReadable",
            "False",
            Reason.GROUP_TYPE_UNSUPPORTED,
            unknown.message(),
            generation,
            now,
        )
    if any(c.get("type") == "GroupsReadable" for c in conditions):
        return cond.set_condition(
            conditions,
            "GroupsReadable",
            "True",
            Reason.GROUPS_READ,
            "every group the policy names exists on the cluster",
            generation,
            now,
        )
    return conditions


def _remote(tiers: TierReport | None) -> dict[str, Any]:
    """The RunOutcome fields of the tiered topics' remote deletion (the metrics)."""
    if tiers is None:
        return {}
    return {
        "remote_pending_segments": tiers.pending_segments,
        "remote_pending_bytes": tiers.pending_bytes,
        "remote_deletion_lag_s": tiers.deletion_lag_s,
    }


def selected_plan(spec: PolicySpec, plan: PolicyPlan) -> PolicyPlan:
    """The plan's rows, skipped topics and scan rows for topics this policy selects (under
    its binding's entry); everything else dropped. A plan comes back from Spark pods
    through ConfigMaps, which whoever may write them could have forged: what is left is
    still a proposal, re-checked against fresh reads before any delete."""
    mine = set(spec.topics.select({r.topic for r in plan.rows} | set(plan.skipped)))
    return replace(
        plan,
        rows=[r for r in plan.rows if r.topic in mine],
        skipped={t: why for t, why in plan.skipped.items() if t in mine},
        tombstones=[r for r in plan.tombstones if r.topic in mine],
    )


# At most this many holders are named per topic in status.topics[].heldBackBy.
MAX_HOLDERS_LISTED = 5


def _safe_cuts(
    run: PolicyRun,
    spec: PolicySpec,
    kafka: PolicyKafka,
    rows: Sequence[PlanRow],
    index: PeerIndex,
    now: datetime,
) -> tuple[dict[TopicPartition, tuple[int, int]], dict[str, str], dict[str, list[report.HeldBack]]]:
    """(log start, cut) per partition worth cutting, after the fresh re-check and the
    overlap rule; a note per topic that other policies also cut; and who held the cuts
    back, per topic, for status.topics[].heldBackBy."""
    peers_by_topic: dict[str, dict[str, Peer]] = {}
    notes: dict[str, str] = {}
    here = index.cluster(run.key, spec)
    for topic in sorted({r.topic for r in rows}):
        peers = index.on_topic(topic, here, exclude=run.key)
        peers_by_topic[topic] = peers
        if peers:
            # The note never names another namespace's policies, only that they exist.
            notes[topic] = overlap_note(run.key, peers)
    wanted = {
        TopicPartition(r.topic, r.partition): r.target_offset
        for r in rows
        if r.target_offset is not None
        and r.log_start_offset is not None
        and r.target_offset > r.log_start_offset
    }
    if not wanted:
        return {}, notes, {}

    def groups_of(tp: TopicPartition) -> set[str]:
        return set(spec.rules.groups()).union(
            *(peer.rules.groups() for peer in peers_by_topic[tp.topic].values())
        )

    read = read_facts(kafka, list(wanted), groups_of)
    if read.errors:
        tp, problem = next(iter(read.errors.items()))
        raise KafkaUnavailable(f"fresh offsets of {tp}: {problem}")
    now_ms = int(now.timestamp() * 1000)
    # Every time a cut depends on is looked up now, this policy's too: the plan's own
    # lookups came back with its rows, which a tenant may have written.
    times = _fresh_times(kafka, spec, wanted, peers_by_topic, now_ms)
    cuts: dict[TopicPartition, tuple[int, int]] = {}
    holders: dict[str, dict[Holder, int]] = {}
    for tp, target in wanted.items():
        facts: PartitionFacts = replace(read.facts[tp], offsets_for_times=times.get(tp, {}))
        decision = conservative_cut(target, facts, spec.rules, peers_by_topic[tp.topic], now_ms)
        if decision.holders:
            # The last holder is the one whose cut was taken.
            last = decision.holders[-1]
            count = holders.setdefault(tp.topic, {})
            count[last] = count.get(last, 0) + 1
        if decision.target > facts.log_start:
            cuts[tp] = (facts.log_start, decision.target)
    return cuts, notes, {t: _held(run.key, found) for t, found in holders.items()}


def _held(asker: str, found: Mapping[Holder, int]) -> list[report.HeldBack]:
    """heldBackBy entries, the most partitions first: the namespace and group of each
    holder, and the policy's name only for one of the asker's own namespace."""
    out = []
    for holder, partitions in sorted(found.items(), key=lambda hp: (-hp[1], hp[0].key)):
        namespace = namespace_of(holder.key) or ""
        mine = namespace == namespace_of(asker)
        policy = holder.key.split("/", 1)[-1] if mine else None
        out.append(report.HeldBack(namespace, partitions, policy, holder.group))
    return out[:MAX_HOLDERS_LISTED]


def _fresh_times(
    kafka: PolicyKafka,
    spec: PolicySpec,
    wanted: Mapping[TopicPartition, Any],
    peers_by_topic: Mapping[str, Mapping[str, Peer]],
    now_ms: int,
) -> dict[TopicPartition, dict[int, int | None]]:
    """Offsets for the times this policy's rules and the overlapping policies' ask for,
    read now (a peer that holds back by its groups alone asks for none)."""
    by_time: dict[int, list[TopicPartition]] = {}
    own = spec.rules.lookup_times(now_ms)
    for tp in wanted:
        for t in own:
            by_time.setdefault(t, []).append(tp)
        for peer in peers_by_topic[tp.topic].values():
            if peer.groups_only:
                continue
            for t in peer.rules.lookup_times(now_ms):
                by_time.setdefault(t, []).append(tp)
    out: dict[TopicPartition, dict[int, int | None]] = {}
    for t, tps in by_time.items():
        for tp, found in kafka.offsets_for_timestamp(sorted(set(tps)), t).items():
            if isinstance(found, KafkaFailure):
                raise KafkaUnavailable(f"offset for time {t} of {tp}: {found}")
            out.setdefault(tp, {})[t] = found if found >= 0 else None
    return out


def _delete(
    kafka: KafkaCutter, cuts: Mapping[TopicPartition, tuple[int, int]], dry_run: bool
) -> tuple[dict[TopicPartition, tuple[int, int]], list[str]]:
    """(log start before, after) per partition; dry runs and failures move nothing."""
    if dry_run or not cuts:
        return {tp: (b, b) for tp, (b, _) in cuts.items()}, []
    out: dict[TopicPartition, tuple[int, int]] = {}
    failures = []
    applied = delete_and_verify(kafka, {tp: target for tp, (_, target) in cuts.items()})
    for tp, (before, _) in cuts.items():
        result = applied[tp]
        if result.failure is not None:
            failures.append(f"{tp}: {result.failure}")
            out[tp] = (before, before)
        elif result.log_start_after is not None:
            # Moved this far, whatever else: counted, and said when short of the cut.
            out[tp] = (before, result.log_start_after)
            if result.unverified is not None:
                failures.append(f"{tp}: {result.unverified}")
        else:
            failures.append(f"{tp}: {result.unverified}")
            out[tp] = (before, before)
    return out, failures
