"""Strict tenancy in the operator as deployed: the project's image on the local node, the
Deployment and RBAC of the manifests (the local overlay, with its open-tenancy component
taken out again: --tenancy=strict, Secrets readable in the operator's namespace only).
No admission policy is installed, so each refusal here is the operator's own.

Two tenant namespaces: A has a KafkaClusterBinding, B has none. A types in a cluster, B
names A's binding; both are refused naming the field and no record moves. A's purge
through its binding succeeds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devstack.stack import Stack
from tests.helpers import tenancy
from tests.helpers.conditions import ready
from tests.helpers.deployment import OPERATOR_NS, deployed, local_overlay
from tests.helpers.kafka import Kafka
from tests.helpers.kube import apply, create_namespace, get
from tests.helpers.offsets import log_starts
from tests.helpers.purges import purge_all, purge_finished
from tests.helpers.topics import cluster_id

# It installs the operator in kafka-retention-system, as test_in_cluster does: beside any
# test but the others that do (helpers/sharing.py).
pytestmark = pytest.mark.stack

# Plain names (a replica with --peering takes no patterns), watched by no other operator.
TEAM_A, TEAM_B = "ictenant-a", "ictenant-b"
OPEN_TENANCY = "kafka-retention-open-tenancy"


def strict_overlay(stack: Stack) -> list[dict[str, Any]]:
    """The local overlay as users of the local stack deploy it, back to strict tenancy."""
    return local_overlay(
        stack,
        dropped_args=("--all-namespaces", "--tenancy=open"),
        added_args=("--tenancy=strict", f"--namespace={TEAM_A}", f"--namespace={TEAM_B}"),
        dropped_objects=(OPEN_TENANCY,),
    )


@pytest.fixture(scope="module")
def strict_in_cluster(stack: Stack) -> Iterator[str]:
    for ns in (TEAM_A, TEAM_B):
        create_namespace(stack, ns)
    with deployed(stack, strict_overlay(stack), [TEAM_A, TEAM_B]) as pod:
        yield pod


@pytest.fixture
def binding(stack: Stack, admin: AdminClient, strict_in_cluster: str) -> Iterator[str]:
    """Team A's binding: purge and retention on the local cluster, by its id."""
    name = f"ictenant-{uuid.uuid4().hex[:6]}"
    apply(stack, tenancy.binding(name, cluster_id(admin), stack.kafka.bootstrap_servers, TEAM_A))
    yield name
    for ns in (TEAM_A, TEAM_B):
        stack.kubectl("delete", "retentionpolicies,recordpurges", "--all", "-n", ns, check=False)
    stack.kubectl("delete", "kafkaclusterbinding", name, check=False)


def test_the_deployed_operator_refuses_tenants_and_serves_the_bound_one(
    stack: Stack, binding: str, strict_in_cluster: str, kafka: Kafka
) -> None:
    topic = kafka.topic({0: 30})
    purge_all(stack, TEAM_A, "typed-in", {"bootstrapServers": kafka.bootstrap}, topic)
    purge_all(stack, TEAM_B, "borrowed", {"clusterRef": binding}, topic)
    typed = purge_finished(stack, TEAM_A, "typed-in", timeout=90)
    borrowed = purge_finished(stack, TEAM_B, "borrowed", timeout=90)
    assert (typed["status"]["phase"], ready(typed)["reason"]) == ("Failed", "NotPermitted")
    assert "spec.cluster.bootstrapServers" in ready(typed)["message"]
    assert (borrowed["status"]["phase"], ready(borrowed)["reason"]) == ("Failed", "NotPermitted")
    assert f"does not admit namespace {TEAM_B}" in ready(borrowed)["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]

    purge_all(stack, TEAM_A, "bound", {"clusterRef": binding}, topic)
    bound = purge_finished(stack, TEAM_A, "bound", timeout=90)
    assert bound["status"]["phase"] == "Succeeded", bound["status"]
    assert log_starts(kafka.admin, topic, 1) == [30]
    # The refusals stay as they were: nothing retried them into a success meanwhile.
    assert get(stack, "recordpurge", TEAM_B, "borrowed")["status"]["phase"] == "Failed"
    (status,) = get(stack, "pod", OPERATOR_NS, strict_in_cluster)["status"]["containerStatuses"]
    assert status["restartCount"] == 0
