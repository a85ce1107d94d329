"""The deploy manifests are accepted by a real API server, and their RBAC is sufficient."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from devstack.stack import Stack
from tests.support import install_spark_operator_crd

REPO = Path(__file__).resolve().parents[2]
SA = "system:serviceaccount:kafka-retention-system:kafka-retention-operator"


@pytest.fixture(scope="module")
def installed(stack: Stack) -> Stack:
    # `can-i` answers no for a resource the API server does not serve: the SparkApplication
    # check needs its CRD, which other tests installed when this one ran after them.
    install_spark_operator_crd(stack)
    rendered = stack.kubectl("kustomize", str(REPO / "manifests" / "overlays" / "kind")).stdout
    stack.kubectl("apply", "--server-side", "-f", "-", stdin=rendered)
    return stack


def dry_run(stack: Stack, overlay: str) -> tuple[str, str]:
    """The overlay rendered, and what a server-side dry run of it answered (asserted ok)."""
    # A server-side dry run of namespaced objects needs their namespace to exist.
    stack.kubectl("apply", "-f", str(REPO / "manifests" / "base" / "namespace.yaml"))
    rendered = stack.kubectl("kustomize", str(REPO / "manifests" / "overlays" / overlay)).stdout
    done = stack.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        "-",
        stdin=rendered,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return rendered, done.stdout


@pytest.mark.stack
def test_kind_overlay_passes_server_side_dry_run(stack: Stack) -> None:
    _, answer = dry_run(stack, "kind")
    assert "deployment.apps/kafka-retention-operator" in answer


@pytest.mark.stack
@pytest.mark.parametrize(
    ("verb", "resource"),
    [
        ("watch", "recordpurges.kafka-retention.io"),
        ("patch", "recordpurges.kafka-retention.io/status"),
        ("patch", "retentionpolicies.kafka-retention.io"),
        ("patch", "retentionpolicies.kafka-retention.io/status"),
        ("create", "events"),
        ("get", "secrets"),
        ("create", "configmaps"),
        ("deletecollection", "configmaps"),
        ("create", "pods"),
        ("create", "sparkapplications.sparkoperator.k8s.io"),
    ],
)
def test_operator_service_account_may(installed: Stack, verb: str, resource: str) -> None:
    done = installed.kubectl(
        "auth", "can-i", verb, resource, "-n", "default", "--as", SA, check=False
    )
    assert done.stdout.strip() == "yes", f"{SA} cannot {verb} {resource}"


@pytest.mark.stack
def test_operator_service_account_may_not_delete_secrets(installed: Stack) -> None:
    done = installed.kubectl(
        "auth", "can-i", "delete", "secrets", "-n", "default", "--as", SA, check=False
    )
    assert done.stdout.strip() == "no"


@pytest.mark.stack
def test_spark_namespace_kit_lets_the_driver_write_its_plan(
    installed: Stack, namespace: str
) -> None:
    rendered = installed.kubectl("kustomize", str(REPO / "manifests" / "spark-namespace")).stdout
    installed.kubectl("apply", "-n", namespace, "-f", "-", stdin=rendered)
    driver = f"system:serviceaccount:{namespace}:kafka-retention-spark"
    for verb, resource in (("create", "configmaps"), ("create", "pods"), ("get", "secrets")):
        done = installed.kubectl(
            "auth", "can-i", verb, resource, "-n", namespace, "--as", driver, check=False
        )
        assert done.stdout.strip() == "yes", f"driver cannot {verb} {resource}"
    other = installed.kubectl(
        "auth", "can-i", "create", "configmaps", "-n", "default", "--as", driver, check=False
    )
    assert other.stdout.strip() == "no"


@pytest.mark.stack
def test_only_the_orphan_cleanup_overlay_lets_the_operator_exec_into_pods(
    installed: Stack,
) -> None:
    def may_exec() -> str:
        done = installed.kubectl(
            "auth",
            "can-i",
            "create",
            "pods",
            "--subresource=exec",
            "-n",
            "default",
            "--as",
            SA,
            check=False,
        )
        return done.stdout.strip()

    assert may_exec() == "no"
    rendered = installed.kubectl(
        "kustomize", str(REPO / "manifests" / "overlays" / "orphan-cleanup")
    ).stdout
    installed.kubectl("apply", "--server-side", "-f", "-", stdin=rendered)
    try:
        assert may_exec() == "yes"
    finally:
        for kind in ("clusterrolebinding", "clusterrole"):
            installed.kubectl("delete", kind, "kafka-retention-orphan-cleanup", check=False)
    assert may_exec() == "no"


@pytest.mark.stack
def test_ha_overlay_runs_two_peered_replicas_kept_apart_and_one_always_up(stack: Stack) -> None:
    rendered, _ = dry_run(stack, "ha")
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(rendered) if d}
    deployment = docs[("Deployment", "kafka-retention-operator")]
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[args.index("--peering") + 1] == "kafka-retention"
    assert {e["name"] for e in container["env"]} >= {"POD_NAME"}  # its name among peers
    anti = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 100
    pdb = docs[("PodDisruptionBudget", "kafka-retention-operator")]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["metadata"]["namespace"] == "kafka-retention-system"


@pytest.mark.stack
def test_operator_service_account_may_create_and_write_its_peering_object(
    installed: Stack,
) -> None:
    for verb in ("create", "patch", "watch"):
        done = installed.kubectl(
            "auth", "can-i", verb, "clusterkopfpeerings.kopf.dev", "--as", SA, check=False
        )
        assert done.stdout.strip() == "yes", f"{SA} cannot {verb} clusterkopfpeerings"
