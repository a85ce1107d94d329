"""The ledger of finished RecordPurges that names a purge as the cause of a loss: only
what a purge really deleted counts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.purge_ledger import (
    OTHER_NAMESPACE_PURGE,
    PurgeLedger,
    purge_done,
    seen_from,
)

T0 = TopicPartition("t", 0)


def body(*results: dict[str, Any], cluster: str = "k:9092") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ops", "name": "trim"},
        "spec": {"cluster": {"bootstrapServers": cluster}},
        "status": {"completedAt": "2026-11-22T12:00:00Z", "results": list(results)},
    }


def test_a_dry_run_or_failed_purge_is_not_a_cause() -> None:
    assert purge_done(body({"topic": "t", "partition": 0, "state": "DryRun"})) is None
    failed = {"topic": "t", "partition": 0, "state": "Failed", "error": "OFFSET_OUT_OF_RANGE"}
    assert purge_done(body(failed)) is None
    assert purge_done({"metadata": {}, "spec": {}}) is None


def test_only_the_purged_partitions_and_their_log_starts_are_kept() -> None:
    done = purge_done(
        body(
            {"topic": "t", "partition": 0, "state": "Purged", "lowWatermark": 30},
            {"topic": "t", "partition": 1, "state": "Failed"},
            {"topic": "u", "partition": -1, "state": "Purged", "note": "summary of 2000"},
        )
    )
    assert done is not None
    assert (done.key, done.cluster.bootstrap_servers) == ("ops/trim", "k:9092")
    assert dict(done.low_watermarks) == {T0: 30}
    assert done.folded_topics == frozenset({"u"})
    assert done.completed_ms == 1_795_348_800_000


def test_a_deleted_purge_is_no_longer_named() -> None:
    ledger = PurgeLedger()
    ledger.put(
        "ops/trim",
        purge_done(body({"topic": "t", "partition": 0, "state": "Purged", "lowWatermark": 30})),
    )
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, None) == "ops/trim"
    # The log start it left must lie in (start, end]: a range it did not reach is not its.
    assert ledger.on_cluster("k:9092").cause(T0, 30, 50, None) is None
    assert ledger.on_cluster("other:9092").cause(T0, 10, 30, None) is None
    ledger.remove("ops/trim")
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, None) is None


def test_a_purge_is_named_on_a_policy_that_names_its_cluster_another_way() -> None:
    ledger = PurgeLedger()
    ledger.put(
        "ops/trim",
        purge_done(body({"topic": "t", "partition": 0, "state": "Purged", "lowWatermark": 30})),
    )
    # The purge says k:9092; the policy says the same brokers as k:9092,j:9092.
    ids = {"k:9092": "id-1", "k:9092,j:9092": "id-1", "x:9092": "id-2"}
    ledger.resolve_with(lambda ns, ref: ids.get(ref.identity(ns)))
    assert ledger.on_cluster("id-1").cause(T0, 10, 30, None) == "ops/trim"
    assert ledger.on_cluster("id-2").cause(T0, 10, 30, None) is None
    assert ledger.on_cluster(None).cause(T0, 10, 30, None) is None  # unknown: no false cause


def test_a_purge_of_another_namespace_is_named_without_its_namespace_or_name() -> None:
    ledger = PurgeLedger()
    ledger.put(
        "ops/trim",
        purge_done(body({"topic": "t", "partition": 0, "state": "Purged", "lowWatermark": 30})),
    )
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, None, "ops") == "ops/trim"
    other = ledger.on_cluster("k:9092").cause(T0, 10, 30, None, "team")
    assert other == OTHER_NAMESPACE_PURGE
    assert "ops" not in other
    assert "trim" not in other
    # A namespace whose name starts like the purge's is another one.
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, None, "op") == OTHER_NAMESPACE_PURGE
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, None, "ops-2") == OTHER_NAMESPACE_PURGE
    # A caller that does not say whose status it writes gets the key (before tenancy).
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, None) == "ops/trim"
    assert seen_from("ops", "ops/trim") == "ops/trim"


def test_a_folded_purge_of_another_namespace_is_not_named_either() -> None:
    ledger = PurgeLedger()
    ledger.put(
        "ops/trim",
        purge_done(body({"topic": "t", "partition": -1, "state": "Purged", "note": "summary"})),
    )
    since = 1_795_348_000_000  # before the purge completed
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, since, "team") == OTHER_NAMESPACE_PURGE
    assert ledger.on_cluster("k:9092").cause(T0, 10, 30, since, "ops") == "ops/trim"


def test_each_namespace_and_cluster_reference_is_resolved_once_per_lookup() -> None:
    """Resolving may read a KafkaClusterBinding: a thousand purges of two namespaces on
    one binding cost two resolutions, and the losses asked about after them none."""
    ledger = PurgeLedger()
    for i in range(1000):
        done = purge_done(
            body({"topic": "t", "partition": 0, "state": "Purged", "lowWatermark": i + 1})
        )
        assert done is not None
        ledger.put(f"ns{i % 2}/trim-{i:04d}", replace(done, key=f"ns{i % 2}/trim-{i:04d}"))
    resolved: list[str] = []

    def cluster_of(namespace: str, ref: Any) -> str:
        resolved.append(namespace)
        return "id-1"

    ledger.resolve_with(cluster_of)
    purges = ledger.on_cluster("id-1")
    assert sorted(resolved) == ["ns0", "ns1"]
    assert purges.cause(T0, 10, 11, None) == "ns0/trim-0010"
    assert purges.cause(T0, 501, 502, None) == "ns1/trim-0501"
    assert sorted(resolved) == ["ns0", "ns1"]
    assert ledger.on_cluster(None).cause(T0, 10, 11, None) is None
