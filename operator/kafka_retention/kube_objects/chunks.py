"""Payloads larger than one ConfigMap, as a set of them: parts `<name>-plan-NNNN`, then a
manifest `<name>-plan` with the count and a checksum, written last so that a reader never
assembles a half-written payload. Pure: the adapters create and read the objects."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core.resources import GROUP

RUN_LABEL = f"{GROUP}/run"
SET_LABEL = f"{GROUP}/set"
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
    suffix: str = "plan",
    compress: bool = False,
) -> list[dict[str, Any]]:
    """The payload (JSON lines) cut into ConfigMaps `<run>-<suffix>-NNNN`, then
    `<run>-<suffix>` with the count and a checksum; the manifest is written last so a
    reader never assembles a half-written payload. With `compress`, the parts hold the
    payload gzipped (a plan of 100,000 partitions fits in a few ConfigMaps)."""
    data = payload.encode()
    if compress:
        data = gzip.compress(data, compresslevel=6, mtime=0)
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    labels = {RUN_LABEL: run, SET_LABEL: suffix}
    meta_base: dict[str, Any] = {"namespace": namespace, "labels": labels}
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
                "name": f"{run}-{suffix}-{i:04d}",
                "labels": {**labels, PART_LABEL: str(i)},
            },
            "binaryData": {"part": _b64(chunk)},
        }
        for i, chunk in enumerate(chunks)
    ]
    out.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta_base, "name": f"{run}-{suffix}"},
            "data": {
                "manifest.json": json.dumps(
                    {
                        "chunks": len(chunks),
                        "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "encoding": "gzip" if compress else "identity",
                    }
                )
            },
        }
    )
    return out


def parts_selector(run: str, suffix: str = "plan") -> str:
    """The label selector of a set's parts."""
    return f"{RUN_LABEL}={run},{SET_LABEL}={suffix},{PART_LABEL}"


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
    if info.get("encoding") == "gzip":
        data = gzip.decompress(data)
    return data.decode()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def set_base(kind: str, name: str) -> str:
    """`kr-<kind>-<name>`: the base of an object's ConfigMap sets, short enough for the
    suffixes (`-results-0000`) to keep a valid name; long names are cut and hashed."""
    base = f"kr-{kind.lower()}-{name}"
    if len(base) <= 200:
        return base
    return f"{base[:190]}-{hashlib.sha256(base.encode()).hexdigest()[:8]}"
