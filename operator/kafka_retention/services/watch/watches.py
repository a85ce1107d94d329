"""What a RetentionPolicy run watches after its deletes: unread-record losses and risk
(spec.notify), tombstone safety (spec.tombstones), orphan partition directories
(spec.orphanPartitions) and, on tiered topics, where the bytes are and whether remote
segments below the cuts are deleted yet (tiers), with the status fields and conditions
each adds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafka_retention.core import conditions as cond
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.overlap import PeerIndex
from kafka_retention.core.plan_row import PlanRow
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import PolicySpec
from kafka_retention.core.purge_ledger import PurgeLedger
from kafka_retention.services.ports import PolicyKafka
from kafka_retention.services.watch import loss as loss_watch
from kafka_retention.services.watch import orphans as orphan_watch
from kafka_retention.services.watch import tiers as tier_watch
from kafka_retention.services.watch import tombstones as tombstone_watch


@dataclass
class Watches:
    """What a run's watches found after its deletes: unread-record losses and risk
    (spec.notify), tombstone safety (spec.tombstones), orphan directories
    (spec.orphanPartitions); None where the spec asks for none."""

    losses: loss_watch.LossReport | None
    tombstones: tombstone_watch.TombstoneReport | None
    orphans: orphan_watch.OrphanReport | None
    problems: list[str] = field(default_factory=list)
    # Tiered topics the policy matches (None: none), and whether a previous run's status
    # had status.tiers to clear.
    tiers: tier_watch.TierReport | None = None
    had_tiers: bool = False

    def status(self) -> dict[str, Any]:
        return {
            **(self.losses.status if self.losses is not None else {}),
            **(self.tombstones.status if self.tombstones is not None else {}),
            **(self.orphans.status if self.orphans is not None else {}),
            **(
                self.tiers.status
                if self.tiers is not None
                else ({"tiers": None} if self.had_tiers else {})
            ),
        }

    def conditions(
        self,
        conditions: list[dict[str, Any]],
        spec: PolicySpec,
        generation: int | None,
        now: datetime,
    ) -> list[dict[str, Any]]:
        """Each watch's conditions over Ready's."""
        found: list[cond.Condition] = []
        if self.losses is not None:
            found += [
                loss_watch.data_loss_condition(self.losses),
                loss_watch.at_risk_condition(self.losses, spec),
            ]
        if self.tombstones is not None:
            found.append(tombstone_watch.condition(self.tombstones))
        if self.orphans is not None:
            found.append(orphan_watch.condition(self.orphans))
        if self.tiers is not None and self.tiers.condition is not None:
            found.append(self.tiers.condition)
        elif self.tiers is None and _still_pending(conditions):
            # The policy selects no tiered topic any more (its spec changed, the topic is
            # gone): a True or Unknown left standing would be about topics it no longer has.
            found.append(
                cond.Condition(
                    tier_watch.CONDITION,
                    "False",
                    cond.Reason.NO_REMOTE_SEGMENTS_BELOW_CUT,
                    "the policy selects no tiered topic now: no remote deletion to follow",
                )
            )
        for each in found:
            conditions = cond.stamp(conditions, each, generation, now)
        return conditions


def watch(
    key: str,
    status: Mapping[str, Any],
    spec: PolicySpec,
    plan: PolicyPlan,
    rows: Sequence[PlanRow],
    moved: Mapping[TopicPartition, tuple[int, int]],
    kafka: PolicyKafka,
    peers: PeerIndex,
    finished: datetime,
    purges: PurgeLedger | None,
    find_volumes: orphan_watch.VolumeFinder | None,
    tiers: tier_watch.PolicyTiers | None = None,
    cut_at: datetime | None = None,
) -> Watches:
    """Every watch the spec asks for, and the tiered topics' report whatever the spec
    (`tiers`: the policy's tiered topics and its batch's reads; `cut_at`: when the run's
    deletes were sent, None if it sent none)."""
    problems: list[str] = []
    losses = loss_watch.watch(
        spec,
        status,
        rows,
        moved,
        kafka,
        finished,
        purges,
        peers.cluster(key, spec),
        namespace=key.split("/", 1)[0],
    )
    tombstones = tombstone_watch.watch(
        spec,
        status,
        {r.topic for r in rows} | set(plan.skipped),
        kafka,
        finished,
        plan.tombstones,
    )
    if tombstones is not None:
        problems += tombstones.problems
    orphans = _orphans(key, status, spec, kafka, find_volumes, finished, problems)
    tiered = tier_watch.watch(status, tiers, rows, moved, cut_at)
    return Watches(losses, tombstones, orphans, problems, tiered, bool(status.get("tiers")))


def _orphans(
    key: str,
    status: Mapping[str, Any],
    spec: PolicySpec,
    kafka: PolicyKafka,
    find_volumes: orphan_watch.VolumeFinder | None,
    now: datetime,
    failures: list[str],
) -> orphan_watch.OrphanReport | None:
    """The orphan check, when asked for; a failure to reach the volumes or the metadata
    removes nothing and is reported with the run's other problems."""
    if spec.orphans is None:
        return None
    if find_volumes is None:
        failures.append("orphanPartitions: this operator has no access to broker volumes")
        return None
    try:
        volumes = find_volumes(spec.orphans, key.split("/", 1)[0])
        report = orphan_watch.check(spec, status, kafka, volumes, now)
    except Exception as err:  # Kafka or the Kubernetes API: nothing was removed
        failures.append(f"orphanPartitions: {err}")
        return None
    if report is not None:
        failures += report.problems
    return report


def _still_pending(conditions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the policy's last RemoteDeletionPending is True or Unknown."""
    return any(
        c.get("type") == tier_watch.CONDITION and c.get("status") != "False" for c in conditions
    )
