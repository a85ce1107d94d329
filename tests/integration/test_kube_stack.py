"""The local Kubernetes API is a real kube-apiserver: CRDs, schema and CEL validation, RBAC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devstack.stack import Stack
from tests.helpers.examples import example_files, example_manifest

REPO = Path(__file__).resolve().parents[2]

PURGE = """
apiVersion: kafka-retention.io/v1alpha1
kind: RecordPurge
metadata: {{name: {name}}}
spec:
  cluster: {{bootstrapServers: "127.0.0.1:39091"}}
  partitions:
    - {{topic: orders, partition: 0, offset: {offset}}}
"""


@pytest.mark.stack
def test_api_server_reports_the_pinned_version(stack: Stack) -> None:
    version = json.loads(stack.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"].startswith("v1.")
    assert version["gitVersion"] != "v0.0.0"


@pytest.mark.stack
def test_custom_resource_created_through_kubectl_is_stored(stack: Stack, namespace: str) -> None:
    stack.kubectl("apply", "-n", namespace, "-f", "-", stdin=PURGE.format(name="valid", offset=-1))
    got = json.loads(
        stack.kubectl("get", "recordpurge", "valid", "-n", namespace, "-o", "json").stdout
    )
    assert got["spec"]["partitions"] == [{"topic": "orders", "partition": 0, "offset": -1}]
    # Defaults from the schema are applied by the server.
    assert got["spec"]["dryRun"] is False
    listed = stack.kubectl("get", "kafka-retention", "-n", namespace).stdout
    assert "recordpurge.kafka-retention.io/valid" in listed


@pytest.mark.stack
def test_schema_rejects_an_offset_below_minus_one(stack: Stack, namespace: str) -> None:
    done = stack.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=PURGE.format(name="invalid", offset=-2),
        check=False,
    )
    assert done.returncode != 0
    assert "spec.partitions[0].offset" in done.stderr
    absent = stack.kubectl("get", "recordpurge", "invalid", "-n", namespace, check=False)
    assert absent.returncode != 0


@pytest.mark.stack
def test_cel_rule_keeps_a_purge_spec_immutable(stack: Stack, namespace: str) -> None:
    stack.kubectl("apply", "-n", namespace, "-f", "-", stdin=PURGE.format(name="fixed", offset=5))
    done = stack.kubectl(
        "apply", "-n", namespace, "-f", "-", stdin=PURGE.format(name="fixed", offset=6), check=False
    )
    assert done.returncode != 0
    assert "spec is immutable" in done.stderr


@pytest.mark.stack
def test_an_update_cannot_bring_in_an_internal_topic_the_create_rule_no_longer_reads(
    stack: Stack, namespace: str
) -> None:
    # The internal-topic rule reads the spec on create only (oldSelf absent): an update
    # naming __consumer_offsets must still be refused, by immutability.
    stack.kubectl("apply", "-n", namespace, "-f", "-", stdin=PURGE.format(name="inner", offset=5))
    internal = PURGE.format(name="inner", offset=5).replace(
        "topic: orders", "topic: __consumer_offsets"
    )
    for verb in (("apply",), ("replace",)):
        done = stack.kubectl(*verb, "-n", namespace, "-f", "-", stdin=internal, check=False)
        assert done.returncode != 0, verb
        assert "spec is immutable" in done.stderr
    got = json.loads(
        stack.kubectl("get", "recordpurge", "inner", "-n", namespace, "-o", "json").stdout
    )
    assert got["spec"]["partitions"][0]["topic"] == "orders"
    # On create the same spec is refused by the internal-topic rule itself.
    fresh = internal.replace("name: inner", "name: inner-fresh")
    done = stack.kubectl("apply", "-n", namespace, "-f", "-", stdin=fresh, check=False)
    assert done.returncode != 0
    assert "internal topics" in done.stderr


@pytest.mark.stack
def test_rbac_is_enforced_for_unprivileged_users(stack: Stack, namespace: str) -> None:
    done = stack.kubectl(
        "auth", "can-i", "delete", "recordpurges", "-n", namespace, "--as", "nobody", check=False
    )
    assert done.stdout.strip() == "no"


@pytest.mark.stack
@pytest.mark.parametrize(
    "example", example_files(), ids=lambda p: p.relative_to(REPO / "examples").as_posix()
)
def test_example_is_accepted_by_the_api_server(stack: Stack, namespace: str, example: Path) -> None:
    manifest = example_manifest(example, namespace)
    done = stack.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", stdin=manifest, check=False
    )
    assert done.returncode == 0, done.stderr
