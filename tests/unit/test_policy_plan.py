"""`kubectl kafka-retention plan` on a RetentionPolicy: the copy the operator runs, the
wait for its run, and the per-topic answer (the stack test runs it through kubectl)."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pytest

from kafka_retention.cli.plugin import dry_copy, policy_plan
from kafka_retention.cli.plugin.kube import PluginError
from kafka_retention.cli.plugin.progress import Progress

POLICY: dict[str, Any] = {
    "apiVersion": "kafka-retention.io/v1alpha1",
    "kind": "RetentionPolicy",
    "metadata": {"name": "orders", "namespace": "team-orders", "uid": "u-1"},
    "spec": {
        "cluster": {"clusterRef": "orders-prod"},
        "topics": {"pattern": "^orders\\\\..*"},
        "deleteConsumed": {"groups": ["billing"]},
        "tombstones": {"groups": ["billing"], "raiseDeleteRetention": {"enabled": True}},
        "orphanPartitions": {"enabled": True},
        "notify": {"groups": ["audit"]},
    },
    "status": {"recordsDeletedTotal": 5},
}

RAN: dict[str, Any] = {
    "lastRun": {"completedAt": "2026-11-28T10:00:00Z"},
    "topics": [
        {
            "name": "orders.updated",
            "partitions": 3,
            "cut": {
                "rule": "deleteConsumed",
                "partitionsCut": 1,
                "records": 7,
                "limits": [{"guard": "peer", "detail": "held back", "partitions": 2}],
            },
        },
        {"name": "orders.created", "partitions": 2, "cut": {"rule": "none", "records": 0}},
    ],
}


class Cluster:
    """The plugin's Cluster: the copy's states in turn, every call recorded."""

    def __init__(self, states: list[dict[str, Any] | None]) -> None:
        self.states = states
        self.calls: list[tuple[str, str]] = []
        self.created: dict[str, Any] = {}

    def create(self, plural: str, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", plural))
        self.created = dict(body)
        return {**body, "metadata": {**body["metadata"], "name": "orders-plan-abcde"}}

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", name))
        return self.states.pop(0)

    def delete(self, plural: str, namespace: str, name: str) -> None:
        self.calls.append(("delete", name))


def asking(cluster: Cluster) -> dry_copy.Asking:
    """The fake cluster, polled without a pause."""
    return dry_copy.Asking(cluster, "team-orders", 10, Progress(io.StringIO()), poll=0)  # type: ignore[arg-type]


def test_the_copy_keeps_the_cutting_rules_as_a_dry_run_and_drops_the_watches() -> None:
    copy = policy_plan.dry_run_copy(POLICY, "team-orders")
    assert copy["metadata"] == {
        "generateName": "orders-plan-",
        "namespace": "team-orders",
        "annotations": {"kafka-retention.io/plan-of": "orders"},
    }
    assert copy["spec"] == {
        "cluster": {"clusterRef": "orders-prod"},
        "topics": {"pattern": "^orders\\\\..*"},
        "deleteConsumed": {"groups": ["billing"]},
        "dryRun": True,
    }
    assert "status" not in copy


def test_the_copy_is_read_once_its_run_completed_and_deleted() -> None:
    cluster = Cluster([{"status": {}}, {"status": RAN}])
    got = policy_plan.run(POLICY, asking(cluster))
    assert got["status"] is RAN
    assert cluster.calls == [
        ("create", "retentionpolicies"),
        ("get", "orders-plan-abcde"),
        ("get", "orders-plan-abcde"),
        ("delete", "orders-plan-abcde"),
    ]


def test_a_refused_copy_says_why_and_is_deleted_all_the_same() -> None:
    refused = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "QuotaExceeded",
                    "message": "policiesPerNamespace: 100 already",
                }
            ]
        }
    }
    cluster = Cluster([refused])
    with pytest.raises(PluginError, match="QuotaExceeded: policiesPerNamespace"):
        policy_plan.run(POLICY, asking(cluster))
    assert cluster.calls[-1] == ("delete", "orders-plan-abcde")


def test_the_answer_is_per_topic_in_topic_order_in_every_output() -> None:
    obj = {"status": RAN}
    as_json = json.loads(policy_plan.render(obj, POLICY, "json"))
    assert as_json["records"] == 7
    assert [t["topic"] for t in as_json["topics"]] == ["orders.created", "orders.updated"]
    assert as_json["topics"][1]["limitedBy"] == ["peer: held back"]
    assert policy_plan.render(obj, POLICY, "csv").splitlines() == [
        "topic,partitions,partitionsCut,records,rule",
        "orders.created,2,0,0,none",
        "orders.updated,3,1,7,deleteConsumed",
    ]
    table = policy_plan.render(obj, POLICY, "table")
    assert table.endswith("would delete 7 records from 1 partition on 2 topics\n")
    assert "peer: held back" in table
