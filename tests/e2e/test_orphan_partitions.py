"""spec.orphanPartitions with access local on the real 3-broker stack: partition
directories no assigned replica owns are found, held through removalDelay, then removed;
everything else in the log dirs is left as it was.

The orphans are made from real topics: a partition directory with its real segments
copied to a broker that does not host it, a copy renamed as a KRaft broker names stray
replicas, and the directory of a topic that was deleted and re-created under the same
name (its partition.metadata names the old topic id). The assignment is changed with
Kafka's own kafka-reassign-partitions tool."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devstack import paths
from devstack.kafka import KafkaCluster
from devstack.stack import Stack
from tests.helpers.conditions import condition
from tests.helpers.kafka import Kafka
from tests.helpers.kube import events, get, wait_for
from tests.helpers.orphans import HEX, digest, entries, orphan_copy, reclaimed
from tests.helpers.policies import apply_policy
from tests.helpers.records import produce
from tests.helpers.topics import create_on, topic_id, wait_for_gone

# On the isolated cluster (tests/helpers/sharing.py): it plants orphan directories in the
# brokers' log dirs and checks that no other directory changes, so no other test may
# create or delete topics there meanwhile.
pytestmark = [pytest.mark.stack]


def reassign(bootstrap: str, topic: str, replicas: list[int], tmp: Path) -> None:
    plan = tmp / "reassign.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
        )
    )
    subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            f"{paths.kafka_libs()}/*",
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            str(plan),
            "--execute",
        ],
        check=True,
        capture_output=True,
        text=True,
    )


def test_orphans_are_found_held_and_removed_and_nothing_else_is_touched(
    stack: Stack,
    e2e_ns: str,
    isolated_cluster: KafkaCluster,
    isolated_kafka: Kafka,
    planted: list[Path],
    tmp_path: Path,
) -> None:
    kafka = isolated_kafka
    logs = {b: isolated_cluster.node(b).log_dir for b in (1, 2, 3)}
    tag = e2e_ns[-6:]
    a, b, d = f"orphan-a-{tag}", f"orphan-b-{tag}", f"orphan-d-{tag}"
    for name in (a, b, d):
        create_on(kafka.admin, name, [1])
        produce(kafka.bootstrap, name, {0: 50})
    # b is deleted and re-created: the copy kept from before names the old topic id.
    old_b = tmp_path / "old-b"
    shutil.copytree(logs[1] / f"{b}-0", old_b)
    old_id = topic_id(kafka.admin, b)
    kafka.admin.delete_topics([b])[b].result(timeout=30)
    wait_for_gone(kafka.admin, b)
    new_id = create_on(kafka.admin, b, [1])
    assert new_id != old_id

    def plant(source: Path, broker: int, name: str) -> Path:
        target = logs[broker] / name
        shutil.copytree(source, target)
        planted.append(target)
        return target

    copy_a = plant(logs[1] / f"{a}-0", 2, f"{a}-0")  # not assigned to broker 2
    stray = plant(logs[1] / f"{a}-0", 3, f"{a}-0.{HEX}-stray")
    copy_b = plant(old_b, 3, f"{b}-0")  # topic id mismatch
    copy_d = plant(logs[1] / f"{d}-0", 2, f"{d}-0")  # will be assigned again
    future = plant(logs[1] / f"{a}-0", 2, f"{a}-0.{HEX}-future")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("precious")
    link = logs[2] / f"{a}-7"
    link.symlink_to(outside, target_is_directory=True)
    planted.append(link)
    hostile = logs[3] / "x-0$(touch pwned);rm -rf ..;"
    hostile.mkdir()
    planted.append(hostile)
    assigned = {name: digest(logs[1] / f"{name}-0") for name in (a, b, d)}
    # Every partition directory the brokers hold before the check (other tests' too; not
    # those the broker itself is deleting).
    held = {
        (n, p.name)
        for n, log in logs.items()
        for p in log.iterdir()
        if p not in planted and p.is_dir() and not p.name.endswith("-delete")
    }
    untouched = {p: digest(p) for p in (future, outside, hostile)}

    apply_policy(
        stack,
        e2e_ns,
        "orphans",
        cluster={"bootstrapServers": kafka.bootstrap, "brokers": {"access": "local"}},
        orphanPartitions={"enabled": True, "removalDelay": "15s", "minAge": "1s", "dryRun": True},
    )

    def policy_when(check: Callable[[dict[str, Any]], bool], timeout: float) -> dict[str, Any]:
        return wait_for(stack, "retentionpolicy", e2e_ns, "orphans", check, timeout=timeout)

    first = policy_when(lambda o: bool(entries(o)), timeout=60)
    found = entries(first)
    assert {k: v["state"] for k, v in found.items() if v["state"] == "Pending"} == {
        (2, f"{a}-0"): "Pending",
        (3, f"{a}-0.{HEX}-stray"): "Pending",
        (3, f"{b}-0"): "Pending",
        (2, f"{d}-0"): "Pending",
    }
    assert found[(2, f"{a}-0")]["reason"].startswith("not assigned to broker 2")
    assert found[(3, f"{b}-0")]["reason"].startswith(
        f"topic id {old_id} differs from live topic id {new_id}"
    )
    assert found[(2, f"{a}-0.{HEX}-future")]["state"] == "Kept"
    assert found[(2, f"{a}-7")]["reason"] == "symlink, never followed"
    assert found[(3, hostile.name)]["state"] == "Kept"
    assert condition(first, "OrphansFound")["status"] == "True"

    # d's partition is assigned to broker 2 during the delay: broker 2 adopts the copy.
    reassign(kafka.bootstrap, d, [1, 2], tmp_path)
    # Broker 2 serves the partition from that directory now: it is the broker's to delete
    # (with the topic), never the test's: removing it under the broker fails its log dir.
    planted.remove(copy_d)
    again = policy_when(lambda o: entries(o).get((2, f"{d}-0"), {}).get("state") == "Kept", 60)
    assert entries(again)[(2, f"{d}-0")]["reason"] == "assigned again"
    dry = policy_when(
        lambda o: entries(o).get((2, f"{a}-0"), {}).get("reason", "").endswith("dry run"), 90
    )
    assert (2, f"{d}-0") not in entries(dry) or entries(dry)[(2, f"{d}-0")]["state"] == "Kept"
    assert all(p.exists() for p in (copy_a, stray, copy_b, copy_d))

    stack.kubectl(
        "patch",
        "retentionpolicy",
        "orphans",
        "-n",
        e2e_ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"orphanPartitions": {"dryRun": False}}}),
    )
    done = policy_when(reclaimed, timeout=90)
    removed = {k for k, v in entries(done).items() if v["state"] == "Removed"}
    assert removed == {(2, f"{a}-0"), (3, f"{a}-0.{HEX}-stray"), (3, f"{b}-0")}
    assert not copy_a.exists()
    assert not stray.exists()
    assert not copy_b.exists()
    # Assigned again, so kept; and broker 2 now serves it from that very directory.
    assert copy_d.exists()
    assert {name: digest(logs[1] / f"{name}-0") for name in (a, b, d)} == assigned
    now_held = {(n, p.name) for n, log in logs.items() for p in log.iterdir()}
    assert sorted(held - now_held) == []
    assert {p: digest(p) for p in (future, outside, hostile)} == untouched
    assert link.is_symlink()
    assert not any(p.name == "pwned" for log in logs.values() for p in log.iterdir())
    reasons = [e["reason"] for e in events(stack, e2e_ns, "orphans")]
    assert reasons.count("OrphanDirectoryRemoved") == 3
    final = get(stack, "retentionpolicy", e2e_ns, "orphans")
    assert final["status"]["orphanCount"] == 0
    stack.kubectl("delete", "retentionpolicy", "orphans", "-n", e2e_ns)
    for name in (a, b, d):
        kafka.admin.delete_topics([name])[name].result(timeout=30)
    for name in (a, b, d):
        wait_for_gone(kafka.admin, name)


def broker_pod(namespace: str, image: str, log_dir: Path) -> str:
    """A stand-in for a broker pod: labelled as the policy's podSelector says, with
    broker 2's log dir mounted where the broker's log.dirs names it."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "broker-2", "namespace": namespace, "labels": BROKER_LABELS},
            "spec": {
                "hostNetwork": True,
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "kafka",
                        "image": image,
                        "imagePullPolicy": "Never",
                        "command": ["sleep", "3600"],
                        # Broker volumes belong to the broker's user; root here.
                        "securityContext": {"runAsUser": 0},
                        "volumeMounts": [{"name": "data", "mountPath": str(log_dir)}],
                    }
                ],
                "volumes": [
                    {"name": "data", "hostPath": {"path": str(log_dir), "type": "Directory"}}
                ],
            },
        }
    )


