"""Strict tenancy's objects: the KafkaClusterBinding that lets tenant namespaces act on a
cluster named by its id."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.cleanup import undone_afterwards
from tests.helpers.kube import create_watched_namespace, resource


def binding(name: str, cluster_id: str, bootstrap: str, tenant: str, **spec: Any) -> dict[str, Any]:
    """A KafkaClusterBinding of the cluster with this id, reached at `bootstrap`, that
    admits the `tenant` namespace to purge and retention on every topic (spec may say
    otherwise)."""
    tenants = [
        {"namespaces": [tenant], "operations": ["purge", "retention"], "topics": {"allow": [".*"]}}
    ]
    connection = {"bootstrapServers": bootstrap}
    spec = {"clusterId": cluster_id, "connection": connection, "tenants": tenants, **spec}
    return resource("KafkaClusterBinding", name, spec=spec)


def strict_operator(
    stack: Stack, log: Path, prefix: str, *extra_args: str
) -> Iterator[OperatorProcess]:
    """For a fixture (`yield from`): an operator as shipped (--tenancy=strict) watching
    the `prefix-*` namespaces, stopped afterwards, which must end cleanly."""
    proc = OperatorProcess(stack, [f"{prefix}-*"], log, extra_args, tenancy="strict").start()
    yield proc
    assert proc.stop() == 0, f"operator log: {log}"


def watched_namespaces(
    stack: Stack, operator: OperatorProcess, names: Sequence[str]
) -> Iterator[tuple[str, ...]]:
    """For a fixture (`yield from`): these namespaces, once `operator` watches them; their
    policies and purges deleted afterwards (while the operator runs), then the namespaces."""
    for ns in names:
        create_watched_namespace(stack, operator, ns)
    yield tuple(names)
    for ns in names:
        stack.kubectl(
            "delete",
            "retentionpolicies,recordpurges,recorderasures",
            "--all",
            "-n",
            ns,
            check=False,
        )
        stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def made_bindings(stack: Stack) -> Iterator[list[str]]:
    """For a fixture (`yield from`): the KafkaClusterBindings a test makes, deleted after
    it (cluster-scoped: no namespace takes them away)."""
    yield from undone_afterwards(
        lambda name: stack.kubectl("delete", "kafkaclusterbinding", name, check=False)
    )
