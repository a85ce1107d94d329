"""What a Kafka cluster runs, as its finalized features say (DescribeFeatures, KIP-584),
and what that means for the group types a retention rule may name.

Kafka reports no software version over its protocol. What it does report is the
finalized `metadata.version` (a KRaft cluster's feature level, which names a release and
its internal version, such as 3.9-IV0) and each feature that turns a group protocol on:
`group.version` (KIP-848 consumer groups), `share.version` (KIP-932 share groups),
`streams.version` (KIP-1071 streams groups). A cluster upgraded in place runs its new
software at its old metadata.version until an operator finalizes the new one; what this
module calls the cluster's release is the one its metadata.version names, which is what
decides the features it has.

Pure: the adapter reads the levels (the group reader's `features` request), this names
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_retention.core.facts import GroupType

# metadata.version feature levels and their names (org.apache.kafka.server.common.
# MetadataVersion), from 3.3 (the first production KRaft release) to the newest release
# the operator is tested against (printed from each release's own server-common jar:
# 3.9.2 formats at 21, 4.0.1 at 25, 4.1.1 at 27, 4.3.1 at 30, 4.4.0 at 33). A level
# above the table is named by its number.
METADATA_VERSIONS: Mapping[int, str] = {
    4: "3.3-IV0",
    5: "3.3-IV1",
    6: "3.3-IV2",
    7: "3.3-IV3",
    8: "3.4-IV0",
    9: "3.5-IV0",
    10: "3.5-IV1",
    11: "3.5-IV2",
    12: "3.6-IV0",
    13: "3.6-IV1",
    14: "3.6-IV2",
    15: "3.7-IV0",
    16: "3.7-IV1",
    17: "3.7-IV2",
    18: "3.7-IV3",
    19: "3.7-IV4",
    20: "3.8-IV0",
    21: "3.9-IV0",
    22: "4.0-IV0",
    23: "4.0-IV1",
    24: "4.0-IV2",
    25: "4.0-IV3",
    26: "4.1-IV0",
    27: "4.1-IV1",
    28: "4.2-IV0",
    29: "4.2-IV1",
    30: "4.3-IV0",
    31: "4.4-IV0",
    32: "4.4-IV1",
    33: "4.4-IV2",
}

# The first metadata.version of 4.2, whose brokers take DeleteRecords on a topic with an
# empty cleanup.policy (KIP-1161; kafka.cluster.Partition's check in 4.2.0 and later).
EMPTY_CLEANUP_POLICY_DELETES = 28

# The feature each group type needs at level 1 or above. Classic groups need none: every
# release has them. At `kafka-storage format`'s defaults (each release's Feature enum):
# 3.9 has none of the three; 4.0 group.version 1; 4.1 also knows share.version but
# finalizes 0 (a preview) and streams.version only in testing; 4.2 and later finalize
# all three (4.4: share.version 2).
TYPE_FEATURES: Mapping[GroupType, str] = {
    GroupType.CONSUMER: "group.version",
    GroupType.SHARE: "share.version",
    GroupType.STREAMS: "streams.version",
}


@dataclass(frozen=True)
class ClusterFeatures:
    """The finalized feature levels of a cluster, and the highest level of each that the
    broker which answered supports (its software's reach, finalized or not)."""

    finalized: Mapping[str, int] = field(default_factory=dict)
    supported: Mapping[str, int] = field(default_factory=dict)

    @property
    def metadata_level(self) -> int | None:
        return self.finalized.get("metadata.version")

    @property
    def metadata_version(self) -> str | None:
        """The finalized metadata.version's name ("3.9-IV0"), or "level N" when the
        table does not know it; None on a cluster that reports none (ZooKeeper mode)."""
        level = self.metadata_level
        if level is None:
            return None
        return METADATA_VERSIONS.get(level, f"level {level}")

    @property
    def release(self) -> str | None:
        """The Kafka release the metadata.version names ("3.9"); for a level newer than
        the table, "newer than" the newest it knows."""
        level = self.metadata_level
        if level is None:
            return None
        name = METADATA_VERSIONS.get(level)
        if name is not None:
            return name.split("-", 1)[0]
        newest = max(METADATA_VERSIONS)
        if level > newest:
            return f">{METADATA_VERSIONS[newest].split('-', 1)[0]}"
        return None

    def has(self, group_type: GroupType) -> bool:
        """Whether a group of this type can exist on the cluster: its feature is finalized
        at level 1 or more (classic groups: always)."""
        feature = TYPE_FEATURES.get(group_type)
        return feature is None or self.finalized.get(feature, 0) >= 1

    def group_types(self) -> list[GroupType]:
        """The group types the cluster can have, in a fixed order."""
        kinds = (GroupType.CONSUMER, GroupType.CLASSIC, GroupType.SHARE, GroupType.STREAMS)
        return [t for t in kinds if self.has(t)]

    def missing_types(self) -> list[GroupType]:
        """Share and streams groups when the cluster cannot have them: a group id the
        cluster does not know may be one of these, written for another cluster."""
        return [t for t in (GroupType.SHARE, GroupType.STREAMS) if not self.has(t)]

    def why_missing(self, group_type: GroupType) -> str:
        """Why the cluster has no groups of this type, in words: the feature is off on a
        release that supports it, or the release predates it."""
        feature = TYPE_FEATURES[group_type]
        level = self.finalized.get(feature, 0)
        if self.supported.get(feature, 0) >= 1:
            return f"{feature} is {level}: supported by the brokers but not enabled"
        return f"{feature} is {level}: the brokers' release has no {group_type} groups"

    def deletes_with_empty_cleanup_policy(self) -> bool:
        """Whether DeleteRecords works on a topic whose cleanup.policy is empty (KIP-1161:
        infinite retention). Brokers of 4.2 and later refuse it only on compact-only
        topics; earlier ones on every topic without `delete`. The broker's software
        decides, which Kafka does not report: a metadata.version of 4.2 or later proves
        it, and a lower one (an upgrade not finalized) is read as the older rule."""
        level = self.metadata_level
        return level is not None and level >= EMPTY_CLEANUP_POLICY_DELETES

    def describe(self) -> str:
        """ "Kafka 3.9 (metadata.version 3.9-IV0)", as status and messages say it."""
        version = self.metadata_version
        if version is None:
            return "Kafka of unknown version (no metadata.version finalized)"
        release = self.release
        return f"Kafka {release} (metadata.version {version})" if release else f"Kafka ({version})"

    def status(self) -> dict[str, object]:
        """status.kafka of a RetentionPolicy or RecordPurge."""
        return {
            "version": self.release,
            "metadataVersion": self.metadata_version,
            "groupTypes": [str(t) for t in self.group_types()],
        }


@dataclass(frozen=True)
class UnknownGroups:
    """Named groups no group of that id answers for, on a cluster that cannot have some
    group types: each could be a share or streams group written for another cluster,
    which this cluster cannot hold. They are read as before (a group that never
    committed: it protects every record where it guards, and has no position to watch
    where it is watched); this says why that may not be what was meant."""

    groups: tuple[str, ...]
    features: ClusterFeatures

    def _lacks(self) -> str:
        missing = self.features.missing_types()
        kinds = " or ".join(f"{t} groups" for t in missing)
        reasons = "; ".join(self.features.why_missing(t) for t in missing)
        return f"has no {kinds} ({reasons})"

    def note(self) -> str:
        """What one of the groups' entry in a status says."""
        return (
            f"no group of that id, on a cluster ({self.features.describe()}) that "
            f"{self._lacks()}: read as a group that has not started"
        )

    def message(self) -> str:
        names = ", ".join(self.groups[:10]) + (
            f" and {len(self.groups) - 10} more" if len(self.groups) > 10 else ""
        )
        return (
            f"group(s) {names}: no group of that id on this cluster, which runs "
            f"{self.features.describe()} and {self._lacks()}; a group of such a "
            f"type cannot exist here. Each is read as a group that has not started: where "
            f"it guards (deleteConsumed, committedBy, protectGroups) it keeps every record, "
            f"where it is watched (notify, tombstones) nothing can be reported for it"
        )


def unknown_groups(
    types: Mapping[str, GroupType | str], features: ClusterFeatures | None
) -> UnknownGroups | None:
    """The named groups no group answers for, when the cluster lacks a group type they
    might be; None when every group exists, the cluster has every type, or what it runs
    could not be read."""
    if features is None or not features.missing_types():
        return None
    absent = tuple(sorted(g for g, t in types.items() if str(t) == GroupType.NONE))
    if not absent:
        return None
    return UnknownGroups(absent, features)
