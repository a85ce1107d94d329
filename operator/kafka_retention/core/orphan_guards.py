"""The orphan check's circuit breakers: what stops every removal on a broker however
sure each finding looks (a log dir whose meta.properties names another cluster or node,
metadata that lists no topics, a broker about to lose too large a share of its
directories), the decision that follows, and the last look before each delete."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from kafka_retention.core.conditions import Reason
from kafka_retention.core.orphans import (
    Assignment,
    Finding,
    LogDirIdentity,
    judge,
)

State = Literal["Pending", "Remove", "Kept"]

# At most this share of a broker's partition directories may be orphans for anything to
# be removed on it. A broker rarely holds more than a few stale copies (a reassignment
# done while it was down, a topic deleted while it was away); metadata that disowns a
# quarter or more of what a broker holds is far likelier to be wrong (another cluster, a
# half-read or freshly restored metadata log) than right, and what it would delete is
# gone for good. A broker that really was drained while down stays as it is, reported
# with RemovalCapReached, until someone looks.
MAX_REMOVAL_PERCENT = 25
# The share alone would forbid every removal on a broker holding fewer than four
# partition directories (small and development clusters, a broker just added), which is
# exactly where one or two stale copies are the visible share. So a broker may always
# lose up to this many; a wrong read costs a tiny broker at most two directories, and
# only after the cluster.id, node.id and no-topics checks, removalDelay, minAge and the
# fresh read just before the delete have all agreed.
MIN_REMOVAL_ALLOWANCE = 2


@dataclass(frozen=True)
class Block:
    """Why nothing is removed on some brokers this run (`brokers`), or on any
    (`brokers` None). The message names brokers, log dirs and ids only."""

    reason: Reason
    message: str
    brokers: frozenset[int] | None = None

    def holds(self, broker: int) -> bool:
        return self.brokers is None or broker in self.brokers


def _named(brokers: Iterable[int]) -> str:
    ids = sorted(brokers)
    return f"broker{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids)) or 'none'}"


def identity_block(
    log_dir: str, identity: LogDirIdentity, cluster_id: str, owners: AbstractSet[int]
) -> Block | None:
    """Whether a log dir may be judged at all: its meta.properties must name the
    metadata's cluster id and the node id of one of `owners`, the live brokers whose
    log.dirs name it. A foreign cluster id holds the whole run (the volumes or the
    bootstrap servers point somewhere else, and nothing this check saw can be trusted);
    anything else holds the brokers the log dir could belong to."""
    node = identity.node_id
    suspects = frozenset(owners | ({node} if node is not None else set()))
    if not identity.meta_found:
        return Block(
            Reason.META_PROPERTIES_MISSING,
            f"log dir {log_dir} of {_named(owners)} has no meta.properties: "
            f"nothing removed on {_named(suspects)}",
            suspects,
        )
    if identity.cluster_id is None:
        return Block(
            Reason.CLUSTER_ID_MISSING,
            f"meta.properties of log dir {log_dir} ({_named(owners)}) names no "
            f"cluster.id, the metadata came from cluster {cluster_id}: nothing removed on "
            f"{_named(suspects)}",
            suspects,
        )
    if identity.cluster_id != cluster_id:
        return Block(
            Reason.CLUSTER_ID_MISMATCH,
            f"meta.properties of log dir {log_dir} ({_named(owners)}, node.id "
            f"{'none' if node is None else node}) names cluster.id {identity.cluster_id}, "
            f"the metadata came from cluster {cluster_id}: nothing removed on any broker",
        )
    if node is None or node not in owners:
        return Block(
            Reason.NODE_ID_MISMATCH,
            f"meta.properties of log dir {log_dir} names node.id "
            f"{'none' if node is None else node}, the log.dirs of {_named(owners)} "
            f"name it: nothing removed on {_named(suspects)}",
            suspects,
        )
    return None


def cluster_change_block(cluster_id: str, later_cluster_id: str) -> Block | None:
    """Reads of one check that came from different clusters: nothing holds together."""
    if later_cluster_id == cluster_id:
        return None
    return Block(
        Reason.CLUSTER_ID_MISMATCH,
        f"the cluster id changed from {cluster_id} to {later_cluster_id} between reads of "
        "the same check: nothing removed on any broker",
    )


def metadata_block(cluster_id: str, assignment: Assignment) -> Block | None:
    """A metadata read with no topics but internal ones disowns every directory at once:
    a new or wrong cluster, or a read that lost its topics; never a reason to delete."""
    if any(not topic.startswith("__") for topic in assignment):
        return None
    return Block(
        Reason.NO_TOPICS_IN_METADATA,
        f"the metadata of cluster {cluster_id} lists no topics but internal ones: "
        "nothing removed on any broker",
    )


def removal_allowance(partition_dirs: int) -> int:
    """How many orphans a broker holding `partition_dirs` may have and still lose them."""
    return max(partition_dirs * MAX_REMOVAL_PERCENT // 100, MIN_REMOVAL_ALLOWANCE)


def removal_cap_block(broker_id: int, findings: Iterable[Finding]) -> Block | None:
    """The circuit breaker for one broker, over every finding of all its listed log
    dirs: more orphans than `removal_allowance` of its partition directories (every kind,
    assigned or not; not symlinks, files or unknown names) removes nothing on it. All
    orphans count, not only those due this run, so metadata that disowns a broker's data
    in bulk cannot chip it away as delays run out one by one."""
    judged = [f for f in findings if f.verdict != "unknown"]
    orphans = sum(1 for f in judged if f.verdict == "orphan")
    allowed = removal_allowance(len(judged))
    if orphans <= allowed:
        return None
    return Block(
        Reason.REMOVAL_CAP_REACHED,
        f"{orphans} of the {len(judged)} partition directories of broker {broker_id} look "
        f"orphaned, more than the {allowed} allowed ({MAX_REMOVAL_PERCENT}% of them, at "
        f"least {MIN_REMOVAL_ALLOWANCE}): nothing removed on broker {broker_id}",
        frozenset({broker_id}),
    )


@dataclass(frozen=True)
class Decision:
    state: State
    reason: str
    remove_after_ms: int | None = None


def decide(
    finding: Finding,
    first_seen_ms: int | None,
    now_ms: int,
    removal_delay_ms: int,
    min_age_ms: int,
    dry_run: bool,
) -> Decision:
    """KIP-370's rule for one finding. `first_seen_ms` must come from
    `carry_first_seen`, i.e. the start of this finding's unbroken run as an orphan;
    None counts as first seen now. remove_after is the earliest time both clocks allow
    (the delay since first seen, minAge since the newest file)."""
    if finding.verdict != "orphan":
        return Decision("Kept", "assigned again" if first_seen_ms is not None else finding.reason)
    first_seen = now_ms if first_seen_ms is None else first_seen_ms
    newest = finding.entry.newest_segment_mtime_ms
    aged_at = newest + min_age_ms if newest is not None else 0
    remove_after = max(first_seen + removal_delay_ms, aged_at)
    if now_ms < first_seen + removal_delay_ms:
        return Decision("Pending", "removal delay", remove_after)
    if now_ms < aged_at:
        return Decision("Pending", "segments younger than minAge", remove_after)
    if dry_run:
        return Decision("Kept", "dry run", remove_after)
    return Decision("Remove", finding.reason, remove_after)


def still_orphan(
    finding: Finding,
    fresh_assignment: Assignment,
    broker_id: int,
    cluster_id: str,
    fresh_cluster_id: str,
) -> bool:
    """The last check before a delete, against metadata read just now: the partition may
    have been assigned back (or its topic re-created) since the finding was made, and the
    fresh read must come from the cluster the finding was judged for (`cluster_id`, which
    the log dir's meta.properties named) and list topics at all."""
    if finding.verdict != "orphan" or not cluster_id or fresh_cluster_id != cluster_id:
        return False
    if metadata_block(fresh_cluster_id, fresh_assignment) is not None:
        return False
    return judge(broker_id, finding.entry, fresh_assignment, True).verdict == "orphan"
