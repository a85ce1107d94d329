"""The local Kafka configuration is what the tests rely on (docs/development.md, 'The
local stack')."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from devstack.kafka import NODE_IDS, KafkaCluster
from devstack.paths import Pins
from devstack.procs import StackError
from devstack.stack import Stack


def test_three_nodes_share_one_static_quorum(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path)
    props = [n.properties() for n in cluster.nodes]
    assert NODE_IDS == (1, 2, 3)
    assert len({p["controller.quorum.voters"] for p in props}) == 1
    voters = props[0]["controller.quorum.voters"].split(",")
    assert [v.split("@")[0] for v in voters] == ["1", "2", "3"]
    assert all(v.split("@")[1].startswith("127.0.0.1:") for v in voters)


def test_a_larger_cluster_adds_broker_only_nodes_to_the_same_quorum(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path, "big", port_offset=-10_000, brokers=5)
    props = {n.node_id: n.properties() for n in cluster.nodes}
    assert list(props) == [1, 2, 3, 4, 5]
    assert [props[n]["process.roles"] for n in props] == ["broker,controller"] * 3 + ["broker"] * 2
    assert {p["controller.quorum.voters"] for p in props.values()} == {
        props[1]["controller.quorum.voters"]
    }
    assert all("CONTROLLER://" in props[n]["listeners"] for n in (1, 2, 3))
    assert not any("CONTROLLER://" in props[n]["listeners"] for n in (4, 5))
    ports = [port for n in cluster.nodes for port in n.ports]
    assert len(set(ports)) == len(ports)
    assert all(port < 32768 for port in ports)  # below the ephemeral range
    assert cluster.bootstrap_servers.count(",") == 4


def test_brokers_replicate_three_ways_and_require_two_in_sync(tmp_path: Path) -> None:
    for node in KafkaCluster(tmp_path).nodes:
        props = node.properties()
        assert props["default.replication.factor"] == "3"
        assert props["min.insync.replicas"] == "2"
        assert props["advertised.listeners"].startswith("PLAINTEXT://127.0.0.1:")


def test_each_broker_has_its_own_log_dir_and_port(tmp_path: Path) -> None:
    nodes = KafkaCluster(tmp_path).nodes
    assert len({n.log_dir for n in nodes}) == 3
    assert len({n.broker_port for n in nodes} | {n.controller_port for n in nodes}) == 6


def test_pins_are_read_from_the_build_files() -> None:
    pins = Pins.read()
    assert pins.kafka.startswith("4.")
    assert pins.kubernetes.startswith("v1.")
    assert pins.etcd.startswith("v3.")


def test_the_isolated_cluster_is_its_own_quorum_on_ports_of_its_own(tmp_path: Path) -> None:
    """Tests freeze and kill its brokers beside tests on the shared cluster: the two must
    share no port, no voter and no directory."""
    stack = Stack(tmp_path)
    shared, isolated = stack.kafka, stack.isolated_kafka
    shared_ports = {port for n in shared.nodes for port in n.ports}
    isolated_ports = {port for n in isolated.nodes for port in n.ports}
    assert len(isolated_ports) == 12
    assert shared_ports.isdisjoint(isolated_ports)
    voters = isolated.nodes[0].properties()["controller.quorum.voters"].split(",")
    assert {int(v.rsplit(":", 1)[1]) for v in voters} == {n.controller_port for n in isolated.nodes}
    assert {n.log_dir for n in shared.nodes}.isdisjoint({n.log_dir for n in isolated.nodes})
    assert isolated.process(1).pid_file != shared.process(1).pid_file
    assert set(shared.bootstrap_servers.split(",")).isdisjoint(
        isolated.bootstrap_servers.split(",")
    )


def test_stopping_the_stack_stops_both_clusters_and_says_when_a_broker_would_not_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clusters stop at once, each given a few seconds before its nodes are killed
    (their data is not kept); a failure of one must neither keep the other running nor
    be lost on its thread."""
    stack = Stack(tmp_path)
    stopped: list[str] = []
    given: list[float] = []

    def stop(cluster: KafkaCluster, patience: float = 30) -> None:
        stopped.append(cluster.name)
        given.append(patience)
        if cluster.name == "kafka":
            raise StackError("kafka-2 still running 30 s after SIGTERM")

    monkeypatch.setattr(stack.node, "stop", lambda: None)
    monkeypatch.setattr(stack.kube, "stop", lambda: stopped.append("kube"))
    monkeypatch.setattr(KafkaCluster, "stop", stop)
    with pytest.raises(StackError, match="kafka-2 still running"):
        stack.down()
    assert sorted(stopped) == ["kafka", "kafka-isolated"]
    assert len(given) == 2
    assert max(given) <= 10


