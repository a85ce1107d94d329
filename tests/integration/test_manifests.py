"""The deploy manifests are accepted by a real API server, and their RBAC_KINDS is sufficient."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import yaml

from devstack.stack import Stack
from tests.helpers.kube import install_spark_operator_crd
from tests.helpers.manifests import STRIMZI_CRDS, delete_objects, ident, render
from tests.helpers.paths import REPO
from tests.helpers.rbac import KAFKA_NS, RBAC_KINDS, SA, can_i

# It applies and deletes the overlays' cluster RBAC and the kind overlay's Deployment in
# kafka-retention-system: beside any test but the others that do (helpers/sharing.py).

# Cluster-wide: applied for real, the base's strict-tenancy policy would refuse every other
# test's resource that names bootstrap servers. test_rbac.py applies it to one namespace.
ADMISSION_POLICY = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


@pytest.fixture(scope="module")
def installed(stack: Stack) -> Stack:
    # `can-i` answers no for a resource the API server does not serve: the SparkApplication
    # check needs its CRD, which other tests installed when this one ran after them.
    install_spark_operator_crd(stack)
    docs = [d for d in render(stack, "overlays/kind") if d["kind"] not in ADMISSION_POLICY]
    for doc in docs:
        if doc["kind"] == "Deployment":
            # The object as rendered, but no pod: the base's operator watches every
            # namespace, and these tests share the stack with others (helpers/sharing.py).
            # Only its service account's grants are asked about here.
            doc["spec"]["replicas"] = 0
    # The base's grants alone: an earlier test may have left an overlay's (the local
    # overlay's open-tenancy ClusterRoleBinding reads Secrets in every namespace).
    base = {ident(d) for d in docs}
    delete_objects(
        stack,
        [
            d
            for overlay in OVERLAYS
            for d in render(stack, f"overlays/{overlay}")
            if d["kind"] in RBAC_KINDS and ident(d) not in base
        ],
    )
    stack.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(docs))
    return stack


@contextmanager
def overlay_rbac(stack: Stack, overlay: str) -> Iterator[None]:
    """The RBAC_KINDS the overlay adds to the base (ClusterRoles, and the components' Roles in
    the Kafka's namespace), applied for real and deleted again after (so a later test sees
    the base's grants alone). Only these: the overlay's Deployment would start an operator
    on the local node."""
    base = {ident(d) for d in render(stack, "base")}
    added = [
        d
        for d in render(stack, f"overlays/{overlay}")
        if d["kind"] in RBAC_KINDS and ident(d) not in base
    ]
    assert added, f"overlay {overlay} adds no RBAC_KINDS"
    delete_objects(stack, added)  # a test before may have left them (the local overlay adds some)
    stack.kubectl("create", "namespace", KAFKA_NS, check=False)
    stack.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump_all(added)
    )
    try:
        yield
    finally:
        delete_objects(stack, added)


def dry_run(stack: Stack, overlay: str) -> tuple[str, str]:
    """The overlay rendered, and what a server-side dry run of it answered (asserted ok)."""
    # A server-side dry run of namespaced objects needs their namespace to exist: the
    # operator's, and the Kafka's the components' Roles are in.
    stack.kubectl("apply", "-f", str(REPO / "manifests" / "base" / "namespace.yaml"))
    stack.kubectl("create", "namespace", KAFKA_NS, check=False)
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


OVERLAYS = sorted(p.name for p in (REPO / "manifests" / "overlays").iterdir() if p.is_dir())


@pytest.mark.stack
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_passes_server_side_dry_run(stack: Stack, overlay: str) -> None:
    _, answer = dry_run(stack, overlay)
    assert "deployment.apps/kafka-retention-operator" in answer
    assert "clusterrolebinding.rbac.authorization.k8s.io/kafka-retention-operator" in answer


@pytest.mark.stack
@pytest.mark.parametrize(
    ("verb", "resource"),
    [
        ("watch", "recordpurges.kafka-retention.io"),
        ("patch", "recordpurges.kafka-retention.io/status"),
        ("watch", "recorderasures.kafka-retention.io"),
        ("patch", "recorderasures.kafka-retention.io/status"),
        ("patch", "retentionpolicies.kafka-retention.io"),
        ("patch", "retentionpolicies.kafka-retention.io/status"),
        ("create", "events"),
        # The purge's plan and ledger ConfigMaps (ConfigMapStore), in every Spark mode.
        ("create", "configmaps"),
        ("update", "configmaps"),
        ("list", "configmaps"),
        ("deletecollection", "configmaps"),
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
def test_operator_gets_secrets_in_its_own_namespace_only(installed: Stack) -> None:
    # A KafkaClusterBinding's clientConfigSecret is in the operator's namespace (the
    # base's Role there); no other namespace's Secret is readable (tests/integration/
    # test_rbac.py asks more).
    assert can_i(installed, "get", "secrets", namespace="kafka-retention-system") == "yes"
    assert can_i(installed, "get", "secrets", expect="no") == "no"


@pytest.mark.stack
def test_base_runs_strict_tenancy_knows_its_namespace_and_ships_the_admission_policy(
    stack: Stack,
) -> None:
    for path in ["base", *(f"overlays/{o}" for o in OVERLAYS if o != "local")]:
        docs = render(stack, path)
        (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert "--tenancy=strict" in container["args"], path
        env = {e["name"]: e for e in container["env"]}
        assert env["POD_NAMESPACE"]["valueFrom"] == {
            "fieldRef": {"fieldPath": "metadata.namespace"}
        }, path
        kinds = {d["kind"]: d for d in docs}
        for kind in ADMISSION_POLICY:
            assert kind in kinds, f"{path} has no {kind}"
            # Cluster-scoped: kustomize must not have given it a namespace.
            assert "namespace" not in kinds[kind]["metadata"], (path, kind)
        # No Secret readable cluster-wide, no exec and no pods cluster-wide, in any overlay
        # (Spark's pods run in the operator's namespace, by Roles there).
        for role in docs:
            name = role["metadata"]["name"]
            if role["kind"] != "ClusterRole":
                continue
            resources = {r for rule in role["rules"] for r in rule["resources"]}
            assert not resources & {"secrets", "pods/exec", "pods"}, (path, name)


@pytest.mark.stack
def test_local_overlay_runs_open_tenancy_without_the_admission_policy(stack: Stack) -> None:
    # The local stack's tests name bootstrap servers; the base's policy, applied there,
    # would refuse them in every namespace.
    docs = render(stack, "overlays/local")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--tenancy=open" in args
    assert "--tenancy=strict" not in args
    assert not [d for d in docs if d["kind"] in ADMISSION_POLICY]
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ClusterRoleBinding", "kafka-retention-open-tenancy") in names


OPERATOR_NS = "kafka-retention-system"
# What Spark in pods needs beyond the base: spark-submit's driver pod, its service and
# NetworkPolicy, the owner-reference patch on its ConfigMaps, a SparkApplication.
SPARK_IN_PODS = [
    ("create", "pods"),
    ("watch", "pods"),
    ("delete", "pods"),
    ("create", "services"),
    ("create", "networkpolicies.networking.k8s.io"),
    ("patch", "configmaps"),
    ("create", "sparkapplications.sparkoperator.k8s.io"),
]


@pytest.mark.stack
def test_only_the_spark_on_kubernetes_overlay_lets_the_operator_run_spark_pods(
    installed: Stack,
) -> None:
    with overlay_rbac(installed, "spark-on-kubernetes"):
        for verb, resource in SPARK_IN_PODS:
            answer = can_i(installed, verb, resource, namespace=OPERATOR_NS)
            assert answer == "yes", f"cannot {verb} {resource}"
            # In the operator's namespace only: never where a tenant's policies are.
            answer = can_i(installed, verb, resource, namespace="default", expect="no")
            assert answer == "no", f"may {verb} {resource} outside {OPERATOR_NS}"
    # The base alone (what the kind overlay installed) runs Spark in its own process.
    for verb, resource in SPARK_IN_PODS:
        answer = can_i(installed, verb, resource, namespace=OPERATOR_NS, expect="no")
        assert answer == "no", f"base may {verb} {resource}"


@pytest.mark.stack
def test_local_overlay_carries_the_spark_on_kubernetes_grants(stack: Stack) -> None:
    # The local node runs driver and executor pods (tests/e2e/test_in_cluster.py).
    names = {(d["kind"], d["metadata"]["name"]) for d in render(stack, "overlays/local")}
    assert ("RoleBinding", "kafka-retention-spark-on-kubernetes") in names
    assert ("RoleBinding", "kafka-retention-spark-driver") in names


@pytest.mark.stack
def test_spark_on_kubernetes_overlay_runs_spark_in_pods(stack: Stack) -> None:
    docs = render(stack, "overlays/spark-on-kubernetes")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--spark-mode") + 1] == "kubernetes"
    assert args[args.index("--spark-service-account") + 1] == "kafka-retention-spark"
    base = render(stack, "base")
    (base_deployment,) = [d for d in base if d["kind"] == "Deployment"]
    assert (
        "--spark-mode" not in base_deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    )


@pytest.mark.stack
def test_spark_namespace_kit_lets_the_operator_run_and_the_driver_write_its_plan_there(
    installed: Stack, namespace: str
) -> None:
    """Open tenancy's runs happen in the policy's namespace: the kit grants both there,
    and nowhere else, by itself (no ClusterRole to bind)."""
    rendered = installed.kubectl("kustomize", str(REPO / "manifests" / "spark-namespace")).stdout
    assert not [d for d in yaml.safe_load_all(rendered) if d and d["kind"].startswith("Cluster")]
    installed.kubectl("apply", "-n", namespace, "-f", "-", stdin=rendered)
    driver = f"system:serviceaccount:{namespace}:kafka-retention-spark"
    for verb, resource in (("create", "configmaps"), ("create", "pods"), ("get", "secrets")):
        answer = can_i(installed, verb, resource, namespace=namespace, user=driver)
        assert answer == "yes", f"driver cannot {verb} {resource}"
    other = can_i(installed, "create", "configmaps", user=driver, expect="no")
    assert other == "no"
    for verb, resource in SPARK_IN_PODS:
        assert can_i(installed, verb, resource, namespace=namespace) == "yes", resource
        answer = can_i(installed, verb, resource, namespace="default", expect="no")
        assert answer == "no", f"operator may {verb} {resource} outside the kit's namespace"


@pytest.mark.stack
def test_strimzi_overlay_reads_kafkas_and_users_and_execs_into_brokers(
    installed: Stack,
) -> None:
    # `can-i` answers no for a resource the API server does not serve.
    installed.kubectl("apply", "--server-side", "-f", str(STRIMZI_CRDS))
    installed.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/kafkas.kafka.strimzi.io",
        "crd/kafkausers.kafka.strimzi.io",
    )
    read = [f"{plural}.kafka.strimzi.io" for plural in ("kafkas", "kafkausers")]
    for resource in read:
        assert can_i(installed, "get", resource, expect="no") == "no", f"base may get {resource}"
    with overlay_rbac(installed, "strimzi"):
        for resource in read:
            assert can_i(installed, "get", resource) == "yes", f"cannot get {resource}"
            # The operator reads the objects a spec names; it lists and watches none.
            assert can_i(installed, "list", resource, expect="no") == "no", resource
        # Read only: Strimzi's operator owns these.
        assert can_i(installed, "patch", "kafkas.kafka.strimzi.io", expect="no") == "no"
        assert can_i(installed, "create", "kafkausers.kafka.strimzi.io", expect="no") == "no"
        # Strimzi's CA and KafkaUser Secrets, in the Kafka's namespace only.
        assert can_i(installed, "get", "secrets", namespace=KAFKA_NS) == "yes"
        assert can_i(installed, "get", "secrets", expect="no") == "no"
        # Orphan cleanup by exec into the broker pods (components/orphan-cleanup), in
        # their namespace only.
        assert can_i(installed, "create", "pods", "--subresource=exec", namespace=KAFKA_NS) == "yes"
        assert can_i(installed, "list", "pods", namespace=KAFKA_NS) == "yes"
        exec_elsewhere = can_i(installed, "create", "pods", "--subresource=exec", expect="no")
        assert exec_elsewhere == "no"
    assert can_i(installed, "get", "kafkas.kafka.strimzi.io", expect="no") == "no"


@pytest.mark.stack
def test_only_the_orphan_cleanup_overlay_lets_the_operator_exec_into_pods(
    installed: Stack,
) -> None:
    with overlay_rbac(installed, "orphan-cleanup"):
        for verb in ("create", "get"):
            answer = can_i(installed, verb, "pods", "--subresource=exec", namespace=KAFKA_NS)
            assert answer == "yes", verb
        # In the brokers' namespace only.
        assert can_i(installed, "create", "pods", "--subresource=exec", expect="no") == "no"
    exec_in_kafka = can_i(
        installed, "create", "pods", "--subresource=exec", namespace=KAFKA_NS, expect="no"
    )
    assert exec_in_kafka == "no"


@pytest.mark.stack
def test_ha_overlay_runs_two_peered_replicas_kept_apart_and_one_always_up(stack: Stack) -> None:
    rendered, _ = dry_run(stack, "ha")
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(rendered) if d}
    deployment = docs[("Deployment", "kafka-retention-operator")]
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[args.index("--peering") + 1] == "kafka-retention"
    # Its name among peers, and its own namespace (where bindings' Secrets are read).
    assert {e["name"] for e in container["env"]} >= {"POD_NAME", "POD_NAMESPACE"}
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
