"""`kafka-retention erase`, `evidence` and `verify-receipt`: write a RecordErasure that
holds only digests, fetch an erasure's signed receipt, and check one.

`erase` hashes the keys here, on the user's machine, so the key itself never reaches the
API server, etcd, an annotation or the operator's logs: only its SHA-256 does. Nothing
this module prints or raises holds a key's bytes or text.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from kafka_retention.cli.common import UsageError, fail
from kafka_retention.core import receipts
from kafka_retention.core.erasure import key_digest, parse_erasure_spec
from kafka_retention.core.resources import API_VERSION, RECORD_ERASURES
from kafka_retention.core.specs import SpecError

KIND = "RecordErasure"
RECEIPT_SUFFIX = "receipt"  # the ConfigMap set the operator stores the signed receipt in

# verify-receipt's exit status when the receipt is intact but no --public-key said whose
# signature to expect: anyone can sign a receipt with a key of their own, so this must not
# read as success to a script that tests for 0.
INTACT_SIGNER_NOT_CHECKED = 3


def erase_resource(
    name: str,
    namespace: str | None,
    cluster_ref: str,
    topics: list[str],
    keys: list[bytes],
    dry_run: bool,
    *,
    pattern: str | None = None,
    on_delete_topics: str = "report",
    accept_collateral: bool = False,
    max_collateral_records: int | None = None,
    deadline: str | None = None,
) -> dict[str, Any]:
    """The RecordErasure, every key as its SHA-256 only, checked by the operator's own
    parser (so what is printed is what the operator accepts)."""
    if not keys:
        raise UsageError("give at least one key (--key, --key-base64 or --key-file)")
    topic_spec: dict[str, Any] = {}
    if topics:
        topic_spec["names"] = list(dict.fromkeys(topics))
    if pattern is not None:
        topic_spec["pattern"] = pattern
    spec: dict[str, Any] = {
        "cluster": {"clusterRef": cluster_ref},
        "topics": topic_spec,
        # Sorted: the order of the command line tells nothing the object should keep.
        "keys": [{"sha256": d} for d in sorted({key_digest(k) for k in keys})],
    }
    if on_delete_topics != "report":
        spec["onDeleteTopics"] = on_delete_topics
    if accept_collateral:
        spec["acceptCollateral"] = True
    if max_collateral_records is not None:
        spec["maxCollateralRecords"] = max_collateral_records
    if deadline is not None:
        spec["deadline"] = deadline
    if dry_run:
        spec["dryRun"] = True
    try:
        parse_erasure_spec(spec)
    except SpecError as err:
        raise UsageError(f"the RecordErasure would be refused: {err}") from None
    held = _key_in_name(name, keys)
    if held is not None:
        # Which one, by position: the name is stored in events, log lines and the
        # receipt's ConfigMap names, where no key may be.
        raise UsageError(
            f"--name holds key number {held}: an erasure's name is kept in events, logs and "
            "ConfigMap names; name it after the request instead (e.g. erasure-request-1042)"
        )
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


# A key shorter than this (its letters and digits) is not looked for in the name: "42"
# would refuse names that merely hold a number.
_SHORTEST_KEY_IN_NAME = 4


def _key_in_name(name: str, keys: list[bytes]) -> int | None:
    """The position (from 1) of a key the name spells, its punctuation aside
    (customer_4711 in forget-customer-4711), or None."""

    def letters(text: str) -> str:
        return "".join(c for c in text.lower() if c.isalnum())

    plain = letters(name)
    for i, key in enumerate(keys):
        text = letters(key.decode("utf-8", errors="ignore"))
        if len(text) >= _SHORTEST_KEY_IN_NAME and text in plain:
            return i + 1
    return None


def keys_from_args(text_keys: list[str], b64_keys: list[str], key_file: Path | None) -> list[bytes]:
    """The key bytes: each --key as UTF-8, each --key-base64 decoded, and each non-empty
    line of --key-file as UTF-8 (its line break not included)."""
    keys = [k.encode("utf-8") for k in text_keys]
    for i, given in enumerate(b64_keys):
        try:
            keys.append(base64.b64decode(given, validate=True))
        except (binascii.Error, ValueError):
            # Which one, by position: the value may be the key itself.
            raise UsageError(f"--key-base64 number {i + 1} is not valid base64") from None
    if key_file is not None:
        try:
            data = key_file.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {key_file}: {exc.strerror}") from None
        keys.extend(line for line in data.splitlines() if line)
    empty = [i + 1 for i, k in enumerate(keys) if not k]
    if empty:
        raise UsageError(f"key number {empty[0]} is empty; a key has at least one byte")
    return keys


def print_erase(args: argparse.Namespace) -> int:
    """`kafka-retention erase`: the RecordErasure as YAML on stdout, for `kubectl create
    -f -` (client-side `kubectl apply` copies the object into an annotation limited to
    256 KiB: about 3,000 digests; create, or apply --server-side, take 10,000). Exit 2
    on a usage error."""
    try:
        keys = keys_from_args(args.key or [], args.key_base64 or [], args.key_file)
        resource = erase_resource(
            args.name,
            args.namespace,
            args.cluster_ref,
            args.topic or [],
            keys,
            args.dry_run,
            pattern=args.pattern,
            on_delete_topics=args.on_delete_topics,
            accept_collateral=args.accept_collateral,
            max_collateral_records=args.max_collateral_records,
            deadline=args.deadline,
        )
    except UsageError as err:
        return fail(2, f"error: {err}")
    count = len(resource["spec"]["keys"])
    sys.stdout.write(
        f"# RecordErasure of {count} key(s), each as its SHA-256 only (the keys themselves "
        "were not written); apply with `kubectl create -f -`.\n"
    )
    sys.stdout.write(yaml.safe_dump(resource, sort_keys=False))
    return 0


def print_evidence(args: argparse.Namespace) -> int:
    """`kafka-retention evidence NAME`: the signed receipt of a RecordErasure, read from
    the ConfigMap its status.receipt names and checked against status.receipt.sha256,
    written to -o FILE or stdout. Exit 1 when there is none or it does not match."""
    from kafka_retention.cli.plugin.kube import PluginError, connect

    try:
        cluster = connect(getattr(args, "kubeconfig", None), getattr(args, "context", None))
        namespace = args.namespace or cluster.namespace
        found = cluster.get(RECORD_ERASURES, namespace, args.name)
        if found is None:
            raise PluginError(f"no RecordErasure {args.name} in namespace {namespace}")
        status = found.get("status") or {}
        stated = status.get("receipt") or {}
        config_map = stated.get("configMap")
        if not config_map:
            phase = status.get("phase", "Pending")
            raise PluginError(
                f"RecordErasure {namespace}/{args.name} has no receipt yet (phase {phase}); "
                "it is signed once the keys are erased"
            )
        base = str(config_map).removesuffix(f"-{RECEIPT_SUFFIX}")
        payload = cluster.configmap_set(namespace, base, RECEIPT_SUFFIX)
        if payload is None:
            raise PluginError(f"ConfigMap {namespace}/{config_map} is missing")
    except PluginError as err:
        return fail(1, f"error: {err}")
    try:
        signed = receipts.parse_signed(payload)
    except receipts.ReceiptError as err:
        return fail(1, f"error: ConfigMap {config_map} does not hold a receipt: {err}")
    if not isinstance(signed, dict) or signed.get("sha256") != stated.get("sha256"):
        return fail(
            1,
            f"error: the receipt in ConfigMap {config_map} is not the one status.receipt "
            f"states (sha256 {stated.get('sha256')})",
        )
    text = json.dumps(signed, indent=2, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text)
        print(f"wrote {args.output} (receipt sha256 {signed['sha256']})", file=sys.stderr)
    return 0


def verify_receipt(path: Path, public_key: Path | None) -> int:
    """`kafka-retention verify-receipt FILE`: VERIFY_RECEIPT_DESCRIPTION's exit statuses;
    "valid:" (0) or "intact, signer not checked:" (3) on stdout, "invalid:" (1) or
    "error:" (2) on stderr."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return fail(2, f"error: cannot read {path}: {exc.strerror}")
    trusted = None
    if public_key is not None:
        try:
            trusted = receipts.load_public_key(public_key.read_bytes())
        except OSError as exc:
            return fail(2, f"error: cannot read {public_key}: {exc.strerror}")
        except receipts.ReceiptError as err:
            return fail(2, f"error: {public_key}: {err}")
    try:
        signed = receipts.parse_signed(data)
    except receipts.ReceiptError as err:
        return fail(1, f"invalid: {path}: {err}")
    if not isinstance(signed, dict):
        return fail(1, f"invalid: {path} is not a signed receipt")
    why = receipts.verify(signed, trusted)
    if why is not None:
        return fail(1, f"invalid: {why}")
    # Verified, so canonical: every string below is valid Unicode.
    doc = signed["receipt"]
    resource = doc.get("resource") or {}
    what = (
        f"receipt sha256 {signed['sha256']} of RecordErasure "
        f"{resource.get('namespace')}/{resource.get('name')}, "
        f"{len(doc.get('digests') or [])} digest(s), completed {doc.get('completedAt')}"
    )
    key = signed["signature"]["keyId"]
    if trusted is None:
        print(
            f"intact, signer not checked: {what}, signed by key {key}, which nothing "
            "vouches for: anyone can sign a receipt with a key of their own. Pass "
            "--public-key with the operator's signing public key to check the signer "
            f"(exit {INTACT_SIGNER_NOT_CHECKED})."
        )
        return INTACT_SIGNER_NOT_CHECKED
    print(f"valid: {what}, signed by the trusted key {key}")
    return 0
