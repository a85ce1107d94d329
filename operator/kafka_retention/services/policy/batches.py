"""Run a batch: the RetentionPolicies on one cluster that are due together.

The batch is planned once (services.policy.planning), small policies first in this
process and the rest in one Spark job, so a huge topic delays only the policies planned
with it; then each policy's plan is checked again and applied on a small thread pool,
each with its own status, so one policy's trouble is its own.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kafka_retention.core.batch_errors import as_told, told_in_full
from kafka_retention.core.conditions import Reason
from kafka_retention.core.failures import Abandoned, KafkaUnavailable, SecretUnavailable
from kafka_retention.core.overlap import PeerIndex
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import Batch, Member, PolicySpec, parse_policy_spec
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.core.specs import SpecError
from kafka_retention.services.cluster_ids import ClusterIds
from kafka_retention.services.policy import apply as policy_apply
from kafka_retention.services.policy import run
from kafka_retention.services.policy.planning import BatchPlanner, plan_in_process, select
from kafka_retention.services.policy.run import PolicyRun, RunOutcome
from kafka_retention.services.ports import PolicyKafka
from kafka_retention.services.scheduler import interleave_namespaces, namespace_of
from kafka_retention.services.tenancy import (
    BindingUnavailable,
    ClusterIdMismatch,
    Refused,
    Tenancy,
    check_cluster_id,
)
from kafka_retention.services.watch.orphans import VolumeFinder
from kafka_retention.services.watch.tiers import BatchTiers, PolicyTiers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Due:
    """A policy the scheduler hands over: where its status goes, its spec as stored (strict
    tenancy judges the cluster as written) and that spec parsed (`parse`, once: the fleet
    parses a policy when it hears of it, for the overlap rule too)."""

    run: PolicyRun
    raw: Mapping[str, Any]
    spec: PolicySpec | SpecError
    uid: str = ""


def parse(raw: Mapping[str, Any]) -> PolicySpec | SpecError:
    """A policy's spec, or what is wrong with it (its runs say so, and it holds nobody back)."""
    try:
        return parse_policy_spec(raw)
    except SpecError as err:
        # Kept for as long as the spec is: without the parser's frames.
        return err.with_traceback(None)


@dataclass(frozen=True)
class Environment:
    """How a batch reaches the world; the handler builds it from the operator's flags."""

    # (spec, namespace) -> bootstrap servers and client properties: spec.cluster resolved.
    connection: Callable[[PolicySpec, str], tuple[str, dict[str, str]]]
    connect: Callable[[str, dict[str, str]], PolicyKafka]
    spark: BatchPlanner | None
    in_process_max_partitions: int = 10_000
    apply_workers: int = 4
    retry_delay: float = 15.0
    # What RecordPurges deleted (fed by their watch), to name them as a loss's cause.
    purges: PurgeLedger | None = None
    # How spec.orphanPartitions reaches broker log dirs (local paths, or exec into pods).
    find_volumes: VolumeFinder | None = None
    # Which cluster each policy reaches by Kafka's own id, for the overlap rule; without
    # it, clusters are told apart by how specs name them (unit tests).
    cluster_ids: ClusterIds | None = None
    # What a namespace may do on which cluster (KafkaClusterBindings); None: no check
    # (unit tests of the planning around it).
    tenancy: Tenancy | None = None

    def peers(self, others: Mapping[str, PolicySpec]) -> PeerIndex:
        ids = self.cluster_ids
        if ids is None:
            return PeerIndex(others)

        def cluster(key: str, spec: PolicySpec) -> str | None:
            # An admitted policy's binding says its cluster id: nothing to look up, and
            # nothing contacted on behalf of a namespace the binding does not admit.
            if spec.cluster_id is not None:
                return spec.cluster_id
            return ids.of(namespace_of(key), spec.cluster)

        return PeerIndex(others, cluster)


class _BindingRanks:
    """How many policies of the same namespace on the same binding are named before a
    given one: the binding's policiesPerNamespace admits the first ones by name. Built once
    a batch from every policy the operator knows (a thousand policies: no n-squared)."""

    def __init__(self, others: Mapping[str, PolicySpec]) -> None:
        self._keys: dict[tuple[str, str | None], list[tuple[bool, str]]] = {}
        for key, spec in others.items():
            self._keys.setdefault((namespace_of(key), spec.binding), []).append((spec.dry_run, key))
        for keys in self._keys.values():
            keys.sort()

    def before(self, key: str, spec: PolicySpec) -> int:
        # Dry runs after every policy that cuts: a dry-run copy (`kubectl kafka-retention
        # plan`) never takes a place in policiesPerNamespace from one that deletes or holds.
        keys = self._keys.get((namespace_of(key), spec.binding), [])
        return bisect.bisect_left(keys, (spec.dry_run, key))


