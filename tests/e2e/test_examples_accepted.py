"""Every example works as written against the default install (issue 45).

Every file in examples/ and every ```yaml block of README.md and docs/**/*.md that holds a
kafka-retention.io object (collected when the test runs: tests/helpers/examples.py) goes
to the local stack, and each object must end as its first line says: accepted under
strict tenancy (no marker), accepted by an operator run with --tenancy=open (`# tenancy:
open`), or refused with the reason `# expect: refused <Reason>` names (`admission`: the
API server refuses it). Accepted means the API server stores it and the operator does not
end it with a tenancy or spec refusal (REFUSALS): a purge reaches a final phase, a policy
completes a run. `# fragment` blocks must parse and name only fields the CRDs define.

What a reader types is rewritten only where the stack differs from their cluster:
- each KafkaClusterBinding gets a name of this test's own (cluster-scoped: other tests may
  use the examples' names) and the local cluster's connection and id, and every clusterRef
  to it follows; tenant namespaces (team-orders, analytics, ...) become namespaces the
  test's operators watch, and `analytics`, the readers' namespace, carries the labels the
  bindings' namespaceSelectors ask for;
- `# tenancy: open` objects reach the local cluster (spec.cluster.bootstrapServers, or
  in place of spec.cluster.strimzi: Strimzi is not here, and spec.brokers then names the
  pods by the labels the operator would have taken from Strimzi); a Secret they name is
  made, holding `security.protocol=PLAINTEXT`, unless the object is meant to be refused;
- every purge, policy and erasure runs with dryRun (and orphanPartitions.dryRun): the shared local
  cluster may hold topics with the examples' names, made by other tests, and this test
  must never delete their records. Tenancy and spec checks come before any plan, dry or
  not, so a dry run is refused exactly where a real one would be.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.core import erasure_states
from kafka_retention.core.conditions import Reason
from kafka_retention.core.purge_states import FINAL_PHASES
from kafka_retention.core.strimzi import StrimziRef
from tests.helpers import tenancy
from tests.helpers.conditions import conditions_of
from tests.helpers.examples import (
    ADMISSION,
    Snippet,
    all_snippets,
    docs_snippets,
    unknown_fields,
)
from tests.helpers.kafka import Kafka
from tests.helpers.kube import create_watched_namespace, get
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.policies import completed
from tests.helpers.topics import cluster_id
from tests.helpers.waiting import eventually

pytestmark = pytest.mark.stack

# A pytest-xdist worker adds its number, as tests/e2e/conftest.py's prefix does.
PREFIX = "examples" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
# Ready reasons by which the operator refuses a resource for its spec or its tenancy.
REFUSALS = frozenset(
    {
        Reason.INVALID_SPEC,
        Reason.NOT_PERMITTED,
        Reason.BINDING_UNAVAILABLE,
        Reason.CLUSTER_ID_MISMATCH,
        Reason.QUOTA_EXCEEDED,
        Reason.SECRET_UNAVAILABLE,
        Reason.CLUSTER_UNRESOLVED,
    }
)
# The tenant namespace of an object that names none (a docs block may leave it out), and
# the readers' namespace (the contract of issue 45: team-orders and analytics).
TENANT, READERS = "team-orders", "analytics"
# The default install's admission policy (manifests/base, the chart's too): it refuses an
# inline cluster at apply time, which `# expect: refused admission` blocks count on.
ADMISSION_POLICY = REPO / "manifests" / "base" / "admission-policy.yaml"
STRICT_LABEL = "kafka-retention.io/examples-strict"
# A first policy run plans with a fresh Kafka connection per policy; on a loaded machine
# with make test beside it, a minute is not always enough.
VERDICT_TIMEOUT = 240


@pytest.fixture(scope="module")
def strict_operator(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator as installed by default: strict tenancy, no extra flags."""
    log = tmp_path_factory.mktemp("examples") / "operator.log"
    yield from tenancy.strict_operator(stack, log, PREFIX)


@dataclass
class Placed:
    """One object as the test applies it, and where it came from."""

    where: str
    refused: str | None  # the reason its first line names; None: accepted
    obj: dict[str, Any]

    @property
    def label(self) -> str:
        meta = self.obj["metadata"]
        return f"{self.where} {self.obj['kind']}/{meta.get('namespace', '-')}/{meta['name']}"


