"""The README's quick start works as written on the local stack: every command of the
```sh blocks marked `<!-- readme-quickstart -->`, in order, for real: the chart's default
(strict) install on the local node from the project's image, the administrator's
binding, the local data, the tenant's policy and purge. Then the resources are in the
state the README says, and Kafka itself shows the records gone.

Serial: the strict install binds its admission policy in every namespace, which would
refuse the other tests' resources that name bootstrap servers; and it installs the
operator in kafka-retention-system (helpers/sharing.py's OPERATOR_NAMESPACE files)."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import AdminClient

from devstack import build
from devstack.stack import Stack
from tests.helpers.conditions import ready
from tests.helpers.kube import get
from tests.helpers.offsets import log_starts
from tests.helpers.paths import REPO
from tests.helpers.readme import marked_commands
from tests.helpers.topics import cluster_id, wait_for_gone

QUICKSTART = REPO / "examples" / "quickstart"
RELEASE, OPERATOR_NS, TENANT = "kafka-retention", "kafka-retention-system", "team-orders"
TOPICS = ("orders.created", "orders.rejected")


def quickstart_commands() -> list[list[str]]:
    return marked_commands("readme-quickstart")


def test_the_quickstart_is_plain_helm_and_kubectl_on_files_of_the_repository() -> None:
    """What the test below can run as written: no shell, nothing from outside the repo."""
    commands = quickstart_commands()
    assert [argv[0] for argv in commands if argv[0] == "helm"] == ["helm"]
    assert {argv[0] for argv in commands} == {"helm", "kubectl"}
    for argv in commands:
        assert not set("$`|<>;&") & set(shlex.join(argv)), argv
        for i, arg in enumerate(argv[:-1]):
            if arg in ("-f", "--filename"):
                assert (REPO / argv[i + 1]).is_file(), argv
    applied = {argv[argv.index("-f") + 1] for argv in commands if "apply" in argv}
    assert {f"examples/quickstart/{p.name}" for p in QUICKSTART.glob("*.yaml")} <= applied


def test_the_quickstart_binding_names_the_local_cluster_by_its_fixed_id() -> None:
    """A cold `make dev-up` formats the local brokers with the id the binding names."""
    from devstack.kafka import LOCAL_CLUSTER_ID
    from devstack.stack import Stack as DevStack

    binding = yaml.safe_load((QUICKSTART / "binding.yaml").read_text())
    assert binding["spec"]["clusterId"] == LOCAL_CLUSTER_ID
    stack = DevStack(Path("/nonexistent"))
    assert stack.kafka.cluster_id == LOCAL_CLUSTER_ID
    assert binding["spec"]["connection"]["bootstrapServers"] == stack.kafka.bootstrap_servers
    # The isolated cluster keeps a random id: a binding of one never matches the other.
    assert stack.isolated_kafka.cluster_id is None


def readme_sample_output() -> str:
    """The ```text block the README shows after its last quick-start command."""
    readme = (REPO / "README.md").read_text()
    after = readme[readme.rindex("<!-- readme-quickstart") :]
    return after.split("```text\n", 1)[1].split("```", 1)[0]


# 6s, 3m, 1h (ages); 850ms, 1.21s, 2m05s (a purge's Took).
DURATION = r"\d+(\.\d+)?(ms|s|m|h)|\d+m\d+s"


def table_rows(output: str) -> list[list[str]]:
    """Each line of `kubectl get` tables as its cells, without the ones that say how long
    ago or how long it took (LAST RUN, AGE, TOOK): headers, names, status, counts."""
    rows = []
    for line in output.splitlines():
        if line.strip():
            cells = line.split()
            rows.append([c for c in cells if not re.fullmatch(DURATION, c)])
    return rows


def run(stack: Stack, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A command as a reader runs it after `. .dev/env`: helm and kubectl from its PATH,
    the local API server from its KUBECONFIG."""
    return subprocess.run(
        ["bash", "-c", '. "$0" && exec "$@"', str(stack.env_file), *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def chart_objects(helm: Path) -> list[dict[str, Any]]:
    """What the quick start's helm command makes (its -f and --set, rendered)."""
    (install,) = [argv for argv in quickstart_commands() if argv[0] == "helm"]
    args = install[install.index("install") + 3 :]  # after `install RELEASE CHART`
    chart = install[install.index("install") + 2]
    done = subprocess.run(
        [str(helm), "template", RELEASE, chart, *args], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def clear(stack: Stack, admin: AdminClient, helm: Path) -> None:
    """The stack as a fresh cluster would be for the quick start: no release, none of the
    cluster-scoped objects of the same names that other tests apply from manifests/ (helm
    would refuse to adopt them), no tenant namespace, no quick-start topics. The CRDs stay:
    helm installs its crds/ only where they are missing, and they are the same files."""
    stack.kubectl("delete", "kafkaclusterbinding", "orders-prod", "--ignore-not-found")
    for ns in (TENANT, OPERATOR_NS):
        stack.kubectl("delete", "namespace", ns, "--ignore-not-found", "--timeout=180s")
    for obj in chart_objects(helm):
        if obj["kind"] != "CustomResourceDefinition" and "namespace" not in obj["metadata"]:
            name = obj["metadata"]["name"]
            stack.kubectl("delete", obj["kind"], name, "--ignore-not-found", check=False)
    existing = set(admin.list_topics(timeout=30).topics)
    for topic in TOPICS:
        if topic in existing:
            admin.delete_topics([topic])[topic].result(timeout=30)
            wait_for_gone(admin, topic)


@pytest.fixture
def fresh(stack: Stack, admin: AdminClient) -> Iterator[Path]:
    helm = build.helm()
    # The README's binding names the cluster a cold `make dev-up` formats.
    assert (
        cluster_id(admin)
        == yaml.safe_load((QUICKSTART / "binding.yaml").read_text())["spec"]["clusterId"]
    ), "the stack was started before the local cluster had a fixed id: restart it"
    clear(stack, admin, helm)
    try:
        yield helm
    finally:
        for args in (
            ("logs", "-n", OPERATOR_NS, "deployment/kafka-retention-operator"),
            ("logs", "-n", TENANT, "job/quickstart-topics"),
            ("get", "jobs,pods,retentionpolicies,recordpurges", "-n", TENANT, "-o", "yaml"),
            ("get", "events", "-n", TENANT),
        ):
            print(stack.kubectl(*args, check=False).stdout[-20000:])
        run(stack, ["helm", "uninstall", RELEASE, "-n", OPERATOR_NS, "--wait"])
        clear(stack, admin, helm)


@pytest.mark.timeout(900)  # the README's waits: at most 180 s each
@pytest.mark.stack
@pytest.mark.serial  # a cluster-wide admission policy, and the operator in kafka-retention-system
def test_the_readme_quickstart_runs_as_written_and_does_what_it_says(
    stack: Stack, admin: AdminClient, fresh: Path
) -> None:
    for argv in quickstart_commands():
        started = time.monotonic()
        done = run(stack, argv)
        print(f"$ {shlex.join(argv)}  ({time.monotonic() - started:.0f} s)\n{done.stdout}")
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stdout}\n{done.stderr}"
    # The last command's tables are the ones the README shows (the times aside).
    assert table_rows(done.stdout) == table_rows(readme_sample_output())

    # The administrator's binding is stored as written.
    binding = stack.kubectl("get", "kafkaclusterbinding", "orders-prod", "-o", "json")
    assert "a2Fma2EtcmV0ZW50aW9uAQ" in binding.stdout
    # The policy ran: Ready, and orders-enricher's 60 of 100 records per partition gone.
    policy = get(stack, "retentionpolicy", TENANT, "orders-consumed")
    assert ready(policy)["status"] == "True", policy["status"]
    assert log_starts(admin, "orders.created", 3) == [60, 60, 60]
    assert policy["status"]["recordsDeletedTotal"] == 180
    # The purge: Succeeded, every record of orders.rejected gone.
    purge = get(stack, "recordpurge", TENANT, "orders-rejected-cleanup")
    assert purge["status"]["phase"] == "Succeeded", purge["status"]
    assert purge["status"]["summary"]["recordsDeleted"] == 20
    assert log_starts(admin, "orders.rejected", 1) == [20]
    # And the strict default is what was installed: an inline cluster is refused at apply.
    refused = stack.kubectl(
        "apply",
        "-n",
        TENANT,
        "-f",
        "-",
        stdin=yaml.safe_dump(
            {
                "apiVersion": "kafka-retention.io/v1alpha1",
                "kind": "RecordPurge",
                "metadata": {"name": "typed-in"},
                "spec": {
                    "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
                    "partitions": [{"topic": "orders.rejected", "partition": 0, "offset": -1}],
                },
            }
        ),
        check=False,
    )
    assert refused.returncode != 0
    assert "strict tenancy" in refused.stderr
