"""`kubectl kafka-retention`: the kubectl plugin (krew conventions). kubectl runs the
executable `kubectl-kafka_retention` found on PATH for `kubectl kafka-retention ...`; the
Python package installs it.

    status          RetentionPolicies and RecordPurges, one table
    explain REF     a policy's or a purge's cuts and what limited them, in words
    plan REF | -f   what would be deleted now, without deleting

Exit status: 0 done, 1 a failure (the API server refused, the object is missing, the plan
failed), 2 a usage error. Expected errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from kafka_retention.cli.common import UsageError, kube_connection_flags
from kafka_retention.cli.plugin.kube import Cluster, PluginError
from kafka_retention.core.resources import (
    GROUP,
    RECORD_ERASURES,
    RECORD_PURGES,
    RETENTION_POLICIES,
)

if TYPE_CHECKING:
    from kafka_retention.cli.plugin import dry_copy

PROG = "kubectl kafka-retention"

# How kubectl users name the two kinds: kind, singular, plural, short name.
_KINDS = {
    "retentionpolicy": RETENTION_POLICIES,
    "retentionpolicies": RETENTION_POLICIES,
    "retpol": RETENTION_POLICIES,
    "policy": RETENTION_POLICIES,
    "recordpurge": RECORD_PURGES,
    "recordpurges": RECORD_PURGES,
    "rpurge": RECORD_PURGES,
    "purge": RECORD_PURGES,
}
_KIND_OF = {RETENTION_POLICIES: "RetentionPolicy", RECORD_PURGES: "RecordPurge"}


def _output_flag(parser: argparse.ArgumentParser, choices: tuple[str, ...], rest: str) -> None:
    parser.add_argument(
        "-o", "--output", choices=choices, default="table", help=f"table (default), {rest}"
    )


def _seconds(value: str) -> float:
    """--timeout: seconds, or a duration as the CRDs spell them (90s, 5m)."""
    from kafka_retention.core.durations import parse_duration_ms

    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parse_duration_ms(value) / 1000
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _about(words: str) -> str:
    """A description, wrapped: the raw formatter that keeps the examples' lines as written
    would not wrap it either."""
    return textwrap.fill(words, 88)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=_about(
            "See what the Kafka Retention Operator's RetentionPolicies and "
            "RecordPurges did, why a cut stopped where it did, and what a purge would delete."
        ),
        epilog=f"Examples:\n  {PROG} status -A\n  {PROG} explain retentionpolicy/orders -n "
        f"team-orders\n  {PROG} plan -f purge.yaml -o json > offsets.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kube_connection_flags(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    status = sub.add_parser(
        "status",
        help="a table of RetentionPolicies and RecordPurges",
        description=_about(
            "One row per RetentionPolicy and RecordPurge: the last run, records and "
            "estimated bytes deleted (last run and total), the next run, who held the cuts "
            "back, and the conditions (type=reason, the failing ones first)."
        ),
        epilog=f"Examples:\n  {PROG} status -A\n  {PROG} status -n team-orders -o wide",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kube_connection_flags(status, suppress=True)
    status.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list every namespace's objects"
    )
    _output_flag(status, ("table", "wide", "json"), "wide (a few more columns) or json")

    explain = sub.add_parser(
        "explain",
        help="a policy's or a purge's cuts, and what limited them, in words",
        description=_about(
            "For a RetentionPolicy: per topic, the cut the winning rule proposed and "
            "each guard that limited it (a group's commit, minRetention, minRecords, the high "
            "watermark, a policy of another namespace, the binding, a compacted topic). For a "
            "RecordPurge: its phase, conditions and each partition's cut and reason. REF is "
            "KIND/NAME "
            "(retentionpolicy/x, recordpurge/y) or a NAME, looked up as a policy first."
        ),
        epilog=f"Examples:\n  {PROG} explain orders-retention\n  {PROG} explain "
        "recordpurge/drop-bad-range -n team-orders",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kube_connection_flags(explain, suppress=True)
    explain.add_argument("ref", metavar="KIND/NAME|NAME")

    plan = sub.add_parser(
        "plan",
        help="what a purge or policy would delete now, without deleting",
        description=_about(
            "For a RecordPurge (from a file or by name): the operator plans a copy "
            "with spec.dryRun true in the same namespace, under its tenancy; the plugin prints "
            "the records and estimated bytes per partition, then deletes the copy. For a "
            "RetentionPolicy: its cuts now. -o json is kafka-delete-records.sh's "
            "--offset-json-file format; -o csv has topic,partition,offset,records,bytes."
        ),
        epilog=f"Examples:\n  {PROG} plan -f purge.yaml\n  {PROG} plan recordpurge/drop-bad "
        f"-o csv\n  {PROG} plan -f purge.yaml -o json > offsets.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kube_connection_flags(plan, suppress=True)
    plan.add_argument("ref", nargs="?", metavar="KIND/NAME|NAME", help="an object on the cluster")
    plan.add_argument(
        "-f", "--filename", metavar="FILE", help="a file holding the object ('-': stdin)"
    )
    _output_flag(
        plan, ("table", "csv", "json"), "csv, or json (kafka-delete-records.sh's offset JSON)"
    )
    plan.add_argument(
        "--timeout",
        type=_seconds,
        default=120.0,
        metavar="DURATION",
        help="how long to wait for the operator's plan, e.g. 90s or 5m (default 2m)",
    )
    return parser


def _connect(args: argparse.Namespace) -> Cluster:
    from kafka_retention.cli.plugin.kube import connect

    return connect(args.kubeconfig, args.context)


def _status(args: argparse.Namespace, out: TextIO) -> int:
    from kafka_retention.cli.plugin import status

    cluster = _connect(args)
    namespace = None if args.all_namespaces else args.namespace or cluster.namespace
    policies = cluster.list(RETENTION_POLICIES, namespace)
    purges = cluster.list(RECORD_PURGES, namespace)
    erasures = cluster.list(RECORD_ERASURES, namespace)
    rows = status.rows(policies, purges, datetime.now(UTC), erasures)
    if not rows and args.output != "json":
        where = "any namespace" if namespace is None else f"namespace {namespace}"
        print(
            f"No RetentionPolicies, RecordPurges or RecordErasures found in {where}.",
            file=sys.stderr,
        )
        return 0
    out.write(status.render(rows, args.output))
    return 0


def resolve(cluster: Cluster, namespace: str, ref: str) -> tuple[str, dict[str, Any]]:
    """(plural, object) for KIND/NAME, or for a NAME: the policy of that name, else the
    purge."""
    kind, _, name = ref.rpartition("/")
    if kind:
        plural = _KINDS.get(kind.lower().removesuffix(f".{GROUP}"))
        if plural is None:
            raise UsageError(f"unknown kind {kind!r}: use retentionpolicy/NAME or recordpurge/NAME")
        found = cluster.get(plural, namespace, name)
        if found is None:
            raise PluginError(f'{_KIND_OF[plural]} "{name}" not found in namespace {namespace}')
        return plural, found
    if not name:
        raise UsageError("name a RetentionPolicy or a RecordPurge")
    for plural in (RETENTION_POLICIES, RECORD_PURGES):
        found = cluster.get(plural, namespace, name)
        if found is not None:
            return plural, found
    raise PluginError(f'no RetentionPolicy or RecordPurge named "{name}" in namespace {namespace}')


def _purge_entries(cluster: Cluster, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    from kafka_retention.cli.plugin.plan import entries_of
    from kafka_retention.kube_objects.chunks import set_base

    meta = obj["metadata"]
    base = set_base("RecordPurge", meta["name"])
    return entries_of(obj, lambda suffix: cluster.configmap_set(meta["namespace"], base, suffix))


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    from kafka_retention.cli.plugin.explain import render_policy, render_purge

    cluster = _connect(args)
    plural, obj = resolve(cluster, args.namespace or cluster.namespace, args.ref)
    if plural == RETENTION_POLICIES:
        out.write(render_policy(obj))
    else:
        out.write(render_purge(obj, _purge_entries(cluster, obj)))
    return 0


def read_document(filename: str, stdin: TextIO) -> dict[str, Any]:
    """The one RetentionPolicy or RecordPurge in a YAML or JSON file."""
    try:
        content = stdin.read() if filename == "-" else Path(filename).read_text()
    except OSError as err:
        raise UsageError(f"cannot read {filename}: {err.strerror}") from None
    try:
        documents = [d for d in yaml.safe_load_all(content) if d is not None]
    except yaml.YAMLError as err:
        raise UsageError(f"{filename} is not YAML: {err}") from None
    ours = [
        d
        for d in documents
        if isinstance(d, dict) and d.get("kind") in ("RetentionPolicy", "RecordPurge")
    ]
    if len(ours) != 1:
        raise UsageError(
            f"{filename} holds {len(ours)} RetentionPolicies and RecordPurges; plan takes one"
        )
    return ours[0]


def _plan(args: argparse.Namespace, out: TextIO) -> int:
    from kafka_retention.cli.plugin import dry_copy, plan
    from kafka_retention.cli.plugin.progress import Progress

    if (args.filename is None) == (args.ref is None):
        raise UsageError("plan takes either -f FILE or KIND/NAME|NAME")
    if args.filename is not None:
        document = read_document(args.filename, sys.stdin)
        given = (document.get("metadata") or {}).get("namespace")
        if args.namespace and given and given != args.namespace:
            raise UsageError(f"{args.filename} is in namespace {given}, not {args.namespace} (-n)")
        cluster = _connect(args)
        namespace = args.namespace or given or cluster.namespace
        kind = document["kind"]
    else:
        cluster = _connect(args)
        namespace = args.namespace or cluster.namespace
        plural, document = resolve(cluster, namespace, args.ref)
        kind = _KIND_OF[plural]
    asking = dry_copy.Asking(cluster, namespace, args.timeout, Progress(sys.stderr))
    if kind == "RetentionPolicy":
        return _plan_policy(asking, document, args.output, out)
    entries, copy = plan.run(document, asking)
    why = plan.failure(copy)
    if why is not None:
        raise PluginError(f"the operator could not plan it: {why}")
    out.write(plan.render(entries, args.output))
    failed = [e for e in entries if e.get("state") == "Failed"]
    for e in failed:
        print(f"error: {e.get('topic')}-{e.get('partition')}: {e.get('error')}", file=sys.stderr)
    return 1 if failed else 0


def _plan_policy(
    asking: dry_copy.Asking, document: Mapping[str, Any], output: str, out: TextIO
) -> int:
    from kafka_retention.cli.plugin import policy_plan

    copy = policy_plan.run(document, asking)
    out.write(policy_plan.render(copy, document, output))
    return 0


_COMMANDS = {"status": _status, "explain": _explain, "plan": _plan}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args, sys.stdout)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except PluginError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