@dataclass
class Layout:
    """The test's namespaces, binding names and objects, made from the snippets."""

    suffix: str
    bootstrap: str
    cluster: str
    open_prefix: str
    strict_ns: dict[str, str] = field(default_factory=dict)
    open_ns: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    bindings: list[Placed] = field(default_factory=list)
    objects: list[Placed] = field(default_factory=list)
    secrets: set[tuple[str, str]] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    taken: set[tuple[str, str, str]] = field(default_factory=set)

    def namespace(self, logical: str, tenancy: str) -> str:
        mapping, prefix = (
            (self.strict_ns, PREFIX) if tenancy == "strict" else (self.open_ns, self.open_prefix)
        )
        if logical not in mapping:
            short = re.sub(r"[^a-z0-9-]", "-", logical.lower())[:24]
            mapping[logical] = f"{prefix}-{short}-{self.suffix}"[:63].rstrip("-")
        return mapping[logical]

    def unique_name(self, kind: str, namespace: str, name: str) -> str:
        """Two snippets may name the same object (a docs block repeating an example)."""
        candidate, n = name, 1
        while (kind, namespace, candidate) in self.taken:
            n += 1
            candidate = f"{name}-{n}"
        self.taken.add((kind, namespace, candidate))
        return candidate


def lay_out(snippets: list[Snippet], layout: Layout) -> None:
    """Fill `layout` from every snippet; a snippet that breaks the contract is a problem."""
    wholes: list[tuple[Snippet, list[dict[str, Any]]]] = []
    for snippet in snippets:
        try:
            expect = snippet.expect
            docs = snippet.documents()
        except (ValueError, yaml.YAMLError) as err:  # a bad marker, or YAML that does not parse
            layout.problems.append(f"{snippet.where}: {err}")
            continue
        if expect.fragment:
            for doc in docs:
                unknown = unknown_fields(doc)
                if unknown:
                    layout.problems.append(f"{snippet.where}: fields no CRD defines: {unknown}")
            continue
        objects = snippet.objects()
        if not objects:
            layout.problems.append(f"{snippet.where}: no kafka-retention.io object")
            continue
        wholes.append((snippet, objects))
    # Bindings first: a clusterRef names its own page's (or file's) binding of that name,
    # else the first one of that name, examples/ coming first.
    known: dict[str, str] = {}
    local: dict[str, dict[str, str]] = {}
    for snippet, objects in wholes:
        for obj in objects:
            if obj.get("kind") == "KafkaClusterBinding":
                new = bind(obj, snippet, layout)
                local.setdefault(snippet.source, {})[obj["metadata"]["name"]] = new
                known.setdefault(obj["metadata"]["name"], new)
    for snippet, objects in wholes:
        refs = {**known, **local.get(snippet.source, {})}
        for obj in objects:
            if obj.get("kind") != "KafkaClusterBinding":
                place(obj, snippet, refs, layout)


def bind(obj: dict[str, Any], snippet: Snippet, layout: Layout) -> str:
    """A binding as the test applies it; its new name."""
    copied = copy.deepcopy(obj)
    name = f"{obj['metadata']['name']}-{len(layout.bindings)}-{layout.suffix}"
    copied["metadata"] = {"name": name}
    spec = copied.setdefault("spec", {})
    spec["clusterId"] = layout.cluster
    strimzi = (spec.get("connection") or {}).get("strimzi")
    spec["connection"] = {"bootstrapServers": layout.bootstrap}
    if isinstance(spec.get("brokers"), dict):
        spec["brokers"] = brokers_of(spec["brokers"], strimzi)
    for entry in spec.get("tenants") or []:
        if isinstance(entry.get("namespaces"), list):
            entry["namespaces"] = [layout.namespace(n, "strict") for n in entry["namespaces"]]
        selector = entry.get("namespaceSelector") or {}
        layout.labels |= selector.get("matchLabels") or {}
    layout.bindings.append(Placed(snippet.where, snippet.expect.refused, copied))
    return name


def place(obj: dict[str, Any], snippet: Snippet, refs: dict[str, str], layout: Layout) -> None:
    """A purge or policy as the test applies it: its namespace, a dry run, the local
    cluster for an open-tenancy one."""
    expect = snippet.expect
    copied = copy.deepcopy(obj)
    meta = copied.setdefault("metadata", {})
    ns = layout.namespace(meta.get("namespace") or TENANT, expect.tenancy)
    meta["namespace"] = ns
    meta["name"] = layout.unique_name(copied["kind"], ns, str(meta.get("name")))
    spec = copied.setdefault("spec", {})
    if isinstance(spec, dict):
        spec["dryRun"] = True
        if isinstance(spec.get("orphanPartitions"), dict):
            spec["orphanPartitions"]["dryRun"] = True
        cluster = spec.get("cluster")
        if isinstance(cluster, dict):
            if cluster.get("clusterRef") in refs:
                cluster["clusterRef"] = refs[cluster["clusterRef"]]
            if expect.tenancy == "open":
                strimzi = cluster.pop("strimzi", None)
                if "bootstrapServers" in cluster or strimzi is not None:
                    cluster["bootstrapServers"] = layout.bootstrap
                if isinstance(cluster.get("brokers"), dict):
                    cluster["brokers"] = brokers_of(cluster["brokers"], strimzi)
                if isinstance(cluster.get("clientConfigSecret"), str) and not expect.refused:
                    layout.secrets.add((ns, cluster["clientConfigSecret"]))
    layout.objects.append(Placed(snippet.where, expect.refused, copied))


