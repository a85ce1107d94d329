"""The core scenarios against each Kafka release users run (issue #50): a cluster of that
release (three KRaft nodes, tests/helpers/kafka_versions.py) started beside the stack, and
the session's operator acting on it through spec.cluster.

Which releases: KAFKA_RETENTION_KAFKA_VERSIONS, a comma-separated list or `all`; by
default the oldest and the newest supported releases that are not the stack's own (the
rest of the suite runs on that one). `make test-compat` runs every release and writes
the table of scenarios by release (docs/compatibility.md) from the outcomes
(tests/e2e/conftest.py)."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from devstack.kafka import KafkaCluster
from devstack.stack import Stack
from kafka_retention.core.facts import TopicPartition
from tests.conftest import topic_factory
from tests.helpers import kafka_versions
from tests.helpers.conditions import condition, with_reason
from tests.helpers.kafka import Kafka
from tests.helpers.kube import wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.orphans import HEX, reclaimed
from tests.helpers.policies import apply_policy, apply_policy_on, ran
from tests.helpers.purges import apply_purge, before, cuts, purge_finished, results
from tests.helpers.records import HOUR, hours_ago_on_the_hour, old_then_new, produce, utc
from tests.helpers.share_consumer import accept_below, read_from_earliest, wait_for_start_offset
from tests.helpers.streams_app import run_streams_app
from tests.helpers.topics import NO_RETENTION, compacted, create_on

pytestmark = [pytest.mark.stack]

MINUTE = 60_000


def _selected() -> list[str]:
    asked = os.environ.get("KAFKA_RETENTION_KAFKA_VERSIONS", "").strip()
    supported = list(kafka_versions.SUPPORTED)
    if asked == "all":
        return supported
    if asked:
        unknown = [v for v in asked.split(",") if v not in supported]
        assert not unknown, f"not supported: {unknown}; supported: {supported}"
        return asked.split(",")
    others = [v for v in supported if v != kafka_versions.DEFAULT]
    return sorted({others[0], others[-1]}, key=supported.index)


def release_of(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


# Share and streams groups at each release's defaults (its release notes; the feature
# levels `kafka-storage format` finalizes): share groups from 4.2 (4.1 has a preview,
# off), streams groups from 4.2. Written here, not read from the cluster, so a misread
# fails the scenarios below.
def has_share_groups(version: str) -> bool:
    return release_of(version) >= (4, 2)


@dataclass(frozen=True)
class Release:
    version: str
    cluster: KafkaCluster
    admin: AdminClient

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def spec_cluster(self) -> dict[str, Any]:
        return {"bootstrapServers": self.bootstrap}


@pytest.fixture(scope="module", params=_selected())
def release(request: pytest.FixtureRequest, stack: Stack) -> Iterator[Release]:
    with kafka_versions.running(request.param) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        # Metadata first, so the brokers' own connections replace the bootstrap ones
        # early (a request on one being replaced fails with _DESTROY_BROKER; the topic
        # factory sends it again).
        admin.list_topics(timeout=30)
        yield Release(request.param, cluster, admin)


@pytest.fixture
def on(release: Release, request: pytest.FixtureRequest) -> Kafka:
    """As the `kafka` fixture, on the release's cluster."""
    return Kafka(
        release.bootstrap, release.admin, topic_factory(release.admin, release.bootstrap, request)
    )


