"""`kubectl kafka-retention`, run through the stack's own kubectl (which finds the plugin
`kubectl-kafka_retention` on PATH, beside this Python) against the session's operator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from operator import itemgetter
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack.stack import Stack
from kafka_retention.core.purge_states import Phase
from tests.helpers.commits import commit
from tests.helpers.kafka import Kafka
from tests.helpers.kube import get, resource
from tests.helpers.offsets import log_starts
from tests.helpers.policies import apply_policy_on, ran
from tests.helpers.purges import apply_purge, cuts, purge_finished, results

pytestmark = pytest.mark.stack


def kubectl_plugin(
    stack: Stack, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`kubectl kafka-retention ARGS` as a user runs it: kubectl looks the plugin up on PATH
    (the venv's bin dir, where the package installed it). The kubeconfig comes from
    $KUBECONFIG, as kubectl's own would."""
    path = os.pathsep.join(
        [str(Path(sys.executable).parent), str(stack.kube.kubectl.parent), os.environ["PATH"]]
    )
    env = {**os.environ, "PATH": path, "KUBECONFIG": str(stack.kube.kubeconfig)}
    return subprocess.run(
        [str(stack.kube.kubectl), "kafka-retention", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_kubectl_finds_the_plugin_and_its_help_speaks_as_kubectl(stack: Stack) -> None:
    listed = subprocess.run(
        [str(stack.kube.kubectl), "plugin", "list", "--name-only"],
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "kubectl-kafka_retention" in listed.stdout, listed.stderr
    done = kubectl_plugin(stack, "status", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kubectl kafka-retention status")


def test_status_lists_a_policy_and_a_purge_across_namespaces(
    stack: Stack, e2e_ns: str, kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 100, 1: 100})
    group = kafka.group_at(topic, "g", {0: 60, 1: 40})
    apply_policy_on(stack, e2e_ns, "consumed", topic, deleteConsumed={"groups": [group]})
    purged = kafka.topic({0: 10})
    apply_purge(stack, e2e_ns, "once", partitions=cuts(purged, {0: 4}))
    ran(stack, e2e_ns, "consumed")
    purge_finished(stack, e2e_ns, "once")

    table = kubectl_plugin(stack, "status", "-A")
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert header.split()[:4] == ["NAMESPACE", "KIND", "NAME", "LAST"]
    mine = [line.split()[:3] for line in lines if line.startswith(e2e_ns + " ")]
    assert mine == [[e2e_ns, "RetentionPolicy", "consumed"], [e2e_ns, "RecordPurge", "once"]]

    # The same through --context and -n, as JSON: the figures the operator wrote. The
    # kubeconfig's current context points nowhere, so only --context reaches the stack.
    config = yaml.safe_load(stack.kube.kubeconfig.read_text())
    config["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:9"}})
    config["contexts"].append({"name": "nowhere", "context": {"cluster": "nowhere", "user": "x"}})
    config["users"].append({"name": "x", "user": {}})
    config["current-context"] = "nowhere"
    elsewhere = tmp_path / "kubeconfig"
    elsewhere.write_text(yaml.safe_dump(config))
    args = ("status", "--kubeconfig", str(elsewhere), "-n", e2e_ns, "-o", "json")
    assert kubectl_plugin(stack, *args).returncode == 1  # the current context: nothing there
    done = kubectl_plugin(stack, *args, "--context", "local")
    assert done.returncode == 0, done.stderr
    items = {i["name"]: i for i in json.loads(done.stdout)["items"]}
    assert set(items) == {"consumed", "once"}
    assert items["consumed"]["recordsDeletedTotal"] == 100  # 60 + 40: what the group read
    assert items["once"]["recordsDeleted"] == 4
    assert items["once"]["conditions"][0]["reason"] in ("Purged", "PlanApplied")

    said = kubectl_plugin(stack, "explain", "consumed", "-n", e2e_ns)
    assert said.returncode == 0, said.stderr
    assert f"RetentionPolicy {e2e_ns}/consumed" in said.stdout
    assert f"deleteConsumed once {group} have read them" in said.stdout
    assert f"  {topic} (2 partitions)" in said.stdout


def purge_file(path: Path, ns: str, spec: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(resource("RecordPurge", "drop", ns, spec=spec)))
    return path


def test_plan_shows_exactly_what_the_purge_then_deletes_and_deletes_nothing(
    stack: Stack, e2e_ns: str, kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 100, 1: 80, 2: 50})
    other = kafka.topic({0: 30})
    group = kafka.group_at(topic, "reader", {0: 70, 1: 30})  # nothing committed on 2
    # protectGroups guards every partition of the purge: past the cut on `other`.
    commit(kafka.bootstrap, group, other, {0: 28})
    spec = {
        "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
        "topics": [{"name": topic, "before": {"highWatermark": True}}],
        "partitions": cuts(other, {0: 25}),
        "protectGroups": [group],
    }
    path = purge_file(tmp_path / "purge.yaml", e2e_ns, spec)

    started = time.monotonic()
    done = kubectl_plugin(stack, "plan", "-f", str(path), "-o", "json", "--timeout", "90s")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress line: stderr is not a terminal
    planned = json.loads(done.stdout)
    expected = [
        {"topic": topic, "partition": 0, "offset": 70},  # lowered to the group's commit
        {"topic": topic, "partition": 1, "offset": 30},
        {"topic": other, "partition": 0, "offset": 25},
    ]  # partition 2 of `topic`: no commit there, so the group protects all of it
    in_order = sorted(expected, key=itemgetter("topic", "partition"))
    assert planned == {"partitions": in_order, "version": 1}
    assert log_starts(kafka.admin, topic, 3) == [0, 0, 0]  # planning deleted nothing
    assert log_starts(kafka.admin, other, 1) == [0]
    copies = json.loads(stack.kubectl("get", "recordpurges", "-n", e2e_ns, "-o", "json").stdout)
    # The copy is gone, or going (the operator releases its finalizer).
    assert all(c["metadata"].get("deletionTimestamp") for c in copies["items"]), copies
    print(f"plan took {time.monotonic() - started:.1f}s")

    # The same purge, for real: it deletes what the plan said, partition by partition.
    stack.kubectl("apply", "-f", str(path))
    obj = purge_finished(stack, e2e_ns, "drop")
    assert obj["status"]["phase"] == Phase.SUCCEEDED, obj["status"]
    deleted = [
        {"topic": t, "partition": p, "offset": r["requestedOffset"]}
        for (t, p), r in sorted(results(obj).items())
        if r.get("recordsDeleted")
    ]
    assert deleted == planned["partitions"]
    assert log_starts(kafka.admin, topic, 3) == [70, 30, 0]
    assert log_starts(kafka.admin, other, 1) == [25]

    csv = kubectl_plugin(stack, "plan", "recordpurge/drop", "-n", e2e_ns, "-o", "csv")
    assert csv.returncode == 0, csv.stderr
    assert csv.stdout == "topic,partition,offset,records,bytes\n"  # nothing left to cut


