"""Payloads larger than one ConfigMap, as a set of them: parts `<name>-plan-NNNN`, then a
manifest `<name>-plan` with the count and a checksum, written last so that a reader never
assembles a half-written payload. Pure: the adapters create and read the objects."""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_retention.core.resources import GROUP

RUN_LABEL = f"{GROUP}/run"
SET_LABEL = f"{GROUP}/set"
PART_LABEL = f"{GROUP}/part"
# A ConfigMap holds at most 1 MiB; leave room for metadata.
CHUNK_BYTES = 900 * 1024
# What a set may hold, checked before its parts are listed and while it is decompressed:
# sets come back from places a tenant may write (a RecordPurge's namespace, a Spark run's
# namespace in open tenancy), so a forged manifest or a small gzip that inflates to
# gigabytes must not take the operator's memory. Sized from the largest plan the project
# runs, 100,000 partitions of two groups (bench/, BENCHMARKS.md), with rows shaped as the
# plan job writes them (tests/unit/test_payload_bounds.py measures it): about 800 bytes a
# row as JSON lines (76 MiB), about 1,600 (155 MiB) when every partition also carries
# both groups' unconsumed key samples; gzipped, 1 to 4 MiB. The decoded limit leaves
# that worst case 1.6 times its size, the stored one 16 times its gzip (real keys
# compress worse than synthetic ones). Every writer (the Spark driver, ConfigMapStore)
# compresses; a set stored as is must fit the stored limit too.
MAX_DECODED_BYTES = 256 * 1024 * 1024
MAX_STORED_BYTES = 64 * 1024 * 1024
MAX_PARTS = -(-MAX_STORED_BYTES // CHUNK_BYTES)


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
    if len(data) > MAX_DECODED_BYTES:
        # Refused here, where the cause is known, rather than by the reader.
        raise SinkError(f"payload of {len(data)} bytes; at most {MAX_DECODED_BYTES} are read back")
    if compress:
        data = gzip.compress(data, compresslevel=6, mtime=0)
    if len(data) > MAX_STORED_BYTES:
        raise SinkError(f"{len(data)} bytes to store; at most {MAX_STORED_BYTES} are read back")
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


def expected_parts(manifest: Mapping[str, Any]) -> int:
    """How many parts the manifest ConfigMap announces, refused (SinkError) above the
    limits before a single part is read: a reader lists at most this many, plus one."""
    return int(_manifest(manifest)["chunks"])


def _manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    try:
        info = json.loads((manifest.get("data") or {})["manifest.json"])
        chunks, size = info["chunks"], info["bytes"]
        sha256, encoding = str(info["sha256"]), info.get("encoding", "identity")
    except (KeyError, TypeError, ValueError) as err:
        raise SinkError(f"the manifest cannot be read: {err!r}") from None
    if type(chunks) is not int or type(size) is not int or chunks < 1 or size < 0:
        raise SinkError(f"the manifest announces {chunks!r} parts of {size!r} bytes")
    if chunks > MAX_PARTS or size > MAX_STORED_BYTES:
        raise SinkError(
            f"the manifest announces {chunks} parts of {size} bytes; at most {MAX_PARTS} "
            f"parts and {MAX_STORED_BYTES} bytes are read (MAX_STORED_BYTES)"
        )
    if encoding not in ("gzip", "identity"):
        raise SinkError(f"unknown encoding {encoding!r}")
    return {"chunks": chunks, "bytes": size, "sha256": sha256, "encoding": encoding}


def assemble(manifest: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> str:
    """The payload back from the manifest ConfigMap and its parts, checked, and bounded:
    at most MAX_STORED_BYTES read and MAX_DECODED_BYTES decompressed (SinkError beyond)."""
    info = _manifest(manifest)
    if len(parts) > info["chunks"]:
        raise SinkError(f"expected {info['chunks']} parts, found {len(parts)} or more")
    by_index: dict[int, Mapping[str, Any]] = {}
    for part in parts:
        label = ((part.get("metadata") or {}).get("labels") or {}).get(PART_LABEL, "")
        if not str(label).isdigit() or int(label) in by_index:
            raise SinkError(f"a part with a missing, repeated or bad index {label!r}")
        by_index[int(label)] = part
    if sorted(by_index) != list(range(info["chunks"])):
        raise SinkError(f"expected {info['chunks']} parts, found {sorted(by_index)}")
    pieces, read = [], 0
    for i in range(info["chunks"]):
        try:
            piece = base64.b64decode((by_index[i].get("binaryData") or {})["part"], validate=True)
        except (KeyError, TypeError, binascii.Error) as err:
            raise SinkError(f"part {i} holds no data: {err!r}") from None
        read += len(piece)
        if read > info["bytes"]:
            raise SinkError(f"the parts hold more than the manifest's {info['bytes']} bytes")
        pieces.append(piece)
    data = b"".join(pieces)
    if len(data) != info["bytes"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise SinkError("plan parts do not match their manifest's checksum")
    if info["encoding"] == "gzip":
        data = gunzip(data)
    elif len(data) > MAX_DECODED_BYTES:
        raise SinkError(f"payload larger than {MAX_DECODED_BYTES} bytes (MAX_DECODED_BYTES)")
    try:
        return data.decode()
    except UnicodeDecodeError as err:
        raise SinkError(f"the payload is not UTF-8: {err}") from None


def gunzip(data: bytes, limit: int = MAX_DECODED_BYTES) -> bytes:
    """gzip.decompress that stops at `limit` bytes out: a small gzip can inflate a
    thousandfold (a megabyte to a gibibyte), so the output is capped, never trusted."""
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip header and trailer
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error as err:
        raise SinkError(f"the payload is not valid gzip: {err}") from None
    if len(out) > limit or inflate.unconsumed_tail:
        raise SinkError(
            f"the payload decompresses to more than {limit} bytes (MAX_DECODED_BYTES); "
            "refused without reading further"
        )
    if not inflate.eof or inflate.unused_data:
        raise SinkError("the gzip payload is truncated or followed by other data")
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def set_base(kind: str, name: str) -> str:
    """`kr-<kind>-<name>`: the base of an object's ConfigMap sets, short enough for the
    suffixes (`-results-0000`) to keep a valid name; long names are cut and hashed."""
    base = f"kr-{kind.lower()}-{name}"
    if len(base) <= 200:
        return base
    return f"{base[:190]}-{hashlib.sha256(base.encode()).hexdigest()[:8]}"
