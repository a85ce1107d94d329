"""What a cluster runs (its finalized features) and what follows: a named group that is no
group at all, on a cluster that cannot have share or streams groups, is said
(GroupsReadable on a policy, a note on a purge's group) and read as before; a topic with an
empty cleanup.policy takes DeleteRecords from 4.2."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar, TypeVar

import pytest

from kafka_retention.adapters.group_reader import GroupReaderError, parse_features
from kafka_retention.core.cluster_features import ClusterFeatures, unknown_groups
from kafka_retention.core.facts import GroupType, TopicPartition
from kafka_retention.core.topics import delete_refusal
from kafka_retention.services.fresh import unsupported_groups
from kafka_retention.services.purge import facts as purge_facts
from tests.helpers.policy_runs import T0, FakeKafka, Store, ready, run_one
from tests.unit.test_purge_service import FakeKafka as PurgeKafka
from tests.unit.test_purge_service import Store as PurgeStore
from tests.unit.test_purge_service import explicit
from tests.unit.test_purge_service import run as run_purge

T = TypeVar("T")

# As the brokers of each release answer DescribeFeatures at their defaults.
KAFKA_3_9 = ClusterFeatures({"metadata.version": 21, "kraft.version": 0}, {"metadata.version": 21})
# 4.1 knows share groups (a preview) but has them off unless enabled.
KAFKA_4_1 = ClusterFeatures(
    {"metadata.version": 27, "group.version": 1},
    {"metadata.version": 27, "group.version": 1, "share.version": 1},
)
EVERY_TYPE = ClusterFeatures(
    {"metadata.version": 27, "group.version": 1, "share.version": 1, "streams.version": 1}
)


def test_the_release_is_the_one_metadata_version_names() -> None:
    assert KAFKA_3_9.metadata_version == "3.9-IV0"
    assert KAFKA_3_9.release == "3.9"
    assert KAFKA_3_9.describe() == "Kafka 3.9 (metadata.version 3.9-IV0)"
    assert KAFKA_3_9.status() == {
        "version": "3.9",
        "metadataVersion": "3.9-IV0",
        "groupTypes": ["classic"],
    }


def test_a_level_newer_than_the_table_is_named_by_its_number() -> None:
    newer = ClusterFeatures({"metadata.version": 999})
    assert newer.metadata_version == "level 999"
    assert newer.release is not None
    assert newer.release.startswith(">")
    assert "level 999" in newer.describe()


def test_no_metadata_version_says_unknown() -> None:
    features = ClusterFeatures({})
    assert features.release is None
    assert "unknown version" in features.describe()


def test_each_group_type_needs_its_feature_at_level_one() -> None:
    assert KAFKA_3_9.group_types() == [GroupType.CLASSIC]
    assert KAFKA_4_1.group_types() == [GroupType.CONSUMER, GroupType.CLASSIC]
    assert KAFKA_4_1.missing_types() == [GroupType.SHARE, GroupType.STREAMS]
    assert EVERY_TYPE.missing_types() == []


def test_why_a_type_is_missing_tells_off_from_absent() -> None:
    assert "not enabled" in KAFKA_4_1.why_missing(GroupType.SHARE)
    assert "has no streams groups" in KAFKA_4_1.why_missing(GroupType.STREAMS)
    assert "has no share groups" in KAFKA_3_9.why_missing(GroupType.SHARE)


def test_unknown_groups_only_where_the_cluster_lacks_a_type() -> None:
    types = {"orders": GroupType.CLASSIC, "orders-share": GroupType.NONE}
    assert unknown_groups(types, None) is None  # unreadable: read as before
    assert unknown_groups(types, EVERY_TYPE) is None
    assert unknown_groups({"orders": GroupType.CLASSIC}, KAFKA_3_9) is None
    found = unknown_groups(types, KAFKA_3_9)
    assert found is not None
    assert found.groups == ("orders-share",)
    message = found.message()
    assert message.startswith("group(s) orders-share: no group of that id")
    assert "Kafka 3.9 (metadata.version 3.9-IV0)" in message
    assert "no share groups or streams groups" in message
    assert "orders," not in message  # a group that exists is not named
    assert "Kafka 3.9" in found.note()


def test_the_readers_feature_lines_are_parsed() -> None:
    lines = ["finalized\tmetadata.version\t21", "supported\tshare.version\t1", "answer\t3"]
    with pytest.raises(GroupReaderError, match="unexpected answer line"):
        parse_features(lines)
    features = parse_features(lines[:2])
    assert features.finalized == {"metadata.version": 21}
    assert features.supported == {"share.version": 1}
    with pytest.raises(GroupReaderError, match="level"):
        parse_features(["finalized\tmetadata.version\tlevel"])
    with pytest.raises(GroupReaderError) as refused:
        parse_features(["error\tfatal\tUnsupportedVersionException: no"])
    assert not refused.value.retriable


def test_features_are_read_only_when_a_group_is_absent() -> None:
    kafka = FakeKafka()
    kafka.features = KAFKA_3_9
    assert unsupported_groups(kafka, {"a": GroupType.CLASSIC}) is None
    assert "cluster_features" not in kafka.calls
    found = unsupported_groups(kafka, {"a": GroupType.CLASSIC, "b": "none"})
    assert found is not None
    assert found.groups == ("b",)
    assert kafka.calls == ["cluster_features"]


def _groups_readable(store: Store) -> dict[str, object] | None:
    found = [c for c in store.status["conditions"] if c["type"] == "GroupsReadable"]
    return found[0] if found else None


def test_a_policy_naming_an_absent_group_on_3_9_says_so_and_reads_it_as_not_started() -> None:
    kafka = FakeKafka()
    kafka.features = KAFKA_3_9
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 60}}
    kafka.group_types = {"a": GroupType.CLASSIC}
    store = Store()
    run_one(kafka, store, deleteConsumed={"groups": ["a", "orders-share"]})
    # The absent group keeps every record, as a group that has not started does.
    assert kafka.deletes == []
    assert kafka.logs[T0] == [0, 100]
    assert ready(store)["reason"] == "RunSucceeded"
    condition = _groups_readable(store)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "GroupTypeUnsupported")
    assert "orders-share" in str(condition["message"])
    assert "no share groups" in str(condition["message"])
    assert "a," not in str(condition["message"])
    # Once the group exists (here: a classic group that committed), the condition clears.
    kafka.commits["orders-share"] = {T0: 50}
    kafka.group_types["orders-share"] = GroupType.CLASSIC
    run_one(kafka, store, deleteConsumed={"groups": ["a", "orders-share"]})
    assert kafka.logs[T0][0] == 50
    condition = _groups_readable(store)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "GroupsRead")


def test_max_retention_still_cuts_beside_an_absent_watched_group_on_3_9() -> None:
    kafka = FakeKafka()
    kafka.features = KAFKA_3_9
    kafka.logs[T0] = [0, 100]
    kafka.first_times[T0] = 0  # every record is older than the hour
    store = Store()
    run_one(kafka, store, maxRetention="1h", notify={"groups": ["orders-share"]})
    assert kafka.logs[T0][0] == 100  # the hard cap is not held back by what is unknown
    condition = _groups_readable(store)
    assert condition is not None
    assert condition["reason"] == "GroupTypeUnsupported"


def test_an_absent_group_is_read_as_before_where_the_cluster_has_every_type() -> None:
    for features in (EVERY_TYPE, None):  # None: what it runs could not be read
        kafka = FakeKafka()
        kafka.features = features
        kafka.logs[T0] = [0, 100]
        kafka.commits = {"a": {T0: 60}}
        store = Store()
        run_one(kafka, store, deleteConsumed={"groups": ["a", "not-started"]})
        assert kafka.logs[T0] == [0, 100]
        assert ready(store)["reason"] == "RunSucceeded"
        assert _groups_readable(store) is None


def test_status_says_what_the_cluster_runs() -> None:
    kafka = FakeKafka()
    kafka.features = EVERY_TYPE
    kafka.logs[T0] = [0, 100]
    kafka.commits = {"a": {T0: 60}}
    store = Store()
    run_one(kafka, store, deleteConsumed={"groups": ["a"]})
    assert kafka.logs[T0][0] == 60
    assert store.status["kafka"] == {
        "version": "4.1",
        "metadataVersion": "4.1-IV1",
        "groupTypes": ["consumer", "classic", "share", "streams"],
    }


def test_a_purge_protecting_an_absent_group_on_3_9_notes_it_and_deletes_nothing() -> None:
    t0 = TopicPartition("t", 0)
    kafka = PurgeKafka({t0: [0, 100]})
    kafka.features = KAFKA_3_9
    store = PurgeStore()
    run_purge(explicit((0, -1), protectGroups=["orders-share"]), kafka, store)
    assert kafka.logs[t0] == [0, 100]
    (group,) = store.status["groups"]
    assert (group["name"], group["type"]) == ("orders-share", "none")
    assert "Kafka 3.9" in group["note"]
    assert store.status["kafka"]["metadataVersion"] == "3.9-IV0"


def test_a_purge_on_a_cluster_with_every_type_has_no_note() -> None:
    t0 = TopicPartition("t", 0)
    kafka = PurgeKafka({t0: [0, 100]})
    kafka.features = EVERY_TYPE
    store = PurgeStore()
    run_purge(explicit((0, -1), protectGroups=["not-started"]), kafka, store)
    assert store.status["groups"] == [{"name": "not-started", "type": "none"}]


# KIP-1161: an empty cleanup.policy means infinite retention; brokers of 4.2 and later
# take DeleteRecords there, earlier ones answer POLICY_VIOLATION.
EMPTY_POLICY = {"cleanup.policy": ""}
KAFKA_4_2 = ClusterFeatures({"metadata.version": 28})


def test_an_empty_cleanup_policy_takes_deletes_from_4_2_only() -> None:
    assert not KAFKA_3_9.deletes_with_empty_cleanup_policy()
    assert not KAFKA_4_1.deletes_with_empty_cleanup_policy()
    assert KAFKA_4_2.deletes_with_empty_cleanup_policy()
    assert not ClusterFeatures({}).deletes_with_empty_cleanup_policy()
    assert delete_refusal("t", EMPTY_POLICY, empty_allowed=True) is None
    refusal = delete_refusal("t", EMPTY_POLICY)
    assert refusal is not None
    assert "empty cleanup.policy" in refusal
    assert "4.2" in refusal
    # A compact-only topic is refused on every release.
    assert delete_refusal("t", {"cleanup.policy": "compact"}, empty_allowed=True) is not None


def test_a_purge_of_an_empty_policy_topic_runs_on_4_2_and_is_refused_before() -> None:
    t0 = TopicPartition("t", 0)
    for features, expected in ((KAFKA_4_2, [40, 100]), (KAFKA_3_9, [0, 100])):
        kafka = PurgeKafka({t0: [0, 100]})
        kafka.configs = {"t": EMPTY_POLICY}
        kafka.features = features
        store = PurgeStore()
        run_purge(explicit((0, 40)), kafka, store)
        assert kafka.logs[t0] == expected, features
    (entry,) = store.status["results"]
    assert "empty cleanup.policy" in entry["error"]


def test_a_policy_selects_an_empty_policy_topic_on_4_2_only() -> None:
    for features, start in ((KAFKA_4_2, 60), (KAFKA_3_9, 0)):
        kafka = FakeKafka()
        kafka.features = features
        kafka.logs[T0] = [0, 100]
        kafka.configs = {"t": EMPTY_POLICY}
        kafka.commits = {"a": {T0: 60}}
        kafka.group_types = {"a": GroupType.CLASSIC}
        run_one(kafka, Store(), deleteConsumed={"groups": ["a"]})
        assert kafka.logs[T0][0] == start, features


def test_the_cli_reads_what_the_cluster_runs_only_when_a_decision_needs_it() -> None:
    t0 = TopicPartition("t", 0)
    kafka = PurgeKafka({t0: [0, 100]})
    kafka.features = KAFKA_3_9
    run_purge(explicit((0, 40)), kafka, PurgeStore(), describe_cluster=False)
    assert kafka.logs[t0][0] == 40
    assert "cluster_features" not in kafka.calls
    # An absent group is a decision that needs it: read, and noted.
    store = PurgeStore()
    run_purge(explicit((0, -1), protectGroups=["ghost"]), kafka, store, describe_cluster=False)
    assert kafka.calls.count("cluster_features") == 1
    assert "Kafka 3.9" in store.status["groups"][0]["note"]


def test_a_connection_cache_key_tells_credentials_apart_and_holds_none() -> None:
    from kafka_retention.adapters.kafka_calls import connection_key

    alice = connection_key("k:9092", {"sasl.username": "alice", "sasl.password": "s3cret"})
    bob = connection_key("k:9092", {"sasl.username": "bob", "sasl.password": "s3cret"})
    assert alice != bob
    assert alice == connection_key("k:9092", {"sasl.password": "s3cret", "sasl.username": "alice"})
    assert "s3cret" not in alice
    assert "alice" not in alice


class Recorded(ThreadPoolExecutor):
    """The planner's thread pools, keeping every task they were given: a test waits for
    the features read itself, not for a time it should take."""

    tasks: ClassVar[list[Future[Any]]] = []

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        task = super().submit(fn, *args, **kwargs)
        Recorded.tasks.append(task)
        return task


class GatedFeatures(PurgeKafka):
    """A cluster whose features answer once `answer` is set: by the test, or (with
    `at_delete`) when DeleteRecords is sent, after the plan stopped waiting for them; the
    delete then waits until the planner's reads (Recorded) have answered."""

    def __init__(self, logs: dict[TopicPartition, list[int]], at_delete: bool = False) -> None:
        super().__init__(logs)
        self.answer = threading.Event()
        self.at_delete = at_delete

    def cluster_features(self) -> ClusterFeatures | None:
        assert self.answer.wait(10)
        return super().cluster_features()

    def delete_records(self, *args: Any, **kwargs: Any) -> Any:
        if self.at_delete:
            self.answer.set()
            _, pending = futures.wait(Recorded.tasks, timeout=30)
            assert not pending
        return super().delete_records(*args, **kwargs)


