"""The Helm chart (charts/kafka-retention-operator) renders what manifests/ renders with
kustomize, profile for overlay, and its default rendering installs on a real API server
with the grants the operator needs."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack import build
from devstack.stack import Stack
from tests.helpers.manifests import kustomize_base_with
from tests.helpers.paths import REPO

CHART = REPO / "charts" / "kafka-retention-operator"
NAMESPACE = "kafka-retention-system"
# Release kafka-retention names every object as manifests/ does (values.yaml, namePrefix).
RELEASE = "kafka-retention"
# Each overlay and the chart's profile for it (ci/<overlay>-values.yaml); the base is
# the chart's default values.
OVERLAYS = ["ha", "orphan-cleanup", "spark-on-kubernetes", "strimzi"]
# Labels helm puts on its objects (and the instance label also on the operator's pod
# template and selectors, so two releases' pods stay apart) which manifests/ has no
# counterpart of: the only difference between the two renderings that is normalised away.
HELM_LABELS = frozenset(
    {
        "app.kubernetes.io/instance",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/version",
        "helm.sh/chart",
    }
)

Key = tuple[str, str, str]
ADMISSION_POLICY = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


@pytest.fixture(scope="module")
def helm() -> Path:
    return build.helm()


def helm_template(helm: Path, *args: str, release: str = RELEASE) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(helm), "template", release, str(CHART), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def chart_with(helm: Path, *values: str) -> list[dict[str, Any]]:
    """The chart rendered in NAMESPACE with these `--set` values."""
    return helm_template(helm, "-n", NAMESPACE, *(arg for v in values for arg in ("--set", v)))


def by_key(docs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", "")): d for d in docs}


def without_helm_labels(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_helm_labels(v) for k, v in value.items() if k not in HELM_LABELS}
    if isinstance(value, list):
        return [without_helm_labels(v) for v in value]
    return value


def kustomize(stack: Stack, path: str) -> list[dict[str, Any]]:
    out = stack.kubectl("kustomize", str(REPO / "manifests" / path)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_chart_crds_are_the_projects_crds() -> None:
    # helm installs a chart's crds/ as they are, so they must be crds/ itself (generated
    # by hack/crdgen.py): copy them over after `make crds`.
    ours = {p.name: p.read_bytes() for p in (REPO / "crds").glob("*.yaml")}
    ours.pop("kustomization.yaml")
    chart = {p.name: p.read_bytes() for p in (CHART / "crds").iterdir()}
    assert sorted(chart) == sorted(ours)
    for name, text in ours.items():
        assert chart[name] == text, f"charts/.../crds/{name} differs from crds/{name}"


@pytest.mark.stack
@pytest.mark.parametrize("overlay", [None, *OVERLAYS], ids=["base", *OVERLAYS])
def test_chart_renders_what_kustomize_renders(
    stack: Stack, helm: Path, overlay: str | None
) -> None:
    values = ["-f", str(CHART / "ci" / f"{overlay}-values.yaml")] if overlay else []
    # manifests/base carries its Namespace; the chart leaves it to --create-namespace
    # unless asked.
    chart = by_key(
        helm_template(
            helm, "-n", NAMESPACE, "--include-crds", "--set", "createNamespace=true", *values
        )
    )
    ours = by_key(kustomize(stack, f"overlays/{overlay}" if overlay else "base"))
    assert sorted(chart) == sorted(ours)
    for key, want in ours.items():
        if key[0] == "CustomResourceDefinition":
            # helm renders crds/ unlabelled, kustomize adds the base's labels: the files'
            # identity is test_chart_crds_are_the_projects_crds.
            continue
        got = without_helm_labels(chart[key])
        if key[0] in ("ClusterRole", "Role"):
            assert got["rules"] == want["rules"], key
        if key[0] == "Deployment":
            args = [c["args"] for c in got["spec"]["template"]["spec"]["containers"]]
            assert args == [c["args"] for c in want["spec"]["template"]["spec"]["containers"]]
        assert got == want, key


def test_values_schema_rejects_what_the_chart_cannot_render(helm: Path) -> None:
    for bad in (
        "replicas=two",
        "sparkOnKubernetes.mode=yarn",
        "orphanCleanUp.enabled=true",  # a misspelt toggle would silently grant nothing
        "podAntiAffinity=sometimes",
        "watch.allNamespaces=false",  # and no namespaces
        "tenancy=loose",
        "admissionPolicy.enabled=maybe",
        "orphanCleanup.brokerNamespaces[0]=Kafka_Brokers",  # a Role's namespace
        "strimzi.enabled=true,strimzi.namespaces=null",  # Secrets read nowhere
        "watch.namespaces[0]=team-*",  # a pattern: no Role can be made there
    ):
        done = subprocess.run(
            [str(helm), "template", RELEASE, str(CHART), "--set", bad],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0, f"--set {bad} rendered"
        assert "schema" in done.stderr, done.stderr


def test_chart_passes_helm_lint_with_each_profile(helm: Path) -> None:
    for overlay in [None, *OVERLAYS]:
        values = ["-f", str(CHART / "ci" / f"{overlay}-values.yaml")] if overlay else []
        done = subprocess.run(
            [str(helm), "lint", "--strict", str(CHART), *values],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


# The real install: its own release and namespace, so neither its namespaced objects nor
# its cluster-scoped ones (named after the release) touch what test_manifests installs.
TEST_RELEASE = "kro-chart-test"
TEST_NAMESPACE = "kafka-retention-chart-test"


@pytest.fixture
def chart_installed(stack: Stack, helm: Path) -> Iterator[list[dict[str, Any]]]:
    docs = helm_template(
        helm, "-n", TEST_NAMESPACE, "--set", "createNamespace=true", release=TEST_RELEASE
    )
    ours = {(d["kind"], d["metadata"]["name"]) for d in kustomize(stack, "overlays/strimzi")}
    ours |= {(d["kind"], d["metadata"]["name"]) for d in kustomize(stack, "overlays/local")}
    clash = {(d["kind"], d["metadata"]["name"]) for d in docs} & ours
    assert not clash, f"the test release would overwrite {clash}"
    for doc in docs:
        if doc["kind"] == "Deployment":
            # The object as rendered, but no pod: an operator watching every namespace
            # would reconcile the other tests' objects (its own peering, so it would act).
            doc["spec"]["replicas"] = 0
    # Nor the strict-tenancy admission policy: bound cluster-wide, it would refuse the
    # other tests' resources that name bootstrap servers (test_rbac.py tests it).
    docs = [d for d in docs if d["kind"] not in ADMISSION_POLICY]
    applied = yaml.safe_dump_all(docs)
    stack.kubectl("apply", "--server-side", "--field-manager=chart-test", "-f", "-", stdin=applied)
    try:
        yield docs
    finally:
        stack.kubectl(
            "delete", "--ignore-not-found", "--wait=false", "-f", "-", stdin=applied, check=False
        )


@pytest.mark.stack
def test_chart_default_install_lets_its_service_account_watch_purges(
    stack: Stack, chart_installed: list[dict[str, Any]]
) -> None:
    sa = f"system:serviceaccount:{TEST_NAMESPACE}:{TEST_RELEASE}-operator"

    def can_i(verb: str, resource: str, expect: str = "yes") -> str:
        # The authorizer learns of the new binding from a watch, a moment after the write.
        deadline = time.monotonic() + 10
        while True:
            done = stack.kubectl(
                "auth", "can-i", verb, resource, "-n", "default", "--as", sa, check=False
            )
            if done.stdout.strip() == expect or time.monotonic() > deadline:
                return done.stdout.strip()
            time.sleep(0.2)

    deployment = stack.kubectl(
        "get", "deployment", f"{TEST_RELEASE}-operator", "-n", TEST_NAMESPACE, "-o", "yaml"
    )
    assert (
        yaml.safe_load(deployment.stdout)["spec"]["template"]["spec"]["serviceAccountName"]
        == f"{TEST_RELEASE}-operator"
    )
    for verb, resource in (
        ("watch", "recordpurges.kafka-retention.io"),
        ("patch", "retentionpolicies.kafka-retention.io/status"),
        ("create", "clusterkopfpeerings.kopf.dev"),
        ("deletecollection", "configmaps"),
    ):
        assert can_i(verb, resource) == "yes", f"{sa} cannot {verb} {resource}"
    # The default is local-mode Spark and no exec: none of the optional grants.
    assert can_i("create", "pods", expect="no") == "no"
    assert can_i("delete", "secrets", expect="no") == "no"
    # Strict tenancy: Secrets by name in the release's namespace only.
    assert can_i("get", "secrets", expect="no") == "no"
    done = stack.kubectl(
        "auth", "can-i", "get", "secrets", "-n", TEST_NAMESPACE, "--as", sa, check=False
    )
    assert done.stdout.strip() == "yes"


def kinds(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d)
    return out


def container_args(docs: list[dict[str, Any]]) -> list[str]:
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_chart_tenancy_strict_by_default_with_the_admission_policy(helm: Path) -> None:
    docs = chart_with(helm)
    assert "--tenancy=strict" in container_args(docs)
    (policy,) = kinds(docs)["ValidatingAdmissionPolicy"]
    (binding,) = kinds(docs)["ValidatingAdmissionPolicyBinding"]
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    # Strict: Secrets only through the Role in the release's namespace.
    (role,) = kinds(docs)["Role"]
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    for cluster_role in kinds(docs)["ClusterRole"]:
        resources = {r for rule in cluster_role["rules"] for r in rule["resources"]}
        assert "secrets" not in resources, cluster_role["metadata"]["name"]
    # The admission policy can be left to the operator alone.
    docs = chart_with(helm, "admissionPolicy.enabled=false")
    assert "--tenancy=strict" in container_args(docs)
    assert not [d for d in docs if d["kind"] in ADMISSION_POLICY]


@pytest.mark.stack
def test_chart_open_tenancy_renders_what_the_open_tenancy_component_renders(
    stack: Stack, helm: Path, tmp_path: Path
) -> None:
    chart = by_key(chart_with(helm, "createNamespace=true", "tenancy=open"))
    assert "--tenancy=open" in container_args(list(chart.values()))
    rendered = by_key(kustomize_base_with(stack, tmp_path, ["open-tenancy"]))
    ours = {k: v for k, v in rendered.items() if k[0] != "CustomResourceDefinition"}
    assert sorted(chart) == sorted(ours)
    for k, want in ours.items():
        assert without_helm_labels(chart[k]) == want, k


def test_chart_grants_exec_and_strimzi_secrets_in_the_listed_namespaces_only(
    helm: Path,
) -> None:
    docs = chart_with(
        helm,
        "orphanCleanup.enabled=true",
        "orphanCleanup.brokerNamespaces={kafka-a,kafka-b}",
        "strimzi.enabled=true",
        "strimzi.namespaces={kafka-a}",
    )
    roles = {(d["metadata"]["name"], d["metadata"]["namespace"]): d for d in kinds(docs)["Role"]}
    bindings = {
        (d["metadata"]["name"], d["metadata"]["namespace"]) for d in kinds(docs)["RoleBinding"]
    }
    want = {
        (f"{RELEASE}-orphan-cleanup", "kafka-a"),
        (f"{RELEASE}-orphan-cleanup", "kafka-b"),
        (f"{RELEASE}-strimzi", "kafka-a"),
        (f"{RELEASE}-operator", NAMESPACE),
    }
    assert set(roles) == want
    assert bindings == want
    exec_rules = roles[(f"{RELEASE}-orphan-cleanup", "kafka-b")]["rules"]
    assert {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]} in exec_rules
    secret_rules = roles[(f"{RELEASE}-strimzi", "kafka-a")]["rules"]
    assert secret_rules == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    for cluster_role in kinds(docs)["ClusterRole"]:
        resources = {r for rule in cluster_role["rules"] for r in rule["resources"]}
        assert not resources & {"secrets", "pods", "pods/exec"}, cluster_role["metadata"]["name"]


def test_chart_with_watch_namespaces_renders_roles_there_and_a_small_cluster_role(
    helm: Path,
) -> None:
    docs = chart_with(helm, "watch.allNamespaces=false", "watch.namespaces={team-a,team-b}")
    args = container_args(docs)
    assert args[: args.index("--tenancy=strict")] == [
        "run",
        "--namespace",
        "team-a",
        "--namespace",
        "team-b",
    ]
    (cluster_role,) = kinds(docs)["ClusterRole"]
    assert {r for rule in cluster_role["rules"] for r in rule["resources"]} == {
        "kafkaclusterbindings",
        "customresourcedefinitions",
        "namespaces",
    }
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in cluster_role["rules"])
    watched = {
        d["metadata"]["namespace"]: d
        for d in kinds(docs)["Role"]
        if d["metadata"]["name"] == f"{RELEASE}-operator-watched"
    }
    assert sorted(watched) == ["team-a", "team-b"]
    resources = {r for rule in watched["team-a"]["rules"] for r in rule["resources"]}
    assert resources == {
        "recordpurges",
        "retentionpolicies",
        "recorderasures",
        "recordpurges/status",
        "retentionpolicies/status",
        "recorderasures/status",
        "events",
        "configmaps",
        "kopfpeerings",  # --peering with --namespace: a KopfPeering in each
    }
    watched_bindings = {
        d["metadata"]["namespace"]
        for d in kinds(docs)["RoleBinding"]
        if d["metadata"]["name"] == f"{RELEASE}-operator-watched"
    }
    assert watched_bindings == {"team-a", "team-b"}
    # Open tenancy there: a resource's own Secret, in the watched namespaces only.
    docs = chart_with(
        helm, "watch.allNamespaces=false", "watch.namespaces={team-a}", "tenancy=open"
    )
    assert [d["metadata"]["name"] for d in kinds(docs)["ClusterRole"]] == [f"{RELEASE}-operator"]
    (watched_role,) = [d for d in kinds(docs)["Role"] if d["metadata"]["namespace"] == "team-a"]
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]} in watched_role["rules"]
