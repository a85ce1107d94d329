"""ConfigMaps in memory for the adapters' readers (kube.read_configmap and friends), and
the hostile payloads a tenant could leave in them."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import zlib

from kafka_retention.kube_objects.chunks import CHUNK_BYTES, PART_LABEL, sink_configmaps


class FakeConfigMaps:
    """ConfigMaps by (namespace, name), with the label selectors the adapters use."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, object]] = {}
        self.listed: list[tuple[str, int | None]] = []

    def put(self, objs: list[dict[str, object]]) -> None:
        for obj in objs:
            meta = obj["metadata"]
            assert isinstance(meta, dict)
            self.objects[(meta["namespace"], meta["name"])] = obj

    def read(self, namespace: str, name: str) -> dict[str, object] | None:
        return self.objects.get((namespace, name))

    def _matches(self, obj: dict[str, object], selector: str) -> bool:
        labels = obj["metadata"].get("labels") or {}  # type: ignore[attr-defined]
        for term in selector.split(","):
            key, _, value = term.partition("=")
            if key not in labels or (value and labels[key] != value):
                return False
        return True

    def list(
        self, namespace: str, selector: str, limit: int | None = None
    ) -> list[dict[str, object]]:
        self.listed.append((namespace, limit))
        found = [o for (ns, _), o in sorted(self.objects.items()) if ns == namespace]
        found = [o for o in found if self._matches(o, selector)]
        return found[:limit] if limit is not None else found

    def delete(self, namespace: str, selector: str) -> None:
        for key in [
            k for k, o in self.objects.items() if k[0] == namespace and self._matches(o, selector)
        ]:
            del self.objects[key]


@functools.cache  # a gibibyte takes seconds to pack: once a session
def gzip_bomb(decoded: int = 1 << 30) -> bytes:
    """`decoded` zero bytes gzipped: about a thousandth of that on the wire."""
    pack = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return b"".join([*(pack.compress(block) for _ in range(decoded >> 20)), pack.flush()])


def bomb_configmaps(run: str, namespace: str, data: bytes) -> list[dict[str, object]]:
    """A set whose manifest honestly describes a gzip bomb (the checksum matches)."""
    objs = sink_configmaps(run, namespace, "", compress=True)
    parts = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]
    template, manifest = objs[0], objs[-1]
    out: list[dict[str, object]] = []
    for i, part in enumerate(parts):
        obj = json.loads(json.dumps(template))
        obj["metadata"]["name"] = f"{run}-plan-{i:04d}"
        obj["metadata"]["labels"][PART_LABEL] = str(i)
        obj["binaryData"] = {"part": base64.b64encode(part).decode()}
        out.append(obj)
    manifest = json.loads(json.dumps(manifest))
    manifest["data"]["manifest.json"] = json.dumps(
        {
            "chunks": len(parts),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "encoding": "gzip",
        }
    )
    return [*out, manifest]