def test_an_operator_is_watching_a_namespace_only_once_its_log_says_so_after_the_offset(
    tmp_path: Path,
) -> None:
    from devstack.operator import OperatorProcess

    log = tmp_path / "operator.log"
    operator = OperatorProcess(Stack(tmp_path), ["e2e-*"], log)
    assert operator.log_size() == 0
    old = "Starting the watch-stream for recordpurges.v1alpha1.kafka-retention.io in 'e2e-a'.\n"
    log.write_text(old)
    since = operator.log_size()
    assert operator.watching("e2e-a", 0)
    assert not operator.watching("e2e-a", since)  # said before the offset
    with log.open("a") as out:
        out.write("Starting the watch-stream for retentionpolicies in 'e2e-a-longer'.\n")
        out.write("Stopping the watch-stream for retentionpolicies in 'e2e-b'.\n")
    assert not operator.watching("e2e-a", since)  # another namespace it prefixes
    assert not operator.watching("e2e-b", since)  # stopping is not watching
    with log.open("a") as out:
        out.write("Starting the watch-stream for retentionpolicies in 'e2e-b'.\n")
    assert operator.watching("e2e-b", since)


def test_the_venv_is_made_from_the_named_python_and_a_python_that_does_not_run_has_no_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from devstack import venv

    monkeypatch.setenv("KAFKA_RETENTION_PYTHON", sys.executable)
    assert venv.interpreter() == sys.executable
    assert venv.version(sys.executable) == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert venv.version(tmp_path / "no-such-python") is None
    failing = tmp_path / "shim"
    failing.write_text("#!/bin/sh\nexit 127\n")
    failing.chmod(0o755)
    assert venv.version(failing) is None  # a pyenv shim of an unselected version


def test_make_recipes_write_bytecode_where_the_environment_says_not_to() -> None:
    """Without bytecode every process a run starts compiles each module it imports again
    (the Makefile's `unexport PYTHONDONTWRITEBYTECODE`); what a recipe sees is asked of
    make itself."""
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "SEEN": "the recipe ran"}
    said = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-s",
            "--eval",
            'shown: ; @echo "[$$SEEN][$$PYTHONDONTWRITEBYTECODE]"',
            "shown",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert said.stdout.strip() == "[the recipe ran][]"


def test_compat_clusters_share_no_port_with_the_stack_or_one_another(tmp_path: Path) -> None:
    from devstack.kafka import COMPAT_VERSIONS, compat_cluster, compat_ports

    ports = [b.port for b in Stack(tmp_path).binds()] + compat_ports()
    assert len(ports) == len(set(ports))
    for version in COMPAT_VERSIONS:
        cluster = compat_cluster(version, tmp_path)
        assert cluster.root == tmp_path / f"kafka-{version}"
        assert cluster.cluster_id is None  # a random id at each format
        props = cluster.nodes[0].properties()
        assert ("remote.log.storage.system.enable" in props) == (version == Pins.read().kafka)
        assert ("share.coordinator.state.topic.min.isr" in props) == version.startswith("4.")