BROKER_LABELS = {"app.kubernetes.io/name": "kafka", "kafka-broker": "2"}


def test_orphans_in_a_broker_pods_volume_are_removed_through_exec(
    stack: Stack,
    e2e_ns: str,
    isolated_cluster: KafkaCluster,
    isolated_kafka: Kafka,
    planted: list[Path],
) -> None:
    kafka = isolated_kafka
    logs = {b: isolated_cluster.node(b).log_dir for b in (1, 2)}
    topic = f"orphan-x-{e2e_ns[-6:]}"
    copy, assigned = orphan_copy(isolated_cluster, kafka, topic, 40, planted)
    image = stack.env()["KAFKA_RETENTION_IMAGE"]
    stack.kubectl("apply", "-f", "-", stdin=broker_pod(e2e_ns, image, logs[2]))
    stack.kubectl("wait", "pod/broker-2", "-n", e2e_ns, "--for=condition=Ready", "--timeout=120s")
    apply_policy(
        stack,
        e2e_ns,
        "orphans-exec",
        cluster={
            "bootstrapServers": kafka.bootstrap,
            "brokers": {"podSelector": {"matchLabels": BROKER_LABELS}},
        },
        orphanPartitions={"enabled": True, "removalDelay": "10s", "minAge": "1s"},
    )

    def policy_when(check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        return wait_for(stack, "retentionpolicy", e2e_ns, "orphans-exec", check, timeout=60)

    first = policy_when(lambda o: (2, f"{topic}-0") in entries(o))
    entry = entries(first)[(2, f"{topic}-0")]
    assert (entry["state"], entry["logDir"]) == ("Pending", str(logs[2]))
    # Only broker 2's log dir is mounted in a matching pod: the others are not looked at.
    assert {broker for broker, _ in entries(first)} == {2}
    done = policy_when(reclaimed)
    assert entries(done)[(2, f"{topic}-0")]["state"] == "Removed"
    assert not copy.exists()
    assert digest(logs[1] / f"{topic}-0") == assigned
    (event,) = [
        e for e in events(stack, e2e_ns, "orphans-exec") if e["reason"] == "OrphanDirectoryRemoved"
    ]
    assert f"removed {topic}-0" in event["message"]
    assert condition(done, "Degraded")["status"] == "False"
    kafka.admin.delete_topics([topic])[topic].result(timeout=30)