def brokers_of(brokers: dict[str, Any], strimzi: Any) -> dict[str, Any]:
    """spec.brokers once a Strimzi reference is replaced by the local bootstrap servers:
    what the operator would have derived from the reference (the broker pods' labels and
    namespace, core/strimzi.py), written out, as the CRDs require without a reference."""
    if not isinstance(strimzi, dict) or brokers.get("podSelector"):
        return brokers
    ref = StrimziRef(kafka=strimzi["kafka"], namespace=strimzi.get("namespace"))
    where = {} if ref.namespace is None else {"namespace": ref.namespace}
    return {**where, "podSelector": {"matchLabels": dict(ref.broker_labels())}, **brokers}


@contextmanager
def strict_admission(stack: Stack, suffix: str, probe_ns: str) -> Iterator[None]:
    """The default install's admission policy, bound as it ships (Deny) but only to the
    namespaces labelled STRICT_LABEL=suffix (bound cluster-wide, it would refuse the
    other tests' inline clusters), under names of this run's own; returns once the API
    server enforces it (it loads bindings from a watch), and removes both after."""
    policy, binding = [d for d in yaml.safe_load_all(ADMISSION_POLICY.read_text()) if d]
    assert (policy["kind"], binding["kind"]) == (
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    )
    policy["metadata"]["name"] = f"{policy['metadata']['name']}-{suffix}"
    binding["metadata"]["name"] = policy["metadata"]["name"]
    binding["spec"]["policyName"] = policy["metadata"]["name"]
    binding["spec"]["matchResources"] = {
        "namespaceSelector": {"matchLabels": {STRICT_LABEL: suffix}}
    }
    # As JSON: in YAML the label value (the run's hex suffix, e.g. 948e99) would read as a
    # number to the API server's YAML parser, which then refuses the binding.
    for obj in (policy, binding):
        stack.kubectl("apply", "-f", "-", stdin=json.dumps(obj))
    try:
        probe = {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RetentionPolicy",
            "metadata": {"name": "enforced-yet", "namespace": probe_ns},
            "spec": {
                "cluster": {"bootstrapServers": "kafka:9092"},
                "topics": {"names": ["orders"]},
                "maxRetention": "7d",
            },
        }
        eventually(
            lambda: (
                stack.kubectl(
                    "create", "--dry-run=server", "-f", "-", stdin=json.dumps(probe), check=False
                ).returncode
                != 0
            ),
            60,
            "the admission policy enforced",
        )
        yield
    finally:
        for kind, obj in (
            ("validatingadmissionpolicybinding", binding),
            ("validatingadmissionpolicy", policy),
        ):
            stack.kubectl("delete", kind, obj["metadata"]["name"], "--wait=false", check=False)


def verdict(obj: dict[str, Any]) -> tuple[str, str] | None:
    """("refused", reason) or ("accepted", what it reached); None while undecided."""
    ready = next((c for c in conditions_of(obj) if c["type"] == "Ready"), None)
    reason = ready.get("reason", "") if ready else ""
    if reason in REFUSALS:
        return "refused", reason
    phase = obj.get("status", {}).get("phase")
    if obj["kind"] == "RecordPurge" and phase in FINAL_PHASES:
        return "accepted", f"phase {phase}, Ready {reason}"
    if obj["kind"] == "RetentionPolicy" and completed(obj):
        return "accepted", f"a run completed, Ready {reason}"
    if obj["kind"] == "RecordErasure" and phase in erasure_states.FINAL_PHASES:
        return "accepted", f"phase {phase}, Ready {reason}"
    return None


def apply_one(stack: Stack, placed: Placed, verdicts: dict[str, tuple[str, str]]) -> bool:
    """Apply; True when the operator's verdict is still to come."""
    done = stack.kubectl("apply", "-f", "-", stdin=json.dumps(placed.obj), check=False)
    if done.returncode != 0:
        verdicts[placed.label] = ("refused", ADMISSION + ": " + done.stderr.strip()[:300])
        return False
    if placed.obj["kind"] == "KafkaClusterBinding":
        verdicts[placed.label] = ("accepted", "stored")
        return False
    return True