def test_a_purge_by_offset_cuts_exactly_and_names_the_release(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    topic = on.topic({0: 100, 1: 50})
    apply_purge(
        stack,
        e2e_ns,
        "offsets",
        cluster=release.spec_cluster,
        partitions=cuts(topic, {0: 30, 1: -1}),
    )
    obj = purge_finished(stack, e2e_ns, "offsets")
    assert obj["status"]["phase"] == "Succeeded", obj["status"]
    assert log_starts(on.admin, topic, 2) == [30, 50]
    major, minor = release_of(release.version)
    # The purge's first read of this cluster may start the operator's group reader (a
    # JVM): the purge does not wait for it, status.kafka follows once it answers.
    obj = wait_for(stack, "recordpurge", e2e_ns, "offsets", lambda o: "kafka" in o["status"])
    assert obj["status"]["kafka"]["version"] == f"{major}.{minor}"
    assert obj["status"]["kafka"]["metadataVersion"].startswith(f"{major}.{minor}-IV")


def test_a_purge_by_time_cuts_below_the_first_newer_record(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    # Ten records an hour apart, the newest an hour ago: a cut at 4h ago keeps 4 of them.
    stamps = [hours_ago_on_the_hour(10 - i) for i in range(10)]
    topic = on.topic({0: 10}, NO_RETENTION, timestamps={0: stamps})
    cut = hours_ago_on_the_hour(4)
    apply_purge(
        stack,
        e2e_ns,
        "by-time",
        cluster=release.spec_cluster,
        topics=before(topic, timestamp=utc(cut)),
    )
    obj = purge_finished(stack, e2e_ns, "by-time")
    assert obj["status"]["phase"] == "Succeeded", obj["status"]
    assert log_starts(on.admin, topic, 1) == [stamps.index(cut)]


def test_a_purge_by_consumed_groups_stops_at_a_protected_group(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    topic = on.topic({0: 100, 1: 100})
    done = on.group_at(topic, "done", {0: 90, 1: 80})
    audit = on.group_at(topic, "audit", {0: 40, 1: 95})
    apply_purge(
        stack,
        e2e_ns,
        "consumed",
        cluster=release.spec_cluster,
        topics=before(topic, committedBy=[done]),
        protectGroups=[audit],
    )
    obj = purge_finished(stack, e2e_ns, "consumed")
    assert obj["status"]["phase"] == "Succeeded", obj["status"]
    assert log_starts(on.admin, topic, 2) == [40, 80]
    assert audit in results(obj)[(topic, 0)]["note"]
    types = {g["name"]: g["type"] for g in obj["status"]["groups"]}
    assert types == {done: "classic", audit: "classic"}


def test_a_policy_deletes_what_its_groups_read_and_reports_a_watched_groups_loss(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    topic = on.topic({0: 100})
    done = on.group_at(topic, "done", {0: 60})
    slow = on.group_at(topic, "slow", {0: 20})
    apply_policy_on(
        stack,
        e2e_ns,
        "consumed",
        topic,
        cluster=release.spec_cluster,
        deleteConsumed={"groups": [done]},
        notify={"groups": [slow]},
    )
    obj = ran(stack, e2e_ns, "consumed")
    assert log_starts(on.admin, topic, 1) == [60]
    (lost,) = obj["status"]["losses"]
    assert (lost["group"], lost["fromOffset"], lost["toOffset"]) == (slow, 20, 60)
    assert condition(obj, "DataLoss")["status"] == "True"
    assert obj["status"]["kafka"]["version"] == ".".join(map(str, release_of(release.version)))


def test_a_policy_with_max_retention_cuts_records_past_their_age(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    # 10 records 3 hours old, then 10 new ones: a 2-hour limit cuts the first 10.
    stamps = old_then_new(10, 3 * HOUR)
    topic = on.topic({0: 20}, NO_RETENTION, timestamps={0: stamps})
    apply_policy_on(stack, e2e_ns, "age", topic, cluster=release.spec_cluster, maxRetention="2h")
    ran(stack, e2e_ns, "age")
    assert log_starts(on.admin, topic, 1) == [10]


def test_a_lagging_group_on_a_compacted_topic_is_named_and_spark_scans_it(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    stamps = old_then_new(10, 55 * MINUTE)
    topic = on.topic(
        {0: 20}, compacted(60 * MINUTE), timestamps={0: stamps}, key=lambda p, i: b"k%d" % i
    )
    slow = on.group_at(topic, "slow", {0: 2})
    fresh = on.group_at(topic, "fresh", {0: 15})
    apply_policy_on(
        stack,
        e2e_ns,
        "tomb",
        topic,
        cluster=release.spec_cluster,
        interval="1h",
        # The inventory is a record scan in the operator's Spark session: Spark's Kafka
        # source (its own kafka-clients) reads the release too.
        tombstones={"groups": [slow, fresh], "inventory": True},
    )
    obj = ran(stack, e2e_ns, "tomb")
    at_risk = condition(obj, "TombstonesAtRisk")
    assert at_risk["status"] == "True", at_risk
    assert f"group {slow}" in at_risk["message"]
    assert fresh not in at_risk["message"]
    (entry,) = obj["status"]["tombstoneInventory"]
    assert (entry["recordsScanned"], entry["tombstones"]) == (20, 0)


# Cordoned log directories (KIP-1066: `cordoned.log.dirs`, no new replicas placed there)
# exist from 4.3 (the string is in 4.3.1's and 4.4.0's server-common jar, not in 4.1.1's).
def has_cordoned_log_dirs(version: str) -> bool:
    return release_of(version) >= (4, 3)


def _cordon(admin: AdminClient, broker: int, dirs: str) -> None:
    resource = ConfigResource(
        ResourceType.BROKER,
        str(broker),
        incremental_configs=[
            ConfigEntry(
                "cordoned.log.dirs",
                dirs,
                incremental_operation=AlterConfigOpType.SET if dirs else AlterConfigOpType.DELETE,
            )
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def test_orphan_directories_go_from_cordoned_log_dirs_and_live_ones_stay(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka, planted: list[Path]
) -> None:
    logs = {b: release.cluster.node(b).log_dir for b in (1, 2, 3)}
    name = f"orphan-{e2e_ns[-6:]}-{secrets.token_hex(2)}"
    create_on(on.admin, name, [1])
    produce(on.bootstrap, name, {0: 50})
    copy = logs[2] / f"{name}-0"  # broker 2 does not host it
    stray = logs[3] / f"{name}-0.{HEX}-stray"
    for target in (copy, stray):
        shutil.copytree(logs[1] / f"{name}-0", target)
        planted.append(target)
    # Each broker's log dir says which node and cluster it belongs to (meta.properties,
    # whose format changed across these releases): the cleanup checks it before removing.
    for broker, log in logs.items():
        assert f"node.id={broker}" in (log / "meta.properties").read_text()
    cordoned = has_cordoned_log_dirs(release.version)
    if cordoned:
        # Brokers 1 (the live replica) and 2 (the orphan copy) stop taking new replicas
        # in their only log dir, as before a disk is drained.
        for broker in (1, 2):
            _cordon(release.admin, broker, str(logs[broker]))
    try:
        apply_policy(
            stack,
            e2e_ns,
            "orphans",
            cluster={**release.spec_cluster, "brokers": {"access": "local"}},
            orphanPartitions={"enabled": True, "removalDelay": "1s", "minAge": "1s"},
        )
        wait_for(stack, "retentionpolicy", e2e_ns, "orphans", reclaimed, timeout=90)
        wait_for(
            stack,
            "retentionpolicy",
            e2e_ns,
            "orphans",
            lambda o: not copy.exists() and not stray.exists(),
            timeout=60,
        )
        assert (logs[1] / f"{name}-0").is_dir()  # the live replica
        assert log_starts(on.admin, name, 1) == [0]
        if cordoned:
            resource = ConfigResource(ResourceType.BROKER, "2")
            found = release.admin.describe_configs([resource])[resource].result(timeout=30)
            assert found["cordoned.log.dirs"].value == str(logs[2])
    finally:
        if cordoned:
            for broker in (1, 2):
                _cordon(release.admin, broker, "")


def test_share_groups_protect_where_the_release_has_them_and_are_said_missing_where_not(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    topic = on.topic({0: 300}, NO_RETENTION)
    workers = f"{topic}-workers"
    if has_share_groups(release.version):
        read_from_earliest(release.bootstrap, workers, topic)
        accept_below(release.bootstrap, workers, topic, 100)
        wait_for_start_offset(release.bootstrap, workers, TopicPartition(topic, 0), 100)
    done = on.group_at(topic, "done", {0: 300})
    apply_policy_on(
        stack,
        e2e_ns,
        "share",
        topic,
        cluster=release.spec_cluster,
        deleteConsumed={"groups": [done, workers]},
    )
    if has_share_groups(release.version):
        obj = ran(stack, e2e_ns, "share")
        (start,) = log_starts(on.admin, topic, 1)
        assert 100 <= start < 300
        groups = {g["name"]: g["type"] for g in obj["status"]["groups"]}
        assert groups[workers] == "share"
        assert "share" in obj["status"]["kafka"]["groupTypes"]
        return
    obj = wait_for(
        stack,
        "retentionpolicy",
        e2e_ns,
        "share",
        with_reason("GroupTypeUnsupported", "GroupsReadable"),
        timeout=90,
    )
    message = condition(obj, "GroupsReadable")["message"]
    assert workers in message, message
    assert "no share groups" in message, message
    assert done not in message, message
    assert condition(obj, "Ready")["reason"] == "RunSucceeded"
    # Read as a group that has not started: it keeps every record.
    assert log_starts(on.admin, topic, 1) == [0]
    assert {g["name"]: g["type"] for g in obj["status"]["groups"]}[workers] == "none"


def test_a_topic_with_an_empty_cleanup_policy_is_purged_from_4_2_and_refused_before(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    # KIP-1161: an empty cleanup.policy is infinite retention; 4.2's brokers take
    # DeleteRecords there, earlier ones answer POLICY_VIOLATION.
    topic = on.topic({0: 100}, {"cleanup.policy": ""})
    apply_purge(
        stack, e2e_ns, "empty", cluster=release.spec_cluster, partitions=cuts(topic, {0: 40})
    )
    obj = purge_finished(stack, e2e_ns, "empty")
    (entry,) = obj["status"]["results"]
    if release_of(release.version) >= (4, 2):
        assert obj["status"]["phase"] == "Succeeded", obj["status"]
        assert log_starts(on.admin, topic, 1) == [40]
        return
    assert "empty cleanup.policy" in entry["error"], entry
    assert log_starts(on.admin, topic, 1) == [0]


def has_streams_groups(version: str) -> bool:
    return release_of(version) >= (4, 2)


def test_a_streams_group_holds_a_cut_at_its_commit_where_the_release_has_them(
    stack: Stack, e2e_ns: str, release: Release, on: Kafka
) -> None:
    if not has_streams_groups(release.version):
        pytest.skip(f"Kafka {release.version} has no streams groups (KIP-1071: 4.2)")
    topic = on.make_topic(partitions=1, config=NO_RETENTION)
    output = on.make_topic(partitions=1, config=NO_RETENTION)
    produce(on.bootstrap, topic, {0: 1000})
    app = f"{topic}-app"
    run_streams_app(on.bootstrap, app, topic, output, records=300)
    done = on.group_at(topic, "done", {0: 1000})
    apply_policy_on(
        stack,
        e2e_ns,
        "streams",
        topic,
        cluster=release.spec_cluster,
        deleteConsumed={"groups": [done, app]},
    )
    obj = ran(stack, e2e_ns, "streams")
    (start,) = log_starts(on.admin, topic, 1)
    assert 300 <= start < 1000
    groups = {g["name"]: g for g in obj["status"]["groups"]}
    assert groups[app]["type"] == "streams"
    assert "streams" in obj["status"]["kafka"]["groupTypes"]
