"""The deploy manifests (manifests/) as kustomize renders them, applied and deleted."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from devstack.stack import Stack
from tests.helpers.paths import FIXTURES, MANIFESTS

STRIMZI_CRDS = FIXTURES / "strimzi-crds.yaml"


def render(stack: Stack, path: str) -> list[dict[str, Any]]:
    """kustomize's rendering of manifests/<path>, as objects."""
    out = stack.kubectl("kustomize", str(MANIFESTS / path)).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def ident(doc: dict[str, Any]) -> tuple[str, str, str]:
    """(kind, name, namespace) of a rendered object."""
    return (doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace", ""))


def delete_objects(stack: Stack, docs: list[dict[str, Any]]) -> None:
    """The rendered objects deleted from the stack, those that are there."""
    for doc in docs:
        namespace = doc["metadata"].get("namespace")
        stack.kubectl(
            "delete",
            doc["kind"],
            doc["metadata"]["name"],
            *(["-n", namespace] if namespace else []),
            "--ignore-not-found",
            check=False,
        )


def kustomize_base_with(
    stack: Stack, directory: Path, components: list[str], **fields: Any
) -> list[dict[str, Any]]:
    """An overlay of one's own written to `directory` (the base, these components of
    manifests/components, and any other kustomization fields, e.g. patches), as kustomize
    renders it."""
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        # kustomize takes relative paths only.
        "resources": [os.path.relpath(MANIFESTS / "base", directory)],
        "components": [
            os.path.relpath(MANIFESTS / "components" / c, directory) for c in components
        ],
        **fields,
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    out = stack.kubectl("kustomize", str(directory)).stdout
    return [d for d in yaml.safe_load_all(out) if d]
