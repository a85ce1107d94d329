"""Plan a batch of RetentionPolicies on one cluster: in this process through the planning
core when the batch is small, else with one Spark job over the union of its partitions.

Where the line is: a batch of at most `in_process_max_partitions` partitions (the union
over its policies) is planned here; config.IN_PROCESS_MAX_PARTITIONS holds the default
of each Spark mode and why. Up to that size one Spark job costs more in scheduling and
Python workers than it saves; above it, Spark spreads the reads over executors and, in
pod modes, over machines. In-process plans skip the
record scans (time lags, unread bytes): their offsets, cuts, unread counts and byte
estimates are the same as Spark's, from the same core. Where a cut passes a spec.notify
group, the first keys it removes unread are sampled here too (a bounded read), so a loss
report carries keys whichever planner ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

from kafka_retention.core import topics as topic_rules
from kafka_retention.core.facts import GroupRead, PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure
from kafka_retention.core.plan_row import KeySample, PlanRow
from kafka_retention.core.policy import PolicyPlan, plan_partition
from kafka_retention.core.policy_spec import Batch, Member
from kafka_retention.services.fresh import answered, raise_if_retriable
from kafka_retention.services.ports import PolicyKafka
from kafka_retention.services.watch.tiers import tier_settings


class BatchPlanner(Protocol):
    """Plans a batch in one Spark job (local session or pods): a plan per member key."""

    def __call__(self, batch: Batch) -> Mapping[str, PolicyPlan]: ...

    def stop(self) -> None:
        """End every wait for a plan now; a call in progress raises Abandoned."""


@dataclass
class Selection:
    """What the cluster says about the batch's topics, read once for all its policies."""

    selected: dict[str, list[str]]  # policy key -> topics it matches
    partitions: dict[str, list[int]]  # topics that take DeleteRecords, with partitions
    problems: dict[str, str]  # topic -> why it is not planned
    # policy key -> topics its pattern matches that its binding protects (for status).
    withheld: dict[str, list[str]] = field(default_factory=dict)
    # Tiered topics (remote.storage.enable) -> their retention settings, from the same
    # config read (status.topics[].tiered).
    tiered: dict[str, dict[str, str]] = field(default_factory=dict)

    def partition_count(self) -> int:
        return sum(len(p) for p in self.partitions.values())

    def skipped(self, key: str) -> dict[str, str]:
        return {t: self.problems[t] for t in self.selected[key] if t in self.problems}

    def tiered_of(self, key: str) -> dict[str, dict[str, str]]:
        """The tiered topics one policy selects, with their retention settings."""
        return {t: self.tiered[t] for t in self.selected.get(key, ()) if t in self.tiered}

    def only(self, keys: Iterable[str]) -> Selection:
        """The part of the selection these policies need (the rest goes to Spark)."""
        keep = set(keys)
        selected = {k: v for k, v in self.selected.items() if k in keep}
        topics = {t for ts in selected.values() for t in ts}
        return Selection(
            selected,
            {t: p for t, p in self.partitions.items() if t in topics},
            {t: why for t, why in self.problems.items() if t in topics},
            {k: v for k, v in self.withheld.items() if k in keep},
            {t: s for t, s in self.tiered.items() if t in topics},
        )


def select(kafka: PolicyKafka, members: Sequence[Member]) -> Selection:
    names = kafka.topic_names()
    selected = {m.key: m.spec.topics.select(names) for m in members}
    union = sorted({t for ts in selected.values() for t in ts})
    results, unreadable = kafka.topic_configs(union), dict[str, str]()
    readable = answered(results, unreadable)
    # In the cluster's order, each topic's config or why it could not be read.
    configs: dict[str, Mapping[str, str] | str] = {
        t: readable[t] if t in readable else unreadable[t] for t in results
    }
    classes = topic_rules.classify_topics(configs, _empty_allowed(kafka, readable))
    problems, deletable = classes.problems, classes.deletable
    partitions = answered(kafka.topic_partitions(deletable), problems)
    withheld = {m.key: m.spec.topics.withheld(names) for m in members}
    tiered = {t: s for t, c in readable.items() if (s := tier_settings(c)) is not None}
    return Selection(
        selected, partitions, problems, {k: v for k, v in withheld.items() if v}, tiered
    )