def test_what_the_cluster_runs_is_reported_when_it_answers_after_the_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(purge_facts, "FEATURES_WAIT_S", 0.05)
    monkeypatch.setattr(purge_facts, "ThreadPoolExecutor", Recorded)
    monkeypatch.setattr(Recorded, "tasks", [])
    t0 = TopicPartition("t", 0)
    kafka = GatedFeatures({t0: [0, 100]}, at_delete=True)
    kafka.features = EVERY_TYPE
    writes: list[dict[str, Any]] = []
    store = PurgeStore()

    def noted(status: Mapping[str, Any]) -> None:  # and stored: no refusal
        writes.append(dict(status))

    store.patch_refusal = noted
    run_purge(explicit((0, 40)), kafka, store)
    assert kafka.logs[t0][0] == 40
    # Not waited for: the plan is stored and run without it, the end reports it.
    assert [("kafka" in w, w.get("phase")) for w in writes if "phase" in w] == [
        (False, "Purging"),
        (True, "Succeeded"),
    ]
    assert store.status["kafka"]["version"] == "4.1"


def test_what_the_cluster_runs_is_written_alone_when_it_answers_after_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(purge_facts, "FEATURES_WAIT_S", 0.05)
    t0 = TopicPartition("t", 0)
    kafka = GatedFeatures({t0: [0, 100]})
    kafka.features = EVERY_TYPE
    store = PurgeStore()
    outcome = run_purge(explicit((0, 40)), kafka, store)
    assert outcome.phase == "Succeeded"
    assert "kafka" not in store.status  # the end did not wait for it
    kafka.answer.set()
    deadline = time.monotonic() + 30
    while "kafka" not in store.status and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.status["kafka"]["version"] == "4.1"
    assert store.status["phase"] == "Succeeded"  # written alone, nothing else changed
