"""Strict tenancy on a real API server (issue #26): the operator's grants follow the
KafkaClusterBindings, and the ValidatingAdmissionPolicy refuses a spec that names a
cluster itself.

RBAC: Secrets are read in the operator's own namespace only (a binding's
clientConfigSecret), exec into broker pods and Strimzi's Secrets only in the Kafka's
namespace (the components' Roles, placeholder namespace `kafka`), Spark's pods only in
the operator's own namespace (where bound policies' runs happen), and with the chart's
watch.namespaces the namespaced resources only in those namespaces. Each test asks
`kubectl auth can-i --as` the operator's service account what it may do, and what it may
not.

Admission: the base's policy, bound to one fresh namespace only (the stack is shared by
every test of the session, whose resources name bootstrap servers), refuses RecordPurges
and RetentionPolicies whose spec.cluster sets bootstrapServers, strimzi,
clientConfigSecret or brokers, naming the field, and admits one with only clusterRef.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack import build
from devstack.stack import Stack
from tests.helpers.manifests import STRIMZI_CRDS, delete_objects, ident, kustomize_base_with, render
from tests.helpers.paths import REPO
from tests.helpers.rbac import KAFKA_NS, RBAC_KINDS, SA, can_i

# It deletes overlay RBAC and creates a cluster-scoped ValidatingAdmissionPolicy (bound to
# its own namespace).

OPERATOR_NS = "kafka-retention-system"
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
BINDINGS = "kafkaclusterbindings.kafka-retention.io"
EXEC = ("create", "pods", "--subresource=exec")

Key = tuple[str, str, str]


def apply(stack: Stack, docs: list[dict[str, Any]]) -> None:
    stack.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump_all(docs)
    )


def rbac(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] in RBAC_KINDS]


def create_namespace(stack: Stack, name: str) -> None:
    stack.kubectl("create", "namespace", name, check=False)  # another test may have made it


@pytest.fixture(scope="module")
def base(stack: Stack) -> Stack:
    """The base's CRDs, namespace, service account and RBAC, applied for real, and nothing
    any overlay or component adds (an earlier test may have left the local overlay's
    open-tenancy or Spark grants, or a component's Roles): what every install has. No
    Deployment (it would start an operator) and no admission policy (it would refuse the
    other tests' resources in every namespace)."""
    create_namespace(stack, KAFKA_NS)
    stack.kubectl("apply", "--server-side", "-f", str(STRIMZI_CRDS))
    docs = render(stack, "base")
    keep = {ident(d) for d in docs}
    extra = [
        d
        for path in ("overlays/local", "overlays/strimzi", "overlays/spark-on-kubernetes")
        for d in rbac(render(stack, path))
        if ident(d) not in keep
    ]
    delete_objects(stack, extra)
    apply(stack, [d for d in docs if d["kind"] not in ("Deployment", *POLICY_KINDS)])
    stack.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        f"crd/{BINDINGS}",
        "crd/kafkas.kafka.strimzi.io",
        "crd/kafkausers.kafka.strimzi.io",
    )
    return stack


@contextmanager
def component(stack: Stack, name: str) -> Iterator[list[dict[str, Any]]]:
    """What an overlay with only this component adds to the base (its RBAC), applied for
    real and deleted after, so a later test sees the base's grants alone."""
    added = [d for d in rbac(render(stack, f"overlays/{name}")) if ident(d) not in base_keys(stack)]
    assert added, f"overlays/{name} adds no RBAC"
    apply(stack, added)
    try:
        yield added
    finally:
        delete_objects(stack, added)


def base_keys(stack: Stack) -> set[Key]:
    return {ident(d) for d in render(stack, "base")}


# --- the base: what every install is granted, and what it is not --------------------


@pytest.mark.stack
@pytest.mark.parametrize(
    ("verb", "resource", "namespace"),
    [
        ("watch", "retentionpolicies.kafka-retention.io", "default"),
        ("patch", "recordpurges.kafka-retention.io/status", "team-a"),
        # Cluster-scoped: the namespace is ignored.
        ("get", BINDINGS, "default"),
        ("list", BINDINGS, "default"),
        ("watch", BINDINGS, "default"),
        ("watch", "namespaces", "default"),
        # A binding's clientConfigSecret, in the operator's own namespace.
        ("get", "secrets", OPERATOR_NS),
    ],
)
def test_strict_base_grants(base: Stack, verb: str, resource: str, namespace: str) -> None:
    assert can_i(base, verb, resource, namespace=namespace) == "yes", f"{verb} {resource}"


@pytest.mark.stack
@pytest.mark.parametrize(
    ("verb", "resource", "where"),
    [
        # A binding's Secret is in the operator's namespace: no other namespace's.
        ("get", "secrets", "default"),
        ("get", "secrets", KAFKA_NS),
        # By name only, even at home: no list, no watch, nowhere.
        ("list", "secrets", OPERATOR_NS),
        ("watch", "secrets", OPERATOR_NS),
        ("list", "secrets", "--all-namespaces"),
        ("get", "secrets", "--all-namespaces"),
        # The administrator's bindings are read, never written by the operator.
        ("create", BINDINGS, "default"),
        ("patch", BINDINGS, "default"),
        # No exec and no pods without a component.
        ("create", "pods --subresource=exec", KAFKA_NS),
        ("get", "pods --subresource=exec", KAFKA_NS),
        ("list", "pods", KAFKA_NS),
        ("get", "kafkas.kafka.strimzi.io", KAFKA_NS),
    ],
)
def test_strict_base_does_not_grant(base: Stack, verb: str, resource: str, where: str) -> None:
    resource, *flags = resource.split()
    if where == "--all-namespaces":
        # With -n naming the one namespace where the answer would be yes: -A overrides it.
        answer = can_i(
            base, verb, resource, *flags, "--all-namespaces", namespace=OPERATOR_NS, expect="no"
        )
    else:
        answer = can_i(base, verb, resource, *flags, namespace=where, expect="no")
    assert answer == "no", f"{SA} may {verb} {resource} in {where}"


# --- components: exec and Strimzi's Secrets in the Kafka's namespace only ----------


@pytest.mark.stack
def test_orphan_cleanup_execs_into_pods_in_the_brokers_namespace_only(
    base: Stack, namespace: str
) -> None:
    with component(base, "orphan-cleanup") as added:
        assert {d["kind"] for d in added} == {"Role", "RoleBinding"}, "no cluster-wide grant"
        assert {d["metadata"]["namespace"] for d in added} == {KAFKA_NS}
        for verb, resource, *flags in (EXEC, ("get", "pods", "--subresource=exec")):
            assert can_i(base, verb, resource, *flags, namespace=KAFKA_NS) == "yes"
        assert can_i(base, "list", "pods", namespace=KAFKA_NS) == "yes"
        # Anywhere else (a tenant's namespace, the operator's own): nothing.
        for other in (namespace, OPERATOR_NS, "default"):
            assert can_i(base, *EXEC, namespace=other, expect="no") == "no", other
            assert can_i(base, "list", "pods", namespace=other, expect="no") == "no", other
        assert can_i(base, "list", "pods", "--all-namespaces", expect="no") == "no"
    assert can_i(base, *EXEC, namespace=KAFKA_NS, expect="no") == "no"


@pytest.mark.stack
def test_strimzi_reads_secrets_in_the_kafkas_namespace_only_and_grants_no_exec(
    base: Stack, namespace: str
) -> None:
    strimzi_only = [
        d
        for d in rbac(render(base, "overlays/strimzi"))
        if ident(d) not in base_keys(base) and "strimzi" in d["metadata"]["name"]
    ]
    apply(base, strimzi_only)
    try:
        for resource in ("kafkas.kafka.strimzi.io", "kafkausers.kafka.strimzi.io"):
            assert can_i(base, "get", resource, namespace=namespace) == "yes", resource
            assert can_i(base, "patch", resource, expect="no") == "no", resource
        # The cluster CA and the KafkaUser's Secret: by name, in the Kafka's namespace.
        assert can_i(base, "get", "secrets", namespace=KAFKA_NS) == "yes"
        assert can_i(base, "list", "secrets", namespace=KAFKA_NS, expect="no") == "no"
        assert can_i(base, "get", "secrets", namespace=namespace, expect="no") == "no"
        # The Strimzi component alone grants no exec anywhere.
        assert can_i(base, *EXEC, namespace=KAFKA_NS, expect="no") == "no"
    finally:
        delete_objects(base, strimzi_only)
    assert can_i(base, "get", "secrets", namespace=KAFKA_NS, expect="no") == "no"


@pytest.mark.stack
def test_strimzi_overlay_grants_nothing_cluster_wide_but_reading_kafkas(base: Stack) -> None:
    added = [d for d in rbac(render(base, "overlays/strimzi")) if ident(d) not in base_keys(base)]
    cluster_rules = [rule for d in added if d["kind"] == "ClusterRole" for rule in d["rules"]]
    assert cluster_rules == [
        {"apiGroups": ["kafka.strimzi.io"], "resources": ["kafkas", "kafkausers"], "verbs": ["get"]}
    ]
    assert {
        d["metadata"].get("namespace") for d in added if d["kind"] in ("Role", "RoleBinding")
    } == {KAFKA_NS}


@pytest.mark.stack
def test_brokers_namespace_patch_from_the_component_comment_moves_the_exec_grant(
    base: Stack, tmp_path: Path, namespace: str
) -> None:
    """The patch that components/orphan-cleanup/kustomization.yaml documents, in an
    overlay of one's own, grants exec in that namespace instead of `kafka`."""
    patches = [
        {
            "target": {"kind": kind, "name": "kafka-retention-orphan-cleanup"},
            "patch": json.dumps(
                [{"op": "replace", "path": "/metadata/namespace", "value": namespace}]
            ),
        }
        for kind in ("Role", "RoleBinding")
    ]
    documented = (
        REPO / "manifests" / "components" / "orphan-cleanup" / "kustomization.yaml"
    ).read_text()
    assert '"op": "replace", "path": "/metadata/namespace"' in documented
    out = kustomize_base_with(base, tmp_path, ["orphan-cleanup"], patches=patches)
    added = [d for d in rbac(out) if ident(d) not in base_keys(base)]
    assert {(d["kind"], d["metadata"]["namespace"]) for d in added} == {
        ("Role", namespace),
        ("RoleBinding", namespace),
    }
    apply(base, added)
    try:
        assert can_i(base, *EXEC, namespace=namespace) == "yes"
        assert can_i(base, *EXEC, namespace=KAFKA_NS, expect="no") == "no"
    finally:
        delete_objects(base, added)


# --- Spark in pods: in the operator's namespace only ----------------------------------

SPARK_DRIVER = f"system:serviceaccount:{OPERATOR_NS}:kafka-retention-spark"
RUN_OBJECTS = (
    ("create", "pods"),
    ("delete", "pods"),
    ("watch", "pods"),
    ("create", "services"),
    ("create", "configmaps"),
    ("delete", "configmaps"),
    ("create", "networkpolicies.networking.k8s.io"),
)


@pytest.mark.stack
def test_spark_in_pods_creates_pods_in_the_operators_namespace_and_in_no_tenants(
    base: Stack, namespace: str
) -> None:
    """Bound policies' Spark runs happen in the operator's namespace, where no tenant
    writes: the component's grants are Roles there, so the operator cannot create a pod
    (or a run's service) in a tenant's namespace, nor anywhere cluster-wide."""
    with component(base, "spark-on-kubernetes") as added:
        assert {d["kind"] for d in added} == {"Role", "RoleBinding"}, "no cluster-wide grant"
        assert {d["metadata"]["namespace"] for d in added} == {OPERATOR_NS}
        for verb, resource in RUN_OBJECTS:
            assert can_i(base, verb, resource, namespace=OPERATOR_NS) == "yes", (verb, resource)
        for verb, resource in (("create", "pods"), ("delete", "pods"), ("create", "services")):
            for tenant in (namespace, "default"):
                answer = can_i(base, verb, resource, namespace=tenant, expect="no")
                assert answer == "no", f"{SA} may {verb} {resource} in {tenant}"
            answer = can_i(
                base, verb, resource, "--all-namespaces", namespace=OPERATOR_NS, expect="no"
            )
            assert answer == "no", f"{SA} may {verb} {resource} in every namespace"
        # Still no exec, and still Secrets by name only.
        assert can_i(base, *EXEC, namespace=OPERATOR_NS, expect="no") == "no"
        assert can_i(base, "list", "secrets", namespace=OPERATOR_NS, expect="no") == "no"
    # Gone with the component: the base runs Spark in the operator's own process.
    assert can_i(base, "create", "pods", namespace=OPERATOR_NS, expect="no") == "no"


@pytest.mark.stack
def test_the_spark_driver_runs_its_executors_at_home_and_reads_no_bindings_secret(
    base: Stack, namespace: str
) -> None:
    """The driver's service account, in the operator's namespace: its executors, request
    and plan ConfigMaps there; not the bindings' Secrets next to them; nothing elsewhere."""
    with component(base, "spark-on-kubernetes"):
        for verb, resource in (("create", "pods"), ("create", "services"), ("get", "configmaps")):
            answer = can_i(base, verb, resource, namespace=OPERATOR_NS, user=SPARK_DRIVER)
            assert answer == "yes", (verb, resource)
        for verb, resource, where in (
            ("get", "secrets", OPERATOR_NS),
            ("create", "pods", namespace),
            ("create", "configmaps", namespace),
            ("get", "configmaps", namespace),
        ):
            answer = can_i(base, verb, resource, namespace=where, user=SPARK_DRIVER, expect="no")
            assert answer == "no", f"the driver may {verb} {resource} in {where}"


# --- the chart with watch.namespaces: Roles where it watches ------------------------

CHART = REPO / "charts" / "kafka-retention-operator"
CHART_RELEASE = "kro-rbac-test"
CHART_NS = "kafka-retention-rbac-test"


@pytest.mark.stack
def test_chart_with_watch_namespaces_grants_the_namespaced_resources_there_only(
    stack: Stack, namespace: str
) -> None:
    create_namespace(stack, KAFKA_NS)
    done = subprocess.run(
        [
            str(build.helm()),
            "template",
            CHART_RELEASE,
            str(CHART),
            "-n",
            CHART_NS,
            "--set",
            "createNamespace=true",
            "--set",
            "watch.allNamespaces=false",
            "--set",
            f"watch.namespaces={{{namespace}}}",
            "--set",
            "orphanCleanup.enabled=true",
            "--set",
            "sparkOnKubernetes.enabled=true",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    # Neither a pod (replicas 0 would still be an operator's Deployment: left out) nor the
    # cluster-wide admission policy (the other tests' resources name bootstrap servers).
    applied = [d for d in docs if d["kind"] in ("Namespace", "ServiceAccount", *RBAC_KINDS)]
    # Spark in pods adds Roles in the chart's namespace only, no ClusterRole.
    (cluster_role,) = [d for d in applied if d["kind"] == "ClusterRole"]
    cluster_resources = {r for rule in cluster_role["rules"] for r in rule["resources"]}
    assert cluster_resources == {"kafkaclusterbindings", "customresourcedefinitions", "namespaces"}
    sa = f"system:serviceaccount:{CHART_NS}:{CHART_RELEASE}-operator"
    apply(stack, applied)
    try:
        for verb, resource in (
            ("watch", "retentionpolicies.kafka-retention.io"),
            ("patch", "recordpurges.kafka-retention.io/status"),
            ("deletecollection", "configmaps"),
            ("create", "events"),
            ("create", "kopfpeerings.kopf.dev"),
        ):
            assert can_i(stack, verb, resource, namespace=namespace, user=sa) == "yes", resource
            answer = can_i(stack, verb, resource, namespace="default", user=sa, expect="no")
            assert answer == "no", f"{verb} {resource} outside the watched namespace"
        answer = can_i(
            stack,
            "watch",
            "retentionpolicies.kafka-retention.io",
            "--all-namespaces",
            user=sa,
            expect="no",
        )
        assert answer == "no"
        assert can_i(stack, "get", BINDINGS, user=sa) == "yes"
        assert can_i(stack, "get", "secrets", namespace=CHART_NS, user=sa) == "yes"
        assert can_i(stack, "get", "secrets", namespace=namespace, user=sa, expect="no") == "no"
        assert can_i(stack, *EXEC, namespace=KAFKA_NS, user=sa) == "yes"
        assert can_i(stack, *EXEC, namespace=namespace, user=sa, expect="no") == "no"
        # Spark in pods: in the chart's namespace, not in the watched one.
        assert can_i(stack, "create", "pods", namespace=CHART_NS, user=sa) == "yes"
        assert can_i(stack, "create", "pods", namespace=namespace, user=sa, expect="no") == "no"
        driver = f"system:serviceaccount:{CHART_NS}:{CHART_RELEASE}-spark"
        assert can_i(stack, "create", "pods", namespace=CHART_NS, user=driver) == "yes"
        answer = can_i(stack, "get", "secrets", namespace=CHART_NS, user=driver, expect="no")
        assert answer == "no"
    finally:
        delete_objects(stack, [d for d in applied if d["kind"] != "Namespace"])
        stack.kubectl("delete", "namespace", CHART_NS, "--wait=false", check=False)


# --- the admission policy -----------------------------------------------------------

API = "kafka-retention.io/v1alpha1"
MESSAGE = "strict tenancy: name a KafkaClusterBinding in spec.cluster.clusterRef"
BOOTSTRAP = {"bootstrapServers": "kafka-bootstrap.kafka:9092"}
STRIMZI = {"strimzi": {"kafka": "events", "namespace": "kafka", "listener": "tls"}}


def resource(kind: str, name: str, cluster: dict[str, Any]) -> dict[str, Any]:
    if kind == "RetentionPolicy":
        spec: dict[str, Any] = {
            "cluster": cluster,
            "topics": {"names": ["orders"]},
            "interval": "5m",
            "deleteBefore": "2026-11-01T00:00:00Z",
        }
    else:
        spec = {
            "cluster": cluster,
            "partitions": [{"topic": "orders", "partition": 0, "offset": 1}],
        }
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def create(
    stack: Stack, namespace: str, obj: dict[str, Any], *flags: str
) -> subprocess.CompletedProcess[str]:
    return stack.kubectl(
        "create", "-n", namespace, *flags, "-f", "-", stdin=json.dumps(obj), check=False
    )


@contextmanager
def strict_tenancy(stack: Stack, namespace: str) -> Iterator[None]:
    """The base's admission policy as rendered, bound as the base binds it but to this
    namespace only; returns once the API server enforces it (it loads policies and
    bindings from a watch, a moment after they are written), and removes both after."""
    docs = render(stack, "base")
    (policy,) = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    # The shipped binding: every namespace, no one exempt, requests denied.
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    scoped = copy.deepcopy(binding)
    scoped["metadata"]["name"] = f"{binding['metadata']['name']}-{namespace}"
    scoped["spec"]["matchResources"] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    }
    apply(stack, [policy, scoped])
    try:
        probe = resource("RetentionPolicy", "enforced-yet", BOOTSTRAP)
        deadline = time.monotonic() + 60
        while True:
            done = create(stack, namespace, probe, "--dry-run=server")
            if done.returncode:
                assert MESSAGE in done.stderr, done.stderr
                break
            assert time.monotonic() < deadline, "the policy is not enforced 60 s after its binding"
            time.sleep(0.2)
        # The controller-manager type-checks the expressions against both kinds' schemas.
        name = policy["metadata"]["name"]
        while True:
            got = stack.kubectl("get", "validatingadmissionpolicy", name, "-o", "json").stdout
            status = json.loads(got).get("status") or {}
            if "typeChecking" in status:
                assert not status["typeChecking"].get("expressionWarnings"), status
                break
            assert time.monotonic() < deadline, f"no type check of {name} in 60 s"
            time.sleep(0.2)
        yield
    finally:
        delete_objects(stack, [scoped, policy])


@pytest.mark.stack
@pytest.mark.parametrize("kind", ["RetentionPolicy", "RecordPurge"])
def test_strict_tenancy_policy_refuses_a_cluster_named_in_the_spec(
    stack: Stack, namespace: str, kind: str
) -> None:
    cases: list[tuple[dict[str, Any], list[str]]] = [
        (BOOTSTRAP, ["spec.cluster.bootstrapServers"]),
        (STRIMZI, ["spec.cluster.strimzi"]),
        (
            {**BOOTSTRAP, "clientConfigSecret": "kafka-admin"},
            ["spec.cluster.bootstrapServers", "spec.cluster.clientConfigSecret"],
        ),
        (
            {**STRIMZI, "clientConfigSecret": "kafka-admin"},
            ["spec.cluster.strimzi", "spec.cluster.clientConfigSecret"],
        ),
    ]
    if kind == "RetentionPolicy":  # a RecordPurge's schema has no brokers
        cases.append(
            (
                {
                    **BOOTSTRAP,
                    "brokers": {"access": "exec", "podSelector": {"matchLabels": {"app": "kafka"}}},
                },
                ["spec.cluster.bootstrapServers", "spec.cluster.brokers"],
            )
        )
    with strict_tenancy(stack, namespace):
        for i, (cluster, fields) in enumerate(cases):
            done = create(stack, namespace, resource(kind, f"inline-{i}", cluster))
            assert done.returncode != 0, f"{kind} with {cluster} was admitted"
            assert f"{', '.join(fields)}: {MESSAGE}" in done.stderr, done.stderr
            assert "ValidatingAdmissionPolicy 'kafka-retention-strict-tenancy'" in done.stderr
        # None was stored.
        listed = stack.kubectl("get", kind.lower(), "-n", namespace, "-o", "name")
        assert listed.stdout.strip() == ""
        # A binding named, and nothing else: admitted (no binding need exist to apply it).
        done = create(
            stack, namespace, resource(kind, "by-binding", {"clusterRef": "team-a-kafka"})
        )
        assert done.returncode == 0, done.stderr
        stored = json.loads(
            stack.kubectl("get", kind.lower(), "by-binding", "-n", namespace, "-o", "json").stdout
        )
        assert stored["spec"]["cluster"] == {"clusterRef": "team-a-kafka"}


@pytest.mark.stack
def test_strict_tenancy_policy_lets_a_resource_made_before_it_be_finished(
    stack: Stack, namespace: str
) -> None:
    """Updates that leave spec alone (labels, annotations, finalizers: all the operator and
    Kopf write) are not checked, so a resource that named its cluster inline before strict
    tenancy can still be finished and deleted; a change of its spec is refused."""
    legacy = resource("RetentionPolicy", "legacy", BOOTSTRAP)
    legacy["metadata"]["finalizers"] = ["kafka-retention.io/test"]
    done = create(stack, namespace, legacy)
    assert done.returncode == 0, done.stderr
    name = ("retentionpolicy", "legacy", "-n", namespace)
    with strict_tenancy(stack, namespace):
        stack.kubectl("label", *name, "team=a")
        stack.kubectl("annotate", *name, "kafka-retention.io/note=kept")
        done = stack.kubectl(
            "patch", *name, "--type=merge", "-p", '{"spec": {"interval": "10m"}}', check=False
        )
        assert done.returncode != 0, "a legacy resource's spec was changed"
        assert f"spec.cluster.bootstrapServers: {MESSAGE}" in done.stderr, done.stderr
        stack.kubectl("delete", *name, "--wait=false")
        stack.kubectl(
            "patch",
            *name,
            "--type=json",
            "-p",
            '[{"op": "remove", "path": "/metadata/finalizers"}]',
        )
        deadline = time.monotonic() + 30
        while stack.kubectl("get", *name, check=False).returncode == 0:
            assert time.monotonic() < deadline, "the legacy resource is still there"
            time.sleep(0.2)
