"""`kafka-retention ledger list` and `ledger check`: the digests a cluster's RecordErasures
erased (core/ledger.py, kept in ConfigMaps of the operator's namespace), and a read-only
scan of topics for any of them (after a restore from backup, a mirror replay, a
re-ingestion), with a RecordErasure to erase again what is found.

Nothing here reads, prints or raises a key: the ledger holds digests, and the scan
(adapters.kafka_erasure, services.erasure.scan) hashes each key it reads and keeps the
digest. Exit statuses of `check`: 0 none found, 1 some found, 2 an error (no ledger for
the cluster, a topic that does not exist, Kafka or the API server not answering).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from kafka_retention.cli.common import (
    UsageError,
    command_config_flag,
    fail,
    kubeconfig_flags,
    operator_namespace_flag,
    read_properties,
)
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable, WriteRefused
from kafka_retention.core.ledger import LedgerEntry, LedgerError

if TYPE_CHECKING:  # the services package loads the erasure pipeline (and cryptography)
    from kafka_retention.core.erasure_scan import PartitionScan
    from kafka_retention.services.erasure.ledger import LedgerStore
    from kafka_retention.services.ports import ErasureKafka

# A KafkaClusterBinding's name (a DNS subdomain): what a printed RecordErasure can name
# in spec.cluster.clusterRef; a ledger kept under an inline cluster's bootstrap servers
# gets spec.cluster.bootstrapServers instead.
_BINDING_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")

FOUND = 1
ERROR = 2


class CheckError(Exception):
    """Why a check could not be made; exit 2."""


@dataclass(frozen=True)
class Found:
    """A ledger digest in a partition: where, and which erasures erased it before."""

    tp: TopicPartition
    digest: str
    first_offset: int
    last_offset: int
    records: int
    values: int
    erasures: tuple[str, ...]  # namespace/name of each ledger entry of the digest

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "digest": self.digest,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "records": self.records,
            "values": self.values,
            "erasedBy": list(self.erasures),
        }


def ledger_entries(
    ledger: LedgerStore, cluster: str, namespace: str | None = None
) -> list[LedgerEntry]:
    """Every entry of the cluster's ledger, of every namespace's erasures (or only
    `namespace`'s), by digest; CheckError when it cannot be read."""
    try:
        shards = ledger.read_all(cluster, namespace)
        entries = [e for shard in shards for e in shard.entries]
        return sorted(entries, key=lambda e: (e.digest, e.completed_at, e.namespace, e.uid))
    except WriteRefused as err:  # the adapter's word for any refusal by the API server
        raise CheckError(f"the ledger cannot be read: HTTP {err.status} {err.reason}") from None
    except LedgerError as err:
        raise CheckError(f"the ledger cannot be read: {err}") from None


def covers(erased: str, topic: str) -> bool:
    """Whether a topic is the one an entry names, or its mirror (MirrorMaker's default
    policy names a replicated topic `<source alias>.<topic>`)."""
    return topic == erased or topic.endswith("." + erased)


def find(
    kafka: ErasureKafka,
    topics: Sequence[str],
    entries: Sequence[LedgerEntry],
    any_topic: bool = False,
) -> tuple[list[Found], dict[TopicPartition, PartitionScan], int]:
    """Every partition of `topics` read whole for the entries' digests (read-only).

    A digest counts only in a topic one of its entries names (or a mirror of one): a
    tenant may record any digest by erasing it on a topic of its own, and a check of
    another tenant's topic must not turn that into an erasure there. `any_topic` lifts it
    (a topic renamed on restore); the third value counts the findings left out."""
    from kafka_retention.services.erasure.scan import scan

    parts = kafka.topic_partitions(list(dict.fromkeys(topics)))
    tps: list[TopicPartition] = []
    for topic in topics:
        got = parts.get(topic)
        if got is None or isinstance(got, KafkaFailure):
            why = got if got is not None else "no answer"
            raise CheckError(f"topic {topic}: {why}")
        tps += [TopicPartition(topic, p) for p in got]
    by_digest: dict[str, list[str]] = {}
    erased_in: dict[str, set[str]] = {}
    for e in entries:
        by_digest.setdefault(e.digest, []).append(f"{e.namespace}/{e.name}")
        # Only the topics an entry lists: one that names more than it lists (an erasure
        # over MAX_TOPICS_PER_ENTRY topics) is no licence for every topic, or a tenant's
        # pattern erasure over 51 topics of its own would count in another's.
        erased_in.setdefault(e.digest, set()).update(e.topics)

    def named(digest: str, topic: str) -> bool:
        return any_topic or any(covers(t, topic) for t in erased_in.get(digest, ()))

    try:
        scans = scan(kafka, tps, frozenset(by_digest))
    except KafkaUnavailable as err:
        raise CheckError(str(err)) from None
    found = [
        Found(
            tp,
            digest,
            hits.first_offset,
            hits.last_offset,
            hits.records,
            hits.values,
            tuple(sorted(set(by_digest[digest]))),
        )
        for tp, partition_scan in sorted(scans.items())
        for digest, hits in sorted(partition_scan.hits.items())
        if hits.records
    ]
    kept = [f for f in found if named(f.digest, f.tp.topic)]
    return kept, scans, len(found) - len(kept)


def erasure_manifests(
    namespace: str, name: str, cluster: str, bootstrap: str, found: Sequence[Found]
) -> list[dict[str, Any]]:
    """RecordErasures for the found digests (sha256 form), on the topics they were found
    in: one per MAX_KEYS digests (`NAME`, then `NAME-2`, ...), each checked by the
    operator's own parser."""
    from kafka_retention.core.erasure import MAX_KEYS, parse_erasure_spec
    from kafka_retention.core.resources import API_VERSION
    from kafka_retention.core.specs import SpecError

    digests = sorted({f.digest for f in found})
    topics = sorted({f.tp.topic for f in found})
    named = (
        {"clusterRef": cluster}
        if _BINDING_NAME.fullmatch(cluster)
        else {"bootstrapServers": bootstrap}
    )
    out = []
    for i in range(0, len(digests), MAX_KEYS):
        spec = {
            "cluster": named,
            "topics": {"names": topics},
            "keys": [{"sha256": d} for d in digests[i : i + MAX_KEYS]],
        }
        try:
            parse_erasure_spec(spec)
        except SpecError as err:
            raise CheckError(f"the RecordErasure would be refused: {err}") from None
        part = name if i == 0 else f"{name}-{i // MAX_KEYS + 1}"
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": "RecordErasure",
                "metadata": {"name": part, "namespace": namespace},
                "spec": spec,
            }
        )
    return out


