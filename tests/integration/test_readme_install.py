"""The README's install commands work as written, against a real API server.

Every ```sh block after a `<!-- readme-install` marker in README.md is run line by line,
as a server-side dry run (`--dry-run=server`; helm also with `--take-ownership`, since the
kustomize base other tests install has the same names): the API server admits every object
as it would for real, without a second operator starting on the local node to act on the other
tests' objects. test_manifests.py and test_helm_chart.py apply the same overlays and the
chart for real.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from devstack import build
from devstack.stack import Stack
from tests.helpers.readme import marked_commands

# It creates kafka-retention-system, which the in-cluster tests delete.

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def readme_commands() -> list[list[str]]:
    return marked_commands("readme-install")


def test_the_readme_marks_its_install_commands() -> None:
    """Losing a marker would quietly drop a command from the test below."""
    tools = [argv[0] for argv in readme_commands()]
    assert tools.count("helm") == 1
    assert tools.count("kubectl") >= 4


@pytest.mark.stack
def test_every_install_command_in_the_readme_is_admitted_by_the_api_server(
    stack: Stack,
) -> None:
    # What the README assumes is already there: Strimzi's and the Prometheus Operator's
    # CRDs (minimal stand-ins here), and the namespaces the Strimzi example names.
    for crds in ("strimzi-crds.yaml", "prometheusrule-crd.yaml"):
        stack.kubectl("apply", "--server-side", "-f", str(FIXTURES / crds))
    stack.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    for ns in ("kafka", "kafka-retention-system", "team-payments"):
        stack.kubectl("create", "namespace", ns, check=False)
    helm = build.helm()
    for argv in readme_commands():
        tool, *args = argv
        if tool == "helm":
            # Other tests install the kustomize base under the same names; helm refuses
            # objects it did not make unless told to adopt them (the dry run adopts none).
            cmd = [str(helm), *args, "--take-ownership", "--kubeconfig", str(stack.kube.kubeconfig)]
        else:
            assert tool == "kubectl", argv
            cmd = [str(stack.kube.kubectl), "--kubeconfig", str(stack.kube.kubeconfig), *args]
        done = subprocess.run(
            [*cmd, "--dry-run=server"], cwd=REPO, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stderr}"
