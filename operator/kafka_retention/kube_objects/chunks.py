"""Payloads larger than one ConfigMap, as a set of them: parts `<name>-plan-NNNN`, then a
manifest `<name>-plan` with the count and a checksum, written last so that a reader never
assembles a half-written payload. Pure: the adapters create and read the objects."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core.resources import GROUP

RUN_LABEL = f"{GROUP}/run"
PART_LABEL = f"{GROUP}/part"
# A ConfigMap holds at most 1 MiB; leave room for metadata.
CHUNK_BYTES = 900 * 1024


class SinkError(ValueError):
    """The chunks found do not make up the plan their manifest describes."""


def sink_configmaps(
    run: str,
    namespace: str,
    payload: str,
    owner: Mapping[str, Any] | None = None,
    owners: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The plan (JSON lines) cut into ConfigMaps `<run>-plan-NNNN`, then `<run>-plan` with
    the count and a checksum; the manifest is written last so a reader never assembles a
    half-written plan."""
    data = payload.encode()
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    meta_base: dict[str, Any] = {"namespace": namespace, "labels": {RUN_LABEL: run}}
    references = [dict(o) for o in ([owner] if owner is not None else [])] + [
        dict(o) for o in owners
    ]
    if references:
        meta_base["ownerReferences"] = references
    out = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                **meta_base,
                "name": f"{run}-plan-{i:04d}",
                "labels": {RUN_LABEL: run, PART_LABEL: str(i)},
            },
            "binaryData": {"part": _b64(chunk)},
        }
        for i, chunk in enumerate(chunks)
    ]
    out.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta_base, "name": f"{run}-plan"},
            "data": {
                "manifest.json": json.dumps(
                    {
                        "chunks": len(chunks),
                        "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest(),
                    }
                )
            },
        }
    )
    return out


def assemble(manifest: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> str:
    """The payload back from the manifest ConfigMap and its parts, checked."""
    info = json.loads(manifest["data"]["manifest.json"])
    by_index = {int(p["metadata"]["labels"][PART_LABEL]): p for p in parts}
    if sorted(by_index) != list(range(info["chunks"])):
        raise SinkError(f"expected {info['chunks']} parts, found {sorted(by_index)}")
    data = b"".join(
        base64.b64decode(by_index[i]["binaryData"]["part"]) for i in range(info["chunks"])
    )
    if len(data) != info["bytes"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise SinkError("plan parts do not match their manifest's checksum")
    return data.decode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