def _admitted(
    tenancy: Tenancy, others: Mapping[str, PolicySpec], ranks: _BindingRanks
) -> dict[str, PolicySpec]:
    """The policies that hold each other back (the overlap rule), as they run: only those
    their binding admits, each with the binding's topic filter and cluster id. A refused
    policy (a binding that does not exist or does not admit its namespace) selects
    nothing and so holds nobody back."""
    admitted = {}
    for key, spec in others.items():
        try:
            admitted[key] = tenancy.admit_policy(namespace_of(key), spec, ranks.before(key, spec))
        except (Refused, BindingUnavailable):
            continue
    return admitted


class PlanFailed(RuntimeError):
    """The plan job failed (a Spark task error, a scan that timed out); nothing is deleted
    and the run is tried again after the retry delay."""


def first_line(err: BaseException) -> str:
    """Spark wraps executor errors in long Java traces; the cause's own line is enough."""
    text = str(err)
    for line in text.splitlines():
        if "KafkaUnavailable" in line or "Error:" in line or "Exception:" in line:
            return line.strip()[:500]
    return (text.splitlines() or [type(err).__name__])[0][:500]


def run_batch(
    due: Sequence[Due],
    others: Mapping[str, PolicySpec],
    env: Environment,
    now: Callable[[], datetime],
) -> dict[str, RunOutcome]:
    """Every due policy's outcome. `others` are all valid policies the operator knows
    (as stored in the API server), for the overlap rule."""
    started = now()
    now_ms = int(started.timestamp() * 1000)
    outcomes: dict[str, RunOutcome] = {}
    members: list[Member] = []
    specs: dict[str, tuple[Due, PolicySpec]] = {}
    tenancy = env.tenancy.once() if env.tenancy is not None else None
    ranks = _BindingRanks(others)
    for item in due:
        if tenancy is not None:
            try:
                tenancy.check_spec(item.raw)
            except Refused as err:
                outcomes[item.run.key] = run.invalid(item.run, err.as_spec_error(), err.reason)
                continue
        if isinstance(item.spec, SpecError):
            outcomes[item.run.key] = run.invalid(item.run, item.spec)
            continue
        spec = item.spec
        if tenancy is not None:
            try:
                spec = tenancy.admit_policy(
                    namespace_of(item.run.key), spec, ranks.before(item.run.key, spec)
                )
            except (Refused, BindingUnavailable) as err:
                outcomes[item.run.key] = run.failed(
                    item.run, spec, err.reason, err, started, env.retry_delay
                )
                continue
        specs[item.run.key] = (item, spec)
        members.append(Member(item.run.key, spec, item.uid, item.run.generation or 0))
    if not members:
        return outcomes

    # The topics each member selected, once known: what a batch error may name of it.
    selected: dict[str, Sequence[str]] = {}

    def fail_all(keys: Sequence[str], reason: Reason, err: BaseException) -> None:
        # Members may be of several namespaces: the error in full goes only to the
        # member(s) it names (core.batch_errors), the rest hear that the batch failed.
        names = {
            key: [
                *specs[key][1].topics.names,
                *selected.get(key, ()),
                *specs[key][1].rules.groups(),
                *(t.groups if (t := specs[key][1].tombstones) is not None else ()),
            ]
            for key in keys
        }
        full = told_in_full(str(err), names)
        if len(full) < len(keys):
            log.warning("batch of %s failed: %s: %s", ", ".join(keys), reason, err)
        for key in keys:
            item, spec = specs[key]
            outcomes[key] = run.failed(
                item.run, spec, reason, as_told(err, key, full), started, env.retry_delay
            )

    keys = [m.key for m in members]
    if tenancy is not None:
        others = _admitted(tenancy, others, ranks)
    peers = env.peers(others)
    first = members[0]
    try:
        bootstrap, config = env.connection(first.spec, first.namespace)
        kafka = env.connect(bootstrap, config)
        if env.cluster_ids is not None or first.spec.cluster_id is not None:
            cluster_id = kafka.cluster_id()
            # Every member of a batch names the same binding (services.policy.fleet.cluster_of).
            check_cluster_id(first.spec.binding, first.spec.cluster_id, cluster_id)
            if env.cluster_ids is not None:
                env.cluster_ids.remember(first.namespace, first.spec.cluster, cluster_id)
        selection = select(kafka, members)
        selected.update(selection.selected)
    except (SecretUnavailable, BindingUnavailable, ClusterIdMismatch) as err:
        fail_all(keys, err.reason, err)
        return outcomes
    except KafkaUnavailable as err:
        fail_all(keys, Reason.KAFKA_UNAVAILABLE, err)
        return outcomes
    small, large = split(members, selection.selected, selection.partitions, env)
    # The tiered topics' local bytes and the remote log metadata: read once for the
    # batch, by the first policy with tiered topics that asks (after its cut).
    tier_reads = BatchTiers(kafka, selection.tiered) if selection.tiered else None

    def tiers_of(key: str) -> PolicyTiers | None:
        mine = selection.tiered_of(key)
        return PolicyTiers(mine, tier_reads) if mine and tier_reads is not None else None

    def apply(plans: Mapping[str, PolicyPlan]) -> None:
        def one(key: str) -> tuple[str, RunOutcome]:
            item, spec = specs[key]
            try:
                return key, policy_apply.apply_plan(
                    item.run,
                    spec,
                    # The topics its binding withholds, from the operator's own read.
                    replace(plans[key], withheld=selection.withheld.get(key, [])),
                    kafka,
                    peers,
                    started,
                    env.retry_delay,
                    env.purges,
                    env.find_volumes,
                    tiers_of(key),
                )
            except Exception as err:  # one policy's trouble is its own
                log.exception("run of %s failed", key)
                return key, RunOutcome(
                    False, f"RunFailed: {first_line(err)}", next_run_in=env.retry_delay
                )

        with ThreadPoolExecutor(max_workers=max(1, env.apply_workers)) as pool:
            # Namespaces take turns: one namespace's many policies in a shared batch do
            # not all go before another's.
            outcomes.update(pool.map(one, interleave_namespaces(plans)))

    if small:
        try:
            mine = selection.only(m.key for m in small)
            apply(plan_in_process(kafka, small, mine, now_ms))
        except KafkaUnavailable as err:
            fail_all([m.key for m in small if m.key not in outcomes], Reason.KAFKA_UNAVAILABLE, err)
    if large and env.spark is not None:
        try:
            try:
                plans = env.spark(Batch(large, bootstrap, config, now_ms))
            except (KafkaUnavailable, SecretUnavailable, Abandoned):
                raise
            except Exception as err:
                raise PlanFailed(first_line(err)) from err
            apply(plans)
        except PlanFailed as err:
            fail_all([m.key for m in large], Reason.PLAN_FAILED, err)
        except KafkaUnavailable as err:
            fail_all([m.key for m in large if m.key not in outcomes], Reason.KAFKA_UNAVAILABLE, err)
        except SecretUnavailable as err:
            fail_all([m.key for m in large], err.reason, err)
    return outcomes


def split(
    members: Sequence[Member],
    selected: Mapping[str, Sequence[str]],
    partitions: Mapping[str, Sequence[int]],
    env: Environment,
) -> tuple[list[Member], list[Member]]:
    """Policies planned here (smallest first, while the union of their partitions stays
    within the line) and those left for Spark. A policy asking for a tombstone inventory
    needs a record scan, so Spark, whatever its size. Without Spark, everything is planned
    here (and an inventory is reported as unavailable)."""
    if env.spark is None:
        return list(members), []

    def size(member: Member) -> int:
        return sum(len(partitions.get(t, ())) for t in selected[member.key])

    small: list[Member] = []
    union: set[str] = set()
    large: list[Member] = []
    for member in sorted(members, key=lambda m: (size(m), m.key)):
        if member.spec.tombstones is not None and member.spec.tombstones.inventory:
            large.append(member)
            continue
        grown = union | set(selected[member.key])
        if sum(len(partitions.get(t, ())) for t in grown) <= env.in_process_max_partitions:
            small.append(member)
            union = grown
        else:
            large.append(member)
    return small, large