# --- the commands ----------------------------------------------------------------------


def _ledger(args: argparse.Namespace) -> LedgerStore:
    from kafka_retention.adapters.ledger_store import KubeLedger
    from kafka_retention.cli.plugin.kube import PluginError, connect

    try:
        kube = connect(args.kubeconfig, args.context)
    except PluginError as err:
        raise CheckError(str(err)) from None
    return KubeLedger(args.operator_namespace, api=kube.api)


def _whose(cluster: str, namespace: str | None) -> str:
    return f"cluster {cluster}" + (f" by erasures in namespace {namespace}" if namespace else "")


def run_list(
    ledger: LedgerStore,
    cluster: str,
    output: str,
    out: TextIO | None = None,
    namespace: str | None = None,
) -> int:
    """`ledger list`: one line per entry (digest, topics, erasure, completion, cluster
    id) of every namespace's erasures, or `namespace`'s, or `-o json`. Exit 0, or 2 when
    the ledger cannot be read. `out`: stdout as it is when called (a default bound at
    import would miss a redirection)."""
    out = out or sys.stdout
    try:
        entries = ledger_entries(ledger, cluster, namespace)
    except CheckError as err:
        return fail(ERROR, f"error: {err}")
    if output == "json":
        doc: dict[str, Any] = {"cluster": cluster, "entries": [e.to_json() for e in entries]}
        if namespace is not None:
            doc["namespace"] = namespace
        out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return 0
    if not entries:
        print(f"no digest is recorded for {_whose(cluster, namespace)}", file=sys.stderr)
        return 0
    rows = [("DIGEST", "TOPICS", "ERASURE", "COMPLETED", "CLUSTER-ID")]
    for e in entries:
        topics = ",".join(e.topics) or "-"
        if e.more_topics:
            topics += f",+{e.more_topics}"
        rows.append((e.digest, topics, f"{e.namespace}/{e.name}", e.completed_at, e.cluster_id))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + f"  {r[-1]}\n")
    return 0


def run_check(
    ledger: LedgerStore,
    connect: Callable[[], ErasureKafka],
    cluster: str,
    topics: Sequence[str],
    *,
    bootstrap: str,
    print_erasure: str | None = None,
    output: str = "text",
    out: TextIO | None = None,
    any_topic: bool = False,
    namespace: str | None = None,
) -> int:
    """`ledger check`: exit 1 with the findings when any ledger digest (of every
    namespace's erasures, or `namespace`'s) is in the topics, 0 when none is, 2 on an
    error. With `print_erasure` (NAMESPACE/NAME) the RecordErasure goes to stdout and the
    findings to stderr."""
    out = out or sys.stdout
    try:
        where = _erasure_name(print_erasure) if print_erasure else None
        entries = ledger_entries(ledger, cluster, namespace)
        if not entries:
            raise CheckError(
                f"no digest is recorded for {_whose(cluster, namespace)}: check --cluster, "
                "--namespace and --operator-namespace (an empty ledger would pass every check)"
            )
        kafka = connect()
        found, scans, elsewhere = find(kafka, topics, entries, any_topic)
        manifests = erasure_manifests(*where, cluster, bootstrap, found) if where else []
        cluster_id = kafka.cluster_id()
    except (CheckError, UsageError) as err:
        return fail(ERROR, f"error: {err}")
    except KafkaUnavailable as err:
        return fail(ERROR, f"error: {err}")
    report = sys.stderr if where else out
    if elsewhere:
        print(
            f"note: {elsewhere} findings of digests erased from other topics left out (a "
            "digest counts in the topics its erasure named, or their mirrors; --any-topic "
            "counts them, once you know why they are there)",
            file=sys.stderr,
        )
    digests = {e.digest for e in entries}
    ids = sorted({e.cluster_id for e in entries})
    examined = sum(s.examined for s in scans.values())
    if output == "json" and not where:
        doc: dict[str, Any] = {
            "cluster": cluster,
            "clusterId": cluster_id,
            "ledgerClusterIds": ids,
            "digests": len(digests),
            "partitions": len(scans),
            "recordsExamined": examined,
            "found": [f.to_json() for f in found],
        }
        if namespace is not None:
            doc["namespace"] = namespace
        report.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        if cluster_id not in ids:
            print(
                f"note: the ledger's entries name cluster id(s) {', '.join(ids)}; this cluster's "
                f"id is {cluster_id} (a restore or a mirror: checked by the ledger's name)",
                file=sys.stderr,
            )
        for f in found:
            report.write(
                f"found {f.tp.topic} partition {f.tp.partition} offsets {f.first_offset}.."
                f"{f.last_offset} ({f.records} records, {f.values} with a value) digest "
                f"{f.digest}, erased before by {', '.join(f.erasures)}\n"
            )
        verdict = (
            f"{len({f.digest for f in found})} of {len(digests)} erased digests found"
            if found
            else f"none of {len(digests)} erased digests found"
        )
        report.write(
            f"{verdict} in {len(scans)} partitions of {len(set(topics))} topics "
            f"({examined} records read)\n"
        )
    if where:
        import yaml

        out.write(yaml.safe_dump_all(manifests, sort_keys=False) if manifests else "")
    return FOUND if found else 0


