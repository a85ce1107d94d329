"""Where a plan goes when the job runs as pods: ConfigMaps in the run's namespace, cut in
chunks with a checksummed manifest written last (kafka_retention.kube_objects.chunks).
The plan's JSON lines themselves are kafka_retention.core.plan_lines'."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.adapters import kube
from kafka_retention.kube_objects.chunks import sink_configmaps


def read_configmap_key(namespace: str, name: str, key: str) -> str:
    """The run's request, read by the driver with its service account."""
    found = kube.read_configmap(namespace, name)
    data = (found or {}).get("data") or {}
    if key not in data:
        raise SystemExit(f"ConfigMap {namespace}/{name} has no key {key}")
    return str(data[key])


def write_configmaps(
    run: str, namespace: str, payload: str, owners: Sequence[Mapping[str, Any]] | None
) -> int:
    """Create (or replace) the run's plan ConfigMaps, gzipped (100,000 partitions take a
    few ConfigMaps instead of a hundred); returns how many were written."""
    objects = sink_configmaps(run, namespace, payload, owners=owners or (), compress=True)
    for obj in objects:  # parts first, the manifest last
        kube.write_configmap(obj)
    return len(objects)
