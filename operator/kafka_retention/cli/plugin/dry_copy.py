"""The copy `plan` has the operator plan: a RecordPurge or RetentionPolicy with
spec.dryRun true, made beside the original (so the operator's tenancy and the binding
apply to it as to the original), waited for, read and deleted whatever happens."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kafka_retention.cli.plugin.kube import Cluster, PluginError
from kafka_retention.cli.plugin.progress import Progress
from kafka_retention.core.resources import API_VERSION, GROUP

# Where the copy says which object it plans (an annotation: a name may be longer than a
# label value may be).
PLAN_OF = f"{GROUP}/plan-of"


def dry_run_copy(
    document: Mapping[str, Any], namespace: str, kind: str, drop: Iterable[str] = ()
) -> dict[str, Any]:
    """`document`'s spec with dryRun true (less the `drop` fields), under a generated name
    beside it. Nothing else of the original is kept (status, uid, owners)."""
    name = str((document.get("metadata") or {}).get("name") or kind.lower())
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        raise PluginError(f"{kind} {name} has no spec")
    left_out = set(drop)
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {
            # 253 characters at most, 5 of them the generated suffix.
            "generateName": f"{name[:200]}-plan-",
            "namespace": namespace,
            "annotations": {PLAN_OF: name},
        },
        "spec": {**{k: v for k, v in spec.items() if k not in left_out}, "dryRun": True},
    }


@dataclass(frozen=True)
class Asking:
    """Where a copy is made and how long the operator is waited for."""

    cluster: Cluster
    namespace: str
    timeout: float
    progress: Progress
    poll: float = 0.5  # seconds between reads of the copy


@contextmanager
def planned(
    asking: Asking,
    plural: str,
    copy: Mapping[str, Any],
    *,
    done: Callable[[Mapping[str, Any]], bool],
    refused: Callable[[Mapping[str, Any]], str | None] = lambda _obj: None,
    waiting: Callable[[Mapping[str, Any]], str] = lambda _obj: "waiting for the operator",
) -> Iterator[dict[str, Any]]:
    """Create `copy`, yield it once `done` says the operator planned it (a `refused` answer
    or `asking.timeout` seconds end it with a PluginError), and delete it after, whatever happens;
    read what it stored inside the block (it goes with the copy)."""
    cluster, timeout, progress = asking.cluster, asking.timeout, asking.progress
    kind = str(copy["kind"])
    made = cluster.create(plural, str(copy["metadata"]["namespace"]), copy)
    namespace, name = made["metadata"]["namespace"], made["metadata"]["name"]
    started = time.monotonic()
    try:
        obj = made
        while not done(obj):
            why = refused(obj)
            if why is not None:
                raise PluginError(f"the operator could not plan it: {why}")
            waited = time.monotonic() - started
            if waited > timeout:
                raise PluginError(
                    f"{kind} {namespace}/{name} was not planned within {timeout:g}s "
                    f"({waiting(obj)}): is the operator running and watching namespace "
                    f"{namespace}?"
                )
            progress.show(f"planning {namespace}/{name}: {waiting(obj)} ({waited:.0f}s)")
            time.sleep(asking.poll)
            found = cluster.get(plural, namespace, name)
            if found is None:
                raise PluginError(f"{kind} {namespace}/{name} was deleted while planning")
            obj = found
        progress.show(f"planning {namespace}/{name}: reading the plan")
        yield obj
    finally:
        progress.clear()
        cluster.delete(plural, namespace, name)
