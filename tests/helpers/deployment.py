"""The operator as users deploy it: the local overlay of manifests/ rendered, with the
operator's arguments a test needs, applied, and the Deployment Available."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from devstack.stack import Stack
from tests.helpers.manifests import render

OPERATOR_NS = "kafka-retention-system"


def local_overlay(
    stack: Stack,
    dropped_args: Sequence[str],
    added_args: Sequence[str],
    dropped_objects: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The local overlay as kubectl renders it, without the objects named in
    `dropped_objects`; the operator runs without `dropped_args` (each of which the overlay
    passes) and with `added_args`."""
    docs = [
        d for d in render(stack, "overlays/local") if d["metadata"]["name"] not in dropped_objects
    ]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = [a for a in container["args"] if a not in dropped_args]
    assert len(args) == len(container["args"]) - len(dropped_args), container["args"]
    container["args"] = [*args, *added_args]
    return docs


@contextlib.contextmanager
def deployed(stack: Stack, docs: list[dict[str, Any]], watched: list[str]) -> Iterator[str]:
    """The rendered objects applied, the operator Deployment Available; yields its pod's
    name. Afterwards its logs are printed and the operator's and `watched` namespaces go."""
    stack.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump_all(docs)
    )
    try:
        stack.kubectl(
            "wait",
            "deployment/kafka-retention-operator",
            "-n",
            OPERATOR_NS,
            "--for=condition=Available",
            "--timeout=180s",
        )
        pods = json.loads(
            stack.kubectl(
                "get",
                "pods",
                "-n",
                OPERATOR_NS,
                "-l",
                "app.kubernetes.io/name=kafka-retention-operator",
                "-o",
                "json",
            ).stdout
        )["items"]
        (pod,) = [p for p in pods if p["metadata"].get("deletionTimestamp") is None]
        yield pod["metadata"]["name"]
    finally:
        logs = stack.kubectl(
            "logs", "-n", OPERATOR_NS, "deployment/kafka-retention-operator", check=False
        )
        print(logs.stdout[-20000:])
        # A crashed container's own words, and why it ended (exit code, OOMKilled, a
        # failed liveness probe), for a failure seen only in CI.
        previous = stack.kubectl(
            "logs",
            "-n",
            OPERATOR_NS,
            "deployment/kafka-retention-operator",
            "--previous",
            check=False,
        )
        print(previous.stdout[-5000:])
        described = stack.kubectl("describe", "pods", "-n", OPERATOR_NS, check=False)
        print(described.stdout[-8000:])
        stack.kubectl("delete", "namespace", OPERATOR_NS, "--timeout=120s", check=False)
        for ns in watched:
            stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
