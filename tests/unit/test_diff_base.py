"""Kopf's diff base: a RecordErasure's keys and a RecordPurge's partitions never copied
into the annotation, only counted and digested."""

from __future__ import annotations

import hashlib
import json

import kopf

from kafka_retention.handlers.settings import DiffBase

STORAGE = DiffBase(prefix="kafka-retention.io", key="last-handled-configuration")


def erasure(keys: list[dict[str, str]]) -> kopf.Body:
    return kopf.Body(
        {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RecordErasure",
            "metadata": {"name": "forget", "namespace": "team-a"},
            "spec": {
                "cluster": {"clusterRef": "prod"},
                "topics": {"names": ["users"]},
                "keys": keys,
            },
        }
    )


def test_ten_thousand_digests_fit_the_annotation_limit_many_times_over() -> None:
    keys = [{"sha256": hashlib.sha256(str(i).encode()).hexdigest()} for i in range(10_000)]
    essence = STORAGE.build(body=erasure(keys))
    stored = json.dumps(essence, separators=(",", ":"))
    # The keys themselves would be about 790 KB; the API server takes 256 KiB of
    # annotations in all.
    assert len(json.dumps(keys)) > 262_144
    assert len(stored) < 1_000
    assert essence["spec"]["keys"]["count"] == 10_000


def test_a_plain_key_is_not_copied_into_the_diff_base() -> None:
    essence = STORAGE.build(body=erasure([{"string": "alice@example.com"}]))
    assert "alice@example.com" not in json.dumps(essence)
    assert essence["spec"]["topics"] == {"names": ["users"]}


def test_other_keys_tell_a_different_spec() -> None:
    one = STORAGE.build(body=erasure([{"sha256": "a" * 64}]))
    other = STORAGE.build(body=erasure([{"sha256": "b" * 64}]))
    assert one != other


def purge(partitions: list[dict[str, object]]) -> kopf.Body:
    return kopf.Body(
        {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RecordPurge",
            "metadata": {"name": "cut", "namespace": "team-a"},
            "spec": {"cluster": {"clusterRef": "prod"}, "partitions": partitions},
        }
    )


def test_ten_thousand_purge_partitions_fit_the_annotation_limit() -> None:
    cuts: list[dict[str, object]] = [
        {"topic": f"orders-{i // 200:03d}", "partition": i % 200, "offset": -1}
        for i in range(10_000)
    ]
    essence = STORAGE.build(body=purge(cuts))
    assert len(json.dumps(cuts)) > 262_144
    assert len(json.dumps(essence, separators=(",", ":"))) < 1_000
    assert essence["spec"]["partitions"]["count"] == 10_000
    assert essence["spec"]["cluster"] == {"clusterRef": "prod"}


def test_another_offset_tells_a_different_purge() -> None:
    one = STORAGE.build(body=purge([{"topic": "t", "partition": 0, "offset": 1}]))
    other = STORAGE.build(body=purge([{"topic": "t", "partition": 0, "offset": 2}]))
    assert one["spec"]["partitions"]["count"] == other["spec"]["partitions"]["count"] == 1
    assert one != other


def test_other_kinds_keep_their_whole_spec() -> None:
    body = kopf.Body(
        {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RetentionPolicy",
            "metadata": {"name": "p", "namespace": "team-a"},
            "spec": {
                "keys": [{"sha256": "a" * 64}],
                "partitions": [{"topic": "t"}],
                "interval": "5m",
            },
        }
    )
    assert STORAGE.build(body=body)["spec"] == {
        "keys": [{"sha256": "a" * 64}],
        "partitions": [{"topic": "t"}],
        "interval": "5m",
    }