def test_plan_of_a_policy_says_per_topic_what_its_run_then_deletes_and_deletes_nothing(
    stack: Stack, e2e_ns: str, kafka: Kafka, tmp_path: Path
) -> None:
    topic = kafka.topic({0: 100, 1: 80})
    fast = kafka.group_at(topic, "fast", {0: 90, 1: 80})
    slow = kafka.group_at(topic, "slow", {0: 60, 1: 30})
    spec = {
        "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
        "topics": {"names": [topic]},
        "interval": "1h",
        "deleteConsumed": {"groups": [fast, slow]},
        # A watch: the plan's copy leaves it out, its run is about cuts only.
        "notify": {"groups": [slow]},
    }
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(resource("RetentionPolicy", "consumed", e2e_ns, spec=spec)))

    done = kubectl_plugin(stack, "plan", "-f", str(path), "-o", "json", "--timeout", "90s")
    assert done.returncode == 0, done.stderr
    planned = json.loads(done.stdout)
    (row,) = planned["topics"]
    assert (row["topic"], row["partitions"], row["partitionsCut"], row["records"]) == (
        topic,
        2,
        2,
        60 + 30,  # the slower group's commits: 60 and 30, from log starts 0
    )
    assert row["rule"] == "deleteConsumed"
    assert row["limitedBy"] == [f"group: committed by {slow}"]
    assert log_starts(kafka.admin, topic, 2) == [0, 0]  # planning deleted nothing
    left = json.loads(stack.kubectl("get", "retentionpolicies", "-n", e2e_ns, "-o", "json").stdout)
    assert all(c["metadata"].get("deletionTimestamp") for c in left["items"]), left

    # The policy itself, for real: its first run deletes what the plan said.
    stack.kubectl("apply", "-f", str(path))
    obj = ran(stack, e2e_ns, "consumed")
    (status_topic,) = obj["status"]["topics"]
    assert status_topic["recordsDeletedLastRun"] == planned["records"]
    assert log_starts(kafka.admin, topic, 2) == [60, 30]
    again = kubectl_plugin(stack, "plan", "retentionpolicy/consumed", "-n", e2e_ns, "-o", "csv")
    assert again.returncode == 0, again.stderr
    assert (
        again.stdout
        == f"topic,partitions,partitionsCut,records,rule\n{topic},2,0,0,deleteConsumed\n"
    )


def test_explain_says_which_group_lowered_each_cut_of_a_purge(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 50, 1: 50})
    group = kafka.group_at(topic, "slow", {0: 20})  # nothing committed on 1
    apply_purge(
        stack,
        e2e_ns,
        "all-of-it",
        partitions=cuts(topic, {0: -1, 1: -1}),
        protectGroups=[group],
    )
    purge_finished(stack, e2e_ns, "all-of-it")
    done = kubectl_plugin(stack, "explain", "all-of-it", "-n", e2e_ns)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"RecordPurge {e2e_ns}/all-of-it: Succeeded\n")
    assert f"protects: {group} (no cut passes their commits)" in out
    assert f"  {topic}-0: Purged; cut below offset 20 (high watermark (-1)); lowered to 20, " in out
    assert f"protected group {group} has no committed offset" in out
    assert "20 records deleted, log start now 20" in out
    assert (
        get(stack, "recordpurge", e2e_ns, "all-of-it")["status"]["summary"]["recordsDeleted"] == 20
    )


def test_errors_are_one_line_with_the_exit_status_kubectl_passes_on(
    stack: Stack, e2e_ns: str
) -> None:
    missing = kubectl_plugin(stack, "explain", "recordpurge/nothing-here", "-n", e2e_ns)
    assert missing.returncode == 1
    assert missing.stderr == f'error: RecordPurge "nothing-here" not found in namespace {e2e_ns}\n'
    usage = kubectl_plugin(stack, "plan")
    assert usage.returncode == 2
    assert usage.stderr == "error: plan takes either -f FILE or KIND/NAME|NAME\n"
