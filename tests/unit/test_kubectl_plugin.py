"""`kubectl kafka-retention`: its command line, and the words and tables it makes of status
(fixtures shaped as the CRDs and the operator write status)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from kafka_retention.cli import plugin
from kafka_retention.cli.common import UsageError
from kafka_retention.cli.plugin import dry_copy, explain, kube, plan, status, text
from kafka_retention.cli.plugin.kube import PluginError
from kafka_retention.cli.plugin.progress import Progress
from kafka_retention.core.retention_rules import registry
from kafka_retention.kube_objects import chunks

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)


def policy_fixture(**status_fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "orders-retention", "namespace": "team-orders"},
        "spec": {
            "cluster": {"clusterRef": "orders-prod"},
            "topics": {"names": ["orders"]},
            "deleteConsumed": {"groups": ["billing"], "minRetention": "15m"},
        },
        "status": status_fields,
    }


def purge_fixture(**status_fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": "drop-bad", "namespace": "team-orders", "uid": "u-1"},
        "spec": {
            "cluster": {"clusterRef": "orders-prod"},
            "topics": [{"name": "orders", "before": {"highWatermark": True}}],
            "protectGroups": ["billing"],
        },
        "status": status_fields,
    }


READY = {
    "type": "Ready",
    "status": "True",
    "reason": "RunSucceeded",
    "message": "ran",
    "lastTransitionTime": "2026-11-28T11:00:00Z",
}
DEGRADED = {
    "type": "Degraded",
    "status": "True",
    "reason": "PartiallyFailed",
    "message": "1 partition failed",
    "lastTransitionTime": "2026-11-28T11:00:00Z",
}
NOT_PERMITTED = {
    "type": "Ready",
    "status": "False",
    "reason": "NotPermitted",
    "message": "spec.topics.names[0]: topic orders is not in the binding's topics for "
    "namespace team-orders",
    "lastTransitionTime": "2026-11-28T11:00:00Z",
}


# --- the command line ---------------------------------------------------------------


@pytest.mark.parametrize("argv", [["--help"], ["status", "--help"], ["plan", "--help"]])
def test_help_names_the_command_as_kubectl_runs_it(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        plugin.main(argv)
    assert exit_info.value.code == 0
    assert "usage: kubectl kafka-retention" in capsys.readouterr().out


def test_explain_help_names_every_guard_it_explains(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        plugin.main(["explain", "--help"])
    out = capsys.readouterr().out
    assert "kubectl kafka-retention explain" in out
    for guard in ("minRetention", "high watermark", "binding", "compacted"):
        assert guard in out


def test_connection_flags_count_before_and_after_the_subcommand() -> None:
    parser = plugin.build_parser()
    before = parser.parse_args(["-n", "a", "--context", "c", "status"])
    after = parser.parse_args(["status", "-n", "b", "--kubeconfig", "k"])
    assert (before.namespace, before.context, before.kubeconfig) == ("a", "c", None)
    assert (after.namespace, after.context, after.kubeconfig) == ("b", None, "k")


def test_all_namespaces_and_output_flags_of_status() -> None:
    args = plugin.build_parser().parse_args(["status", "-A", "-o", "wide"])
    assert args.all_namespaces
    assert args.output == "wide"


@pytest.mark.parametrize(("value", "seconds"), [("90", 90.0), ("5m", 300.0), ("1m30s", 90.0)])
def test_plan_timeout_takes_seconds_or_a_duration(value: str, seconds: float) -> None:
    args = plugin.build_parser().parse_args(["plan", "x", "--timeout", value])
    assert args.timeout == seconds


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "x", "--timeout", "soon"],
        ["plan", "x", "-o", "yaml"],
        ["status", "-o", "csv"],
        ["explain"],
        ["frobnicate"],
    ],
)
def test_a_malformed_command_line_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        plugin.main(argv)
    assert exit_info.value.code == 2


@pytest.mark.parametrize("argv", [["plan"], ["plan", "x", "-f", "purge.yaml"]])
def test_plan_needs_exactly_one_of_a_file_and_a_name(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert plugin.main(argv) == 2
    assert capsys.readouterr().err == "error: plan takes either -f FILE or KIND/NAME|NAME\n"


def test_an_unusable_kubeconfig_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    assert plugin.main(["status", "--kubeconfig", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot use {missing}")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_a_file_without_one_of_the_kinds_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(UsageError, match="holds 0 RetentionPolicies"):
        plugin.read_document(str(path), io.StringIO())


def test_a_file_of_several_documents_gives_its_one_purge(tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n---\n"
        + json.dumps(purge_fixture())
        + "\n"
    )
    assert plugin.read_document(str(path), io.StringIO())["kind"] == "RecordPurge"


class FakeCluster:
    """The plugin's Cluster, its objects in dictionaries; every call recorded."""

    def __init__(self, objects: dict[tuple[str, str, str], dict[str, Any]] | None = None) -> None:
        self.objects = objects or {}
        self.namespace = "team-orders"
        self.api: Any = object()
        self.calls: list[tuple[str, ...]] = []
        self.sets: dict[tuple[str, str, str], str] = {}
        self.after_create: list[dict[str, Any]] = []

    def list(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        return [
            o for (p, ns, _), o in self.objects.items() if p == plural and namespace in (None, ns)
        ]

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", plural, name))
        if (plural, namespace, name) in self.objects:
            return self.objects[(plural, namespace, name)]
        if self.after_create and plural == "recordpurges":
            return self.after_create.pop(0)
        return None

    def create(self, plural: str, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", plural, namespace))
        self.created = dict(body)
        return {**body, "metadata": {**body["metadata"], "name": "drop-bad-plan-x1y2z"}}

    def delete(self, plural: str, namespace: str, name: str) -> None:
        self.calls.append(("delete", plural, name))

    def configmap_set(self, namespace: str, base: str, suffix: str) -> str | None:
        return self.sets.get((namespace, base, suffix))


def test_a_name_is_looked_up_as_a_policy_first_then_as_a_purge() -> None:
    purge = purge_fixture()
    cluster = FakeCluster({("recordpurges", "team-orders", "drop-bad"): purge})
    found = plugin.resolve(cluster, "team-orders", "drop-bad")  # type: ignore[arg-type]
    assert found == ("recordpurges", purge)
    assert [c[1] for c in cluster.calls] == ["retentionpolicies", "recordpurges"]


@pytest.mark.parametrize(
    "ref", ["rpurge/drop-bad", "RecordPurge/drop-bad", "recordpurges.kafka-retention.io/drop-bad"]
)
def test_kind_slash_name_takes_the_names_kubectl_takes(ref: str) -> None:
    cluster = FakeCluster({("recordpurges", "team-orders", "drop-bad"): purge_fixture()})
    assert plugin.resolve(cluster, "team-orders", ref)[0] == "recordpurges"  # type: ignore[arg-type]


def test_a_missing_object_is_a_failure_naming_the_namespace() -> None:
    with pytest.raises(PluginError, match='no RetentionPolicy or RecordPurge named "x" in'):
        plugin.resolve(FakeCluster(), "team-orders", "x")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown kind 'pod'"):
        plugin.resolve(FakeCluster(), "team-orders", "pod/x")  # type: ignore[arg-type]


def test_status_lists_every_kind_of_the_contexts_namespace(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = FakeCluster(
        {
            ("retentionpolicies", "team-orders", "orders-retention"): policy_fixture(
                conditions=[READY]
            ),
            ("recordpurges", "team-orders", "drop-bad"): purge_fixture(phase="Succeeded"),
            ("recordpurges", "elsewhere", "other"): purge_fixture(phase="Succeeded"),
            ("recorderasures", "team-orders", "erasure-request-1042"): erasure_fixture(),
        }
    )
    monkeypatch.setattr(plugin, "_connect", lambda _args: cluster)
    assert plugin.main(["status"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["NAMESPACE", "KIND", "NAME"]
    assert [line.split()[1:3] for line in out[1:]] == [
        ["RetentionPolicy", "orders-retention"],
        ["RecordPurge", "drop-bad"],
        ["RecordErasure", "erasure-request-1042"],
    ]


# --- status ---------------------------------------------------------------------------


def test_a_policy_row_sums_who_held_it_back_over_topics_and_puts_failing_conditions_first() -> None:
    obj = policy_fixture(
        conditions=[READY, DEGRADED],
        nextRunAt="2026-11-28T12:04:00Z",
        recordsDeletedTotal=5400,
        lastRun={
            "completedAt": "2026-11-28T11:57:00Z",
            "recordsDeleted": 1200,
            "bytesReclaimedEstimate": 1536,
            "partitionsCut": 2,
            "partitionsPlanned": 6,
        },
        topics=[
            {
                "name": "a",
                "heldBackBy": [{"namespace": "analytics", "group": "g", "partitions": 2}],
            },
            {
                "name": "b",
                "heldBackBy": [{"namespace": "analytics", "group": "g", "partitions": 1}],
            },
        ],
    )
    row = status.policy_row(obj, NOW)
    assert row["cells"][3:] == [
        "3m ago",
        "1,200",
        "5,400",
        "~1.5 KiB",
        "in 4m",
        "group g (analytics): 3 partitions",
        "Degraded=PartiallyFailed, Ready=RunSucceeded",
    ]
    assert row["heldBackBy"] == [{"by": "group g (analytics)", "partitions": 3}]


def test_a_policy_no_one_held_back_shows_the_guards_that_limited_it() -> None:
    obj = policy_fixture(
        topics=[
            {"name": "a", "cut": {"rule": "deleteConsumed", "limits": [
                {"guard": "minRetention", "detail": "x", "partitions": 4},
                {"guard": "highWatermark", "detail": "y", "partitions": 1},
            ]}},
        ]
    )  # fmt: skip
    assert status.policy_row(obj, NOW)["cells"][8] == (
        "minRetention: 4 partitions, highWatermark: 1 partition"
    )


def test_a_purge_row_names_the_groups_its_notes_say_lowered_its_cuts() -> None:
    results = [
        {"topic": "t", "partition": 0, "note": "lowered to 5, committed offset of billing"},
        {"topic": "t", "partition": 1, "note": "protected group billing has no committed offset"},
        {"topic": "t", "partition": 2, "note": "lowered to the high watermark 7"},
    ]
    obj = purge_fixture(phase="Purging", results=results, summary={"recordsDeleted": 9})
    cells = status.purge_row(obj, NOW)["cells"]
    assert cells[3] == "Purging"  # not completed: its phase, not a time
    assert cells[7] == "Purging"
    assert cells[8] == "group billing: 2 partitions, high watermark: 1 partition"


def test_a_dry_run_purge_shows_what_it_would_delete() -> None:
    obj = purge_fixture(
        phase="Succeeded",
        completedAt="2026-11-28T11:59:30Z",
        summary={"recordsDeleted": 0, "recordsToDelete": 42, "bytesToDeleteEstimate": 4200},
    )
    obj["spec"]["dryRun"] = True
    cells = status.purge_row(obj, NOW)["cells"]
    assert cells[3:8] == ["30s ago", "would 42", "would 42", "~4.1 KiB", "-"]


def erasure_fixture(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordErasure",
        "metadata": {"name": "erasure-request-1042", "namespace": "team-orders"},
        "spec": {
            "cluster": {"clusterRef": "orders-prod"},
            "topics": {"names": ["orders.customers"]},
            "keys": [
                {"sha256": "85d0c1e318151f3beceed00efefeed7f3961b0b4a4db57e06746fd02733cd63d"}
            ],
        },
        "status": {
            "phase": "Tombstoned",
            "summary": {"topics": 1, "matchesRemaining": 4, "tombstonesWritten": 2},
            "deadline": {
                "requestedBy": "2026-12-28T12:00:00Z",
                "expectedKeyErasedAt": "2026-11-28T12:03:00Z",
            },
            **status,
        },
    }


def test_an_erasure_row_shows_what_is_left_and_when_the_last_copy_is_expected() -> None:
    row = status.erasure_row(erasure_fixture(), NOW)
    assert row["cells"][3:8] == ["Tombstoned", "4 left", "-", "-", "Tombstoned, gone in 3m"]
    assert row["matchesRemaining"] == 4
    assert row["expectedKeyErasedAt"] == "2026-11-28T12:03:00Z"
    assert row["wide"][0] == "1"


def test_a_finished_erasure_row_has_its_receipt_and_no_deadline() -> None:
    done = erasure_fixture(
        phase="KeyErased",
        completedAt="2026-11-28T11:59:30Z",
        summary={"topics": 1, "matchesRemaining": 0, "tombstonesWritten": 2},
        receipt={"sha256": "ab" * 32, "configMap": "x"},
    )
    row = status.erasure_row(done, NOW)
    assert row["cells"][3:8] == ["30s ago", "0 left", "-", "-", "-"]
    assert row["receipt"] == "ab" * 32


def test_status_json_has_the_rows_without_their_table_cells() -> None:
    rows = status.rows([policy_fixture(conditions=[READY])], [], NOW)
    item = json.loads(status.render(rows, "json"))["items"][0]
    assert item["name"] == "orders-retention"
    assert "cells" not in item
    assert item["conditions"][0]["reason"] == "RunSucceeded"


def test_wide_output_adds_columns_before_the_conditions() -> None:
    rows = status.rows([policy_fixture(conditions=[READY], topicCount=3)], [], NOW)
    header, line = status.render(rows, "wide").splitlines()
    assert header.split("   ")[-1].strip() == "CONDITIONS"
    assert "binding orders-prod" in line
    assert line.endswith("Ready=RunSucceeded")


def test_table_columns_line_up() -> None:
    out = text.table(["A", "BB", "C"], [["xxx", "y", "last column"], ["x", "yyyy", "z"]])
    assert out.splitlines() == [
        "A     BB     C",
        "xxx   y      last column",
        "x     yyyy   z",
    ]


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(45, "45s"), (192, "3m12s"), (900, "15m"), (18240, "5h4m"), (183600, "2d3h")],
)
def test_spans_read_as_kubectl_ages(seconds: int, words: str) -> None:
    assert text.span(seconds) == words


# --- explain: policies ----------------------------------------------------------------


def topic_with(*limits: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "name": "orders",
        "partitions": 3,
        "recordsDeletedLastRun": 10,
        "recordsDeletedTotal": 30,
        "cut": {
            "rule": "deleteConsumed",
            "proposed": "committed by billing",
            "partitionsCut": 1,
            "limits": list(limits),
        },
        **fields,
    }


@pytest.mark.parametrize(
    ("guard", "words"),
    [
        ("group", "held back on 3 partitions by a group's committed offset"),
        (
            "noCommit",
            "held back on 3 partitions by a group with no committed offset (it "
            "protects the whole partition)",
        ),
        ("minRetention", "minRetention 15m keeps the records younger than it on 3 partitions"),
        ("minRecords", "minRecords keeps the last records of each partition on 3 partitions"),
        ("highWatermark", "the cut stops at the high watermark on 3 partitions"),
        ("peer", "held back on 3 partitions by another policy on the same topic"),
        ("binding", "the binding refuses the cut on 3 partitions"),
        (
            "compacted",
            "topic is compacted: cleanup.policy=compact, DeleteRecords is refused on 3 partitions",
        ),
        ("config", "a topic or broker setting limits the cut on 3 partitions"),
    ],
)
def test_every_guard_is_said_in_words_with_its_partitions_and_detail(
    guard: str, words: str
) -> None:
    limit = {"guard": guard, "detail": "the operator's sentence", "partitions": 3}
    out = explain.render_policy(policy_fixture(topics=[topic_with(limit)]), NOW)
    line = next(line for line in out.splitlines() if line.strip().startswith("- "))
    assert line.strip().startswith(f"- {words}")
    assert line.endswith(": the operator's sentence")


def test_every_guard_the_operator_may_write_has_its_own_sentence() -> None:
    """A new floor's guard tag (core.retention_rules) is explained in words, not shown
    with the fallback kept for guards of a newer operator."""
    for guard in registry.GUARDS:
        sentence = explain.guard_sentence({"guard": guard, "partitions": 1})
        assert not sentence.startswith("limited by"), guard


def test_a_guard_of_a_newer_operator_is_still_shown() -> None:
    limit = {"guard": "quota", "detail": "d", "partitions": 1}
    out = explain.render_policy(policy_fixture(topics=[topic_with(limit)]), NOW)
    assert "- limited by quota on 1 partition: d" in out


def test_explain_says_the_winning_rule_its_proposal_and_how_far_it_went() -> None:
    out = explain.render_policy(policy_fixture(topics=[topic_with()]), NOW)
    assert (
        "proposed: deleteConsumed (records every listed group has read): committed by billing"
        in out
    )
    assert "cut: moved the log start on 1 partition" in out
    assert "limited by: nothing, the proposed cut applied" in out


def test_a_group_of_another_namespace_is_named_with_its_namespace() -> None:
    held = {"namespace": "analytics", "group": "billing", "partitions": 3}
    out = explain.render_policy(policy_fixture(topics=[topic_with(heldBackBy=[held])]), NOW)
    assert (
        "held back on 3 partitions by group billing in namespace analytics (its committed offset)"
        in out
    )


def test_a_policy_of_the_same_namespace_is_named_by_name() -> None:
    held = {"namespace": "team-orders", "policy": "keep-week", "partitions": 1}
    out = explain.render_policy(policy_fixture(topics=[topic_with(heldBackBy=[held])]), NOW)
    assert "held back on 1 partition by the rules of policy keep-week in this namespace" in out


def test_a_compacted_topic_skipped_by_the_plan_is_explained() -> None:
    skipped = {
        "name": "cache",
        "partitions": 0,
        "note": "skipped: POLICY_VIOLATION: cleanup.policy is compact",
        "cut": {
            "rule": "none",
            "proposed": "nothing planned: the topic was skipped",
            "partitionsCut": 0,
            "limits": [
                {"guard": "compacted", "detail": "cleanup.policy is compact", "partitions": 0}
            ],
        },
    }
    out = explain.render_policy(policy_fixture(topics=[skipped]), NOW)
    topic = out.split("Topics:\n")[1].splitlines()
    assert topic == [
        "  cache: not planned (POLICY_VIOLATION: cleanup.policy is compact)",
        "    limited by:",
        "      - topic is compacted: cleanup.policy=compact, DeleteRecords is refused: "
        "cleanup.policy is compact",
    ]


def test_a_compacted_topic_is_explained_by_an_operator_without_cut_objects_too() -> None:
    skipped = {"name": "cache", "partitions": 0, "note": "skipped: cleanup.policy is compact"}
    out = explain.render_policy(policy_fixture(topics=[skipped]), NOW)
    assert "- topic is compacted: cleanup.policy=compact, DeleteRecords is refused\n" in out


def test_a_topic_the_binding_withholds_names_the_binding() -> None:
    withheld = {
        "name": "orders.audit",
        "partitions": 0,
        "note": "not cut: protected by the policy's KafkaClusterBinding",
        "cut": {
            "rule": "none",
            "proposed": "nothing planned: the binding withholds the topic",
            "partitionsCut": 0,
            "limits": [{"guard": "binding", "detail": "orders-prod protects it", "partitions": 0}],
        },
    }
    out = explain.render_policy(policy_fixture(topics=[withheld]), NOW)
    assert "  orders.audit: not planned (protected by the policy's KafkaClusterBinding)" in out
    assert "      - the binding refuses the cut (its KafkaClusterBinding entry does not " in out


def test_holders_are_said_once_from_held_back_by_not_again_as_peer_guards() -> None:
    held = {"namespace": "analytics", "group": "fraud", "partitions": 2}
    peer = {
        "guard": "peer",
        "detail": "held back by a policy in namespace analytics",
        "partitions": 2,
    }
    out = explain.render_policy(policy_fixture(topics=[topic_with(peer, heldBackBy=[held])]), NOW)
    assert "by another policy" not in out
    assert (
        "      - held back on 2 partitions by group fraud in namespace analytics (its committed "
        "offset)" in out
    )


def test_a_binding_refusal_leads_with_the_binding_and_names_the_field() -> None:
    out = explain.render_policy(
        policy_fixture(conditions=[READY | {"type": "OnSchedule"}, NOT_PERMITTED]), NOW
    )
    conditions = out.split("Conditions (failing first):\n")[1].splitlines()
    assert conditions[0] == (
        "  Ready=False (NotPermitted): the binding refuses it: spec.topics.names[0]: topic "
        "orders is not in the binding's topics for namespace team-orders"
    )


def test_a_policy_that_never_ran_says_so() -> None:
    out = explain.render_policy(policy_fixture(), NOW)
    assert "Conditions: none yet" in out
    assert "Last run: none yet" in out


# --- explain: purges ------------------------------------------------------------------


def test_a_purge_is_explained_partition_by_partition_with_what_lowered_each_cut() -> None:
    results = [
        {
            "topic": "orders",
            "partition": 0,
            "state": "Purged",
            "reason": "offset 100",
            "note": "lowered to 40, committed offset of billing",
            "requestedOffset": 40,
            "logStartBefore": 0,
            "highWatermark": 100,
            "recordsToDelete": 40,
            "recordsDeleted": 40,
            "lowWatermark": 40,
        },
        {"topic": "orders", "partition": -1, "state": "Failed", "error": "POLICY_VIOLATION: x"},
    ]
    obj = purge_fixture(phase="PartiallySucceeded", results=results, conditions=[DEGRADED])
    out = explain.render_purge(obj, now=NOW)
    assert "RecordPurge team-orders/drop-bad: PartiallySucceeded" in out
    assert "protects: billing" in out
    assert (
        "  orders-0: Purged; cut below offset 40 (offset 100); lowered to 40, committed offset "
        "of billing; log start 0, high watermark 100 when planned; 40 records deleted, log "
        "start now 40" in out
    )
    assert "  orders (every partition): Failed; error: POLICY_VIOLATION: x" in out


def test_a_dry_run_purge_says_what_would_go() -> None:
    entry = {
        "topic": "t",
        "partition": 1,
        "state": "DryRun",
        "requestedOffset": 9,
        "recordsToDelete": 9,
        "bytesToDeleteEstimate": 900,
    }
    assert explain.entry_sentence(entry) == (
        "t-1: DryRun; would cut below offset 9; 9 records (~900 B) would go"
    )


def test_the_entries_given_replace_folded_results_and_are_bounded() -> None:
    folded = [{"topic": "t", "partition": -1, "state": "Purged", "note": "summary of 3 partitions"}]
    entries = [{"topic": "t", "partition": p, "state": "Purged"} for p in range(3)]
    out = explain.render_purge(purge_fixture(results=folded), entries, limit=2, now=NOW)
    assert "t-0: Purged" in out
    assert "t-1: Purged" in out
    assert "t-2" not in out
    assert "... and 1 more partitions" in out
    assert "summary of" not in out


# --- plan -----------------------------------------------------------------------------


def dry(topic: str, partition: int, offset: int, records: int, size: int | None) -> dict[str, Any]:
    entry = {
        "topic": topic,
        "partition": partition,
        "state": "DryRun",
        "requestedOffset": offset,
        "logStartBefore": offset - records,
        "highWatermark": offset,
        "recordsToDelete": records,
        "reason": f"offset {offset}",
    }
    if size is not None:
        entry["bytesToDeleteEstimate"] = size
    return entry


ENTRIES = [
    dry("b", 0, 50, 50, 5000),
    dry("a", 1, 20, 0, 0),  # nothing to delete there
    dry("a", 0, 10, 10, None),
    {"topic": "c", "partition": -1, "state": "Failed", "error": "UNKNOWN_TOPIC_OR_PART: c"},
]


def test_the_offset_json_is_kafka_delete_records_format_with_only_cuts_that_delete() -> None:
    assert json.loads(plan.offset_json(ENTRIES)) == {
        "partitions": [
            {"topic": "a", "partition": 0, "offset": 10},
            {"topic": "b", "partition": 0, "offset": 50},
        ],
        "version": 1,
    }


def test_the_csv_has_records_and_bytes_and_leaves_an_unknown_size_empty() -> None:
    assert plan.offset_csv(ENTRIES) == (
        "topic,partition,offset,records,bytes\na,0,10,10,\nb,0,50,50,5000\n"
    )


def test_the_plan_table_lists_every_partition_and_the_totals() -> None:
    lines = plan.plan_table(ENTRIES).splitlines()
    assert [line.split()[:2] for line in lines[1:5]] == [
        ["a", "0"],
        ["a", "1"],
        ["b", "0"],
        ["c", "*"],
    ]
    assert lines[-1] == (
        "would delete 60 records (~4.9 KiB) from 2 partitions of 4; 1 partition could not be "
        "planned"
    )


def test_the_dry_run_copy_keeps_the_spec_only_and_turns_dry_run_on() -> None:
    original = purge_fixture(phase="Succeeded")
    original["metadata"]["resourceVersion"] = "7"
    copy = plan.dry_run_copy(original, "team-orders")
    assert copy["metadata"] == {
        "generateName": "drop-bad-plan-",
        "namespace": "team-orders",
        "annotations": {dry_copy.PLAN_OF: "drop-bad"},
    }
    assert copy["spec"] == {**original["spec"], "dryRun": True}
    assert "status" not in copy
    assert "dryRun" not in original["spec"]


def test_folded_results_are_read_from_the_results_configmaps() -> None:
    status_ = {
        "phase": "Succeeded",
        "results": [{"topic": "t", "partition": -1, "note": "summary of 2000 partitions"}],
        "resultsRef": {"configMap": "kr-recordpurge-p-results"},
    }
    asked: list[str] = []

    def load(suffix: str) -> str:
        asked.append(suffix)
        return json.dumps(dry("t", 0, 5, 5, 50)) + "\n"

    entries = plan.entries_of({"metadata": {"name": "p"}, "status": status_}, load)
    assert asked == ["results"]
    assert entries[0]["requestedOffset"] == 5


def test_a_purge_still_purging_is_read_from_its_stored_plan_even_with_folded_results() -> None:
    status_ = {
        "phase": "Purging",
        "planRef": {"configMap": "kr-recordpurge-p-plan"},
        "results": [{"topic": "t", "partition": -1, "note": "summary of 2000 partitions"}],
    }
    asked: list[str] = []

    def load(suffix: str) -> str:
        asked.append(suffix)
        return ""

    plan.entries_of({"metadata": {"name": "p"}, "status": status_}, load)
    assert asked == ["plan"]


def plan_now(cluster: FakeCluster, timeout: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """plan.run of purge_fixture() on the fake cluster, polling without a pause."""
    quiet = Progress(io.StringIO())
    asking = dry_copy.Asking(cluster, "team-orders", timeout, quiet, poll=0)  # type: ignore[arg-type]
    return plan.run(purge_fixture(), asking)


def test_planning_creates_a_copy_waits_for_its_plan_and_deletes_it() -> None:
    cluster = FakeCluster()
    cluster.after_create = [
        {"metadata": {"name": "drop-bad-plan-x1y2z"}, "status": {"phase": "Planning"}},
        {
            "metadata": {"name": "drop-bad-plan-x1y2z"},
            "status": {"phase": "Succeeded", "results": [dry("t", 0, 5, 5, 50)]},
        },
    ]
    entries, final = plan_now(cluster, timeout=30)
    assert entries == [dry("t", 0, 5, 5, 50)]
    assert final["status"]["phase"] == "Succeeded"
    assert cluster.created["spec"]["dryRun"] is True
    assert cluster.calls[0] == ("create", "recordpurges", "team-orders")
    assert cluster.calls[-1] == ("delete", "recordpurges", "drop-bad-plan-x1y2z")


def test_a_plan_not_made_in_time_is_a_failure_and_the_copy_is_still_deleted() -> None:
    cluster = FakeCluster()
    cluster.after_create = [{"metadata": {"name": "x"}, "status": {}}] * 100
    with pytest.raises(PluginError, match="was not planned within 0s"):
        plan_now(cluster, timeout=0)
    assert cluster.calls[-1] == ("delete", "recordpurges", "drop-bad-plan-x1y2z")


def test_a_refused_copy_is_reported_with_its_condition() -> None:
    final = {"status": {"phase": "Failed", "conditions": [NOT_PERMITTED]}}
    assert plan.failure(final) == f"NotPermitted: {NOT_PERMITTED['message']}"
    assert plan.failure({"status": {"phase": "Succeeded"}}) is None


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_one_rewritten_line_on_a_terminal_and_nothing_when_piped() -> None:
    piped, terminal = io.StringIO(), Terminal()
    for stream in (piped, terminal):
        progress = Progress(stream)
        progress.show("planning: Pending (1s)")
        progress.show("planning: Planning (2s)")
        progress.clear()
    assert piped.getvalue() == ""
    blank = " " * len("planning: Planning (2s)")
    assert terminal.getvalue() == (f"\rplanning: Pending (1s)\rplanning: Planning (2s)\r{blank}\r")


def test_folded_results_whose_configmaps_were_not_stored_come_from_status() -> None:
    folded = [{"topic": "t", "partition": -1, "note": "summary of 2000 partitions"}]
    status_ = {"phase": "Succeeded", "results": folded, "resultsRef": None}

    def load(suffix: str) -> str:
        raise AssertionError(f"no {suffix} ConfigMaps to read")

    assert plan.entries_of({"metadata": {"name": "p"}, "status": status_}, load) == folded


# --- the API server -------------------------------------------------------------------


class FakeCore:
    """CoreV1Api over ConfigMaps as kube_objects.chunks writes them."""

    def __init__(self, configmaps: list[dict[str, Any]]) -> None:
        self.by_name = {cm["metadata"]["name"]: cm for cm in configmaps}

    def read_namespaced_config_map(self, name: str, namespace: str) -> dict[str, Any]:
        if name not in self.by_name:
            raise ApiException(status=404, reason="Not Found")
        return self.by_name[name]

    def list_namespaced_config_map(
        self, namespace: str, label_selector: str, limit: int
    ) -> dict[str, Any]:
        run = label_selector.split(",")[0].split("=")[1]
        parts = [
            cm
            for cm in self.by_name.values()
            if cm["metadata"]["labels"].get(chunks.RUN_LABEL) == run
            and chunks.PART_LABEL in cm["metadata"]["labels"]
        ]
        return {"items": parts[:limit]}


def fake_cluster_over(
    monkeypatch: pytest.MonkeyPatch, configmaps: list[dict[str, Any]]
) -> kube.Cluster:
    core = FakeCore(configmaps)
    monkeypatch.setattr(kubernetes.client, "CoreV1Api", lambda _api: core)
    return kube.Cluster(kubernetes.client.ApiClient(), "team-orders")


def test_a_chunked_set_the_operator_stored_reads_back_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    payload = "".join(json.dumps(dry("t", p, 5, 5, 50)) + "\n" for p in range(3000))
    stored = chunks.sink_configmaps(
        "kr-recordpurge-p", "team-orders", payload, suffix="results", compress=True
    )
    cluster = fake_cluster_over(monkeypatch, stored)
    assert cluster.configmap_set("team-orders", "kr-recordpurge-p", "results") == payload
    assert cluster.configmap_set("team-orders", "kr-recordpurge-p", "plan") is None


def test_a_damaged_set_is_a_failure_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    stored = chunks.sink_configmaps("kr-recordpurge-p", "team-orders", "x\n", suffix="plan")
    stored[0]["binaryData"]["part"] = base64.b64encode(b"y\n").decode()
    cluster = fake_cluster_over(monkeypatch, stored)
    with pytest.raises(PluginError, match=r"configmaps kr-recordpurge-p-plan\* cannot be read"):
        cluster.configmap_set("team-orders", "kr-recordpurge-p", "plan")


def test_the_api_servers_refusal_is_said_with_what_was_being_done() -> None:
    body = json.dumps({"kind": "Status", "message": 'recordpurges is forbidden: User "u"'})
    refused = ApiException(status=403, reason="Forbidden")
    refused.body = body
    with pytest.raises(PluginError) as raised, kube.answers("listing recordpurges"):
        raise refused
    assert (
        str(raised.value) == 'listing recordpurges: recordpurges is forbidden: User "u" (HTTP 403)'
    )


def test_a_missing_crd_is_named_as_such() -> None:
    missing = ApiException(status=404, reason="Not Found")
    missing.body = json.dumps({"message": "the server could not find the requested resource"})
    assert "are the CRDs installed?" in kube.api_message(missing)


def test_a_context_names_the_default_namespace(tmp_path: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [
            {"name": "plain", "context": {"cluster": "c", "user": "u"}},
            {
                "name": "orders",
                "context": {"cluster": "c", "user": "u", "namespace": "team-orders"},
            },
        ],
        "current-context": "plain",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    assert kube.connect(str(path), None).namespace == "default"
    assert kube.connect(str(path), "orders").namespace == "team-orders"
    with pytest.raises(PluginError, match="cannot use"):
        kube.connect(str(path), "no-such-context")