def _erasure_name(text: str) -> tuple[str, str]:
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name:
        raise UsageError(f"--print-erasure takes NAMESPACE/NAME, not {text!r}")
    return namespace, name


def list_command(args: argparse.Namespace) -> int:
    try:
        ledger = _ledger(args)
    except CheckError as err:
        return fail(ERROR, f"error: {err}")
    return run_list(ledger, args.cluster, args.output, namespace=args.namespace)


def check_command(args: argparse.Namespace) -> int:
    from kafka_retention.adapters.kafka_erasure import ErasureAdmin

    try:
        config = read_properties(args.command_config) if args.command_config else None
        ledger = _ledger(args)
    except (UsageError, CheckError) as err:
        return fail(ERROR, f"error: {err}")
    return run_check(
        ledger,
        lambda: ErasureAdmin(args.bootstrap_server, config),
        args.cluster,
        args.topic,
        bootstrap=args.bootstrap_server,
        print_erasure=args.print_erasure,
        output=args.output,
        any_topic=args.any_topic,
        namespace=args.namespace,
    )


def add_commands(sub: Any) -> None:
    """`ledger list` and `ledger check` under `sub` (cli/__init__.py's subparsers)."""
    ledger: argparse.ArgumentParser = sub.add_parser(
        "ledger",
        help="the digests RecordErasures erased, per cluster, and a check of topics for them",
        description="The ledger of erased digests is kept per cluster (the "
        "KafkaClusterBinding's name) and namespace of the erasures in ConfigMaps of the "
        "operator's namespace. `list` prints it; `check` scans topics (read-only) for every "
        "digest in it: exit 1 when any is found, 0 when none is, 2 on an error. Both read "
        "every namespace's entries unless --namespace names one.",
    )
    commands = ledger.add_subparsers(dest="ledger_command", required=True, metavar="COMMAND")

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--cluster", required=True, metavar="NAME", help="the KafkaClusterBinding's name"
        )
        parser.add_argument(
            "--namespace",
            metavar="NS",
            help="only the digests erased by RecordErasures in this namespace (default: "
            "every namespace's)",
        )
        operator_namespace_flag(parser, "where the ledger is")
        kubeconfig_flags(parser)
        parser.add_argument("-o", "--output", choices=["text", "json"], default="text")

    listing = commands.add_parser("list", help="the cluster's erased digests")
    listing.set_defaults(func=list_command)
    common(listing)

    check = commands.add_parser(
        "check",
        help="scan topics for any erased digest (after a restore or a mirror replay)",
        description="Reads every partition of each --topic from its log start to its high "
        "watermark (uncommitted records too) and hashes each key: exit 1 with where each "
        "ledger digest was found, 0 when none is, 2 on an error. Writes nothing.",
    )
    check.set_defaults(func=check_command)
    common(check)
    check.add_argument(
        "--topic", action="extend", nargs="+", required=True, metavar="T", help="topics to scan"
    )
    check.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    command_config_flag(check)
    check.add_argument(
        "--any-topic",
        action="store_true",
        help="count a digest in any topic scanned, not only in the topics its erasure named "
        "(or their mirrors, <alias>.<topic>): for a topic renamed on restore",
    )
    check.add_argument(
        "--print-erasure",
        metavar="NAMESPACE/NAME",
        help="print a RecordErasure (digests only) for what is found, for `kubectl create "
        "-f -`; the findings then go to stderr",
    )


__all__ = [
    "Found",
    "add_commands",
    "erasure_manifests",
    "find",
    "ledger_entries",
    "run_check",
    "run_list",
]