def _empty_allowed(kafka: PolicyKafka, configs: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether topics with an empty cleanup.policy take DeleteRecords on this cluster
    (4.2 and later, KIP-1161); what it runs is read only when such a topic is selected."""
    if not topic_rules.has_empty_policy(configs.values()):
        return False
    features = kafka.cluster_features()
    return features is not None and features.deletes_with_empty_cleanup_policy()


def plan_in_process(
    kafka: PolicyKafka, members: Sequence[Member], selection: Selection, now_ms: int
) -> dict[str, PolicyPlan]:
    """Every member's plan from one read of offsets, times and committed offsets."""
    tps = [TopicPartition(t, p) for t, parts in sorted(selection.partitions.items()) for p in parts]
    times = sorted({t for m in members for t in m.spec.rules.lookup_times(now_ms)})
    # The three reads in flight at once: none depends on another (a cut is held to the
    # high watermark read beside the groups, and a run re-reads the groups just before
    # its delete), so the plan waits for the slowest, not for their sum. The lookups go
    # one time after another: each covers the whole batch (a ListOffsets request per
    # 1,000 partitions), and a batch's policies may ask for many times.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="plan-reads") as pool:
        reading = pool.submit(_positions, kafka, members, selection)
        looking = pool.submit(lambda: {t: kafka.offsets_for_timestamp(tps, t) for t in times})
        earliest, latest = kafka.log_bounds(tps)
        at_time = looking.result()
        reads = reading.result()
    commits = {group: read.positions for group, read in reads.items()}
    plans: dict[str, PolicyPlan] = {}
    to_size: dict[TopicPartition, tuple[int, int]] = {}
    for member in members:
        rows = []
        for topic in selection.selected[member.key]:
            for partition in selection.partitions.get(topic, []):
                tp = TopicPartition(topic, partition)
                row = _row(member, tp, earliest, latest, at_time, commits, now_ms)
                rows.append(row)
                if row.records_to_delete and row.log_start_offset is not None:
                    to_size[tp] = (row.log_start_offset, row.high_watermark or 0)
        plans[member.key] = PolicyPlan(
            rows,
            selection.skipped(member.key),
            group_types={g: str(reads[g].type) for g in member.spec.rules.groups() if g in reads},
        )
    _sample_unread(kafka, members, plans)
    averages = kafka.average_record_bytes(to_size) if to_size else {}
    for plan in plans.values():
        # Rows are frozen: each planned one is replaced by itself with its estimate.
        plan.rows = [_with_estimate(row, averages) for row in plan.rows]
    return plans


def _with_estimate(row: PlanRow, averages: Mapping[TopicPartition, float]) -> PlanRow:
    """The row with bytesToDeleteEstimate: records to delete times the average record
    size at the log start (None: no size was read); a failed row as it is."""
    if row.error:
        return row
    records = row.records_to_delete or 0
    avg = averages.get(TopicPartition(row.topic, row.partition))
    estimate = 0 if not records else (None if avg is None else round(avg * records))
    return replace(row, bytes_to_delete_estimate=estimate)


# Keys kept per group and partition (as the Spark scan's default), and partitions sampled
# per policy: status lists at most 100 losses, so more samples would never be shown.
KEY_SAMPLE = 10
MAX_SAMPLED_PARTITIONS = 100


def _sample_unread(
    kafka: PolicyKafka, members: Sequence[Member], plans: Mapping[str, PolicyPlan]
) -> None:
    """Set `unconsumedSample` [{offset, key}] on each notify group a cut passes: the first
    records it will remove that the group has not read. One bounded read per group."""
    wanted: dict[str, dict[TopicPartition, tuple[int, int]]] = {}
    # (policy, row index, group index) of each group to sample.
    targets: list[tuple[str, int, int]] = []
    for member in members:
        watched = set(member.spec.rules.notify_groups)
        sampled = 0
        for i, row in enumerate(plans[member.key].rows):
            if row.target_offset is None or row.log_start_offset is None:
                continue
            for j, g in enumerate(row.groups):
                if g.group not in watched or not g.unconsumed_to_delete:
                    continue
                if sampled >= MAX_SAMPLED_PARTITIONS:
                    break
                sampled += 1
                tp = TopicPartition(row.topic, row.partition)
                start = max(row.log_start_offset, g.committed_offset or 0)
                ranges = wanted.setdefault(g.group, {})
                # Policies sharing the group may cut the partition differently: read to
                # the furthest cut, keep each policy's keys below its own.
                end = max(row.target_offset, ranges.get(tp, (start, start))[1])
                ranges[tp] = (start, end)
                targets.append((member.key, i, j))
    found: dict[tuple[str, TopicPartition], list[tuple[int, str | None]]] = {}
    for group, ranges in sorted(wanted.items()):
        for tp, keys in kafka.first_keys(ranges, KEY_SAMPLE).items():
            found[(group, tp)] = keys
    for key, i, j in targets:
        # Rows are frozen: the row is replaced by one whose group carries its sample.
        rows = plans[key].rows
        row = rows[i]
        g = row.groups[j]
        keys = found.get((g.group, TopicPartition(row.topic, row.partition)), [])
        target = row.target_offset or 0
        sample = tuple(KeySample(o, k) for o, k in keys if o < target)
        groups = (*row.groups[:j], replace(g, unconsumed_sample=sample), *row.groups[j + 1 :])
        rows[i] = replace(row, groups=groups)


def _positions(
    kafka: PolicyKafka, members: Sequence[Member], selection: Selection
) -> Mapping[str, GroupRead]:
    """Each group's type and positions on the partitions of the policies that name it
    (one read for the batch)."""
    wanted: dict[str, set[TopicPartition]] = {}
    for member in members:
        mine = [
            TopicPartition(t, p)
            for t in selection.selected[member.key]
            for p in selection.partitions.get(t, [])
        ]
        for group in member.spec.rules.groups():
            wanted.setdefault(group, set()).update(mine)
    return kafka.group_positions({group: sorted(tps) for group, tps in sorted(wanted.items())})


def _row(
    member: Member,
    tp: TopicPartition,
    earliest: Mapping[TopicPartition, int | KafkaFailure],
    latest: Mapping[TopicPartition, int | KafkaFailure],
    at_time: Mapping[int, Mapping[TopicPartition, int | KafkaFailure]],
    commits: Mapping[str, Mapping[TopicPartition, int | None]],
    now_ms: int,
) -> PlanRow:
    """One plan row, as the Spark job writes it (retention_jobs.transforms)."""
    start, end = earliest.get(tp), latest.get(tp)
    times: dict[int, int | None] = {}
    problem: KafkaFailure | None = next(
        (x for x in (start, end) if isinstance(x, KafkaFailure)), None
    )
    for t in member.spec.rules.lookup_times(now_ms):
        found = at_time[t].get(tp)
        if isinstance(found, KafkaFailure):
            problem = problem or found
        else:
            times[t] = found if found is not None and found >= 0 else None
    if problem is not None:
        raise_if_retriable(problem)
        return PlanRow(tp.topic, tp.partition, error=str(problem))
    if not isinstance(start, int) or not isinstance(end, int):
        return PlanRow(tp.topic, tp.partition, error=f"no offsets returned for {tp}")
    rules = member.spec.rules
    committed = {g: commits[g].get(tp) for g in rules.groups()}
    cut = plan_partition(PartitionFacts(tp, start, end, committed, times), rules, now_ms)
    return cut.row(times)