def mismatch(placed: Placed, got: tuple[str, str] | None) -> str | None:
    if got is None:
        return f"{placed.label}: no verdict in {VERDICT_TIMEOUT}s"
    outcome, detail = got
    if placed.refused is None:
        return None if outcome == "accepted" else f"{placed.label}: refused ({detail})"
    if outcome == "refused" and detail.split(":", 1)[0] == placed.refused:
        return None
    return f"{placed.label}: expected refused {placed.refused}, got {outcome} ({detail})"


@pytest.fixture
def layout(
    stack: Stack, strict_operator: OperatorProcess, operator: OperatorProcess, kafka: Kafka
) -> Iterator[Layout]:
    made = Layout(
        suffix=uuid.uuid4().hex[:6],
        bootstrap=kafka.bootstrap,
        cluster=cluster_id(kafka.admin),
        open_prefix=operator.namespaces[0].rstrip("*").rstrip("-"),
    )
    yield made
    # Purges and policies while their operators run (their finalizers), then the rest.
    for ns in [*made.strict_ns.values(), *made.open_ns.values()]:
        stack.kubectl(
            "delete",
            "recordpurges,retentionpolicies,recorderasures",
            "--all",
            "-n",
            ns,
            "--timeout=60s",
            check=False,
        )
        stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    for placed in made.bindings:
        name = placed.obj["metadata"]["name"]
        stack.kubectl("delete", "kafkaclusterbinding", name, "--wait=false", check=False)


def test_every_example_and_docs_block_is_accepted_or_refused_as_its_first_line_says(
    stack: Stack,
    strict_operator: OperatorProcess,
    operator: OperatorProcess,
    layout: Layout,
) -> None:
    # The fixture pages too: their blocks prove the refused markers (the operator's
    # reason, the API server's `admission`) against the real stack.
    snippets = all_snippets() + docs_snippets(FIXTURES / "markdown")
    lay_out(snippets, layout)
    used = {o.obj["metadata"]["namespace"] for o in layout.objects}
    strict_used = [ns for ns in layout.strict_ns.values() if ns in used]
    for logical, ns in layout.strict_ns.items():
        if ns in used:
            create_watched_namespace(stack, strict_operator, ns)
            if logical == READERS and layout.labels:
                pairs = [f"{k}={v}" for k, v in layout.labels.items()]
                stack.kubectl("label", "namespace", ns, *pairs, "--overwrite")
    for ns in layout.open_ns.values():
        create_watched_namespace(stack, operator, ns)
    for ns in strict_used:
        stack.kubectl("label", "namespace", ns, f"{STRICT_LABEL}={layout.suffix}", "--overwrite")
    with strict_admission(stack, layout.suffix, strict_used[0]):
        check_every_snippet(stack, layout)


def check_every_snippet(stack: Stack, layout: Layout) -> None:
    """Apply every object, wait for every verdict in one loop, compare with the markers."""
    for ns, name in sorted(layout.secrets):
        stack.kubectl(
            "create", "secret", "generic", name, "-n", ns,
            "--from-literal=security.protocol=PLAINTEXT",
        )  # fmt: skip

    verdicts: dict[str, tuple[str, str]] = {}
    pending = [p for p in [*layout.bindings, *layout.objects] if apply_one(stack, p, verdicts)]
    # One poll loop for all: the runs go on in parallel in both operators.
    deadline = time.monotonic() + VERDICT_TIMEOUT
    while pending and time.monotonic() < deadline:
        for placed in list(pending):
            meta = placed.obj["metadata"]
            got = verdict(get(stack, placed.obj["kind"].lower(), meta["namespace"], meta["name"]))
            if got is not None:
                verdicts[placed.label] = got
                pending.remove(placed)
        time.sleep(1)

    for label, got in sorted(verdicts.items()):
        print(label, "->", *got)  # shown with a failure: what each object came to
    wrong = [
        m
        for p in [*layout.bindings, *layout.objects]
        if (m := mismatch(p, verdicts.get(p.label))) is not None
    ]
    assert layout.problems + wrong == [], "\n".join(layout.problems + wrong)
    # The examples alone give this many objects: a collector that found nothing passes
    # nothing.
    assert len(layout.objects) >= 20, [p.label for p in layout.objects]
    sources = {p.where.split(":")[0] for p in layout.objects}
    assert {"examples/recordpurge.yaml", "tests/fixtures/markdown/README.md"} <= sources
