"""The `kafka-retention` command."""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kafka_retention import __version__, config, heap
from kafka_retention.core.peering import Peering, auto_priority


def _spark_conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.startswith("spark."):
        raise argparse.ArgumentTypeError(f"expected spark.KEY=VALUE, got {text!r}")
    return key, value


def _identity() -> str:
    """Who this replica is in the peering object: the pod's name where the manifests pass
    it (POD_NAME), else host and process, made unique per start."""
    pod = os.environ.get("POD_NAME")
    base = pod or f"{socket.gethostname()}/{os.getpid()}"
    return f"{base}/{secrets.token_hex(3)}"


def _run(args: argparse.Namespace) -> int:
    import kopf

    import kafka_retention.handlers  # noqa: F401  (registers the handlers with Kopf)

    if not args.all_namespaces and not args.namespace:
        print("error: pass --namespace NS (repeatable) or --all-namespaces", file=sys.stderr)
        return 2
    peering = None
    if args.peering is not None:
        patterns = [ns for ns in args.namespace or () if any(c in ns for c in "*?[]!")]
        if patterns:
            print(
                f"error: --peering needs --all-namespaces or plain namespace names, "
                f"not patterns ({', '.join(patterns)}): every replica must read the same "
                "peering objects",
                file=sys.stderr,
            )
            return 2
        peering = Peering(
            name=args.peering,
            identity=_identity(),
            priority=(
                auto_priority(time.time_ns() // 1_000_000)
                if args.priority is None
                else args.priority
            ),
            lifetime_s=args.peering_lifetime,
            clusterwide=bool(args.all_namespaces),
            namespaces=tuple(args.namespace or ()),
        )
    operator_config = config.OperatorConfig(
        spark=config.SparkConfig(
            mode=args.spark_mode,
            spark_conf=tuple(args.spark_conf),
            namespace=args.operator_namespace,
            **_given(args, _SPARK_FLAGS),
        ),
        scheduling=config.SchedulingConfig(
            in_process_max_partitions=args.in_process_max_partitions,
            **_given(args, _SCHEDULING_FLAGS),
        ),
        local_broker_volumes=args.local_broker_volumes,
        peering=peering,
        tenancy=args.tenancy,
        operator_namespace=args.operator_namespace,
        erasure_signing_secret=args.erasure_signing_secret,
    )
    kopf.configure(verbose=args.verbose, debug=args.debug)
    # Spark's Python gateway logs every call at DEBUG: far too much even for --debug.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    if args.metrics_port:
        from prometheus_client import start_http_server

        start_http_server(args.metrics_port, addr=args.metrics_addr)
    kopf.run(
        clusterwide=args.all_namespaces,
        namespaces=args.namespace or (),
        standalone=peering is None,
        peering_name=args.peering,
        priority=peering.priority if peering else None,
        identity=cast(Any, peering.identity) if peering else None,
        liveness_endpoint=args.liveness,
        memo=kopf.Memo(config=operator_config),
    )
    return 0


def _purge(args: argparse.Namespace) -> int:
    from kafka_retention.cli.common import Progress, UsageError
    from kafka_retention.cli.purge import run_purge

    try:
        return run_purge(
            args.bootstrap_server,
            args.offset_json_file,
            args.command_config,
            args.dry_run,
            args.allow_internal_topics,
            progress=Progress(verbose=args.verbose),
        )
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _plan(args: argparse.Namespace) -> int:
    from kafka_retention.cli.common import Progress, UsageError, read_properties
    from kafka_retention.cli.plan import run_plan

    try:
        config = read_properties(args.command_config) if args.command_config else None
        return run_plan(args.filename, args.output, config, progress=Progress(verbose=args.verbose))
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


# Progress shows on a terminal by itself (one line, rewritten); -v asks for it elsewhere.
def _erase(args: argparse.Namespace) -> int:
    from kafka_retention.cli.erase import print_erase

    return print_erase(args)


def _evidence(args: argparse.Namespace) -> int:
    from kafka_retention.cli.erase import print_evidence

    return print_evidence(args)


def _verify_receipt(args: argparse.Namespace) -> int:
    from kafka_retention.cli.erase import verify_receipt

    return verify_receipt(args.file, args.public_key)


PUBLIC_KEY_HELP = "the operator's signing public key (SubjectPublicKeyInfo PEM) to trust"
PROGRESS_HELP = "print each stage on a line of its own even when stderr is not a terminal"


@dataclass(frozen=True)
class _Flag:
    """A `run` flag that sets one field of a config value, whose default it shows."""

    flag: str
    field: str
    help: str
    type: Callable[[str], Any] = str
    metavar: str | None = None


_SPARK_FLAGS = (
    _Flag("--spark-image", "image", "image of driver and executor pods"),
    _Flag(
        "--spark-service-account",
        "service_account",
        "service account of the driver pod",
        metavar="NAME",
    ),
    _Flag("--spark-executors", "executors", "executor pods per run", int, "N"),
    _Flag(
        "--spark-run-timeout",
        "run_timeout_s",
        "give up on a pod run after this long",
        float,
        "SECONDS",
    ),
    _Flag(
        "--spark-master",
        "master",
        "API server URL for spark-submit (kubernetes mode)",
        metavar="URL",
    ),
    _Flag(
        "--erasure-spark-min-records",
        "erasure_min_records",
        "RecordErasure scans spanning at least N offsets run on Spark, smaller ones in "
        "this process (local mode; 0: always Spark)",
        int,
        "N",
    ),
)
_SCHEDULING_FLAGS = (
    _Flag(
        "--workers", "workers", "RetentionPolicy batches (one per cluster) run at once", int, "N"
    ),
    _Flag(
        "--apply-workers",
        "apply_workers",
        "policies of one batch re-checked and applied at once",
        int,
        "N",
    ),
    _Flag(
        "--batch-window",
        "batch_window_s",
        "policies of one cluster due within this many seconds run as one batch",
        float,
        "SECONDS",
    ),
)


def _add_flags(parser: argparse.ArgumentParser, flags: Sequence[_Flag], defaults: object) -> None:
    for f in flags:
        default = getattr(defaults, f.field)
        shown = f"{default:g}" if isinstance(default, float) else default
        parser.add_argument(
            f.flag,
            dest=f.field,
            type=f.type,
            default=default,
            metavar=f.metavar,
            help=f"{f.help} (default {shown})",
        )


def _given(args: argparse.Namespace, flags: Sequence[_Flag]) -> dict[str, Any]:
    return {f.field: getattr(args, f.field) for f in flags}


def _subcommand(
    sub: Any, func: Callable[[argparse.Namespace], int], **words: str
) -> argparse.ArgumentParser:
    """The parser of a command that runs `func`, named as `func` is (less its "_", with
    "-" between words)."""
    name = func.__name__.lstrip("_").replace("_", "-")
    parser: argparse.ArgumentParser = sub.add_parser(name, **words)
    parser.set_defaults(func=func)
    return parser


def _client_flags(parser: argparse.ArgumentParser) -> None:
    """What the commands that talk to Kafka themselves take."""
    from kafka_retention.cli.common import command_config_flag

    command_config_flag(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help=PROGRESS_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-retention",
        description="Manage the lifetime of data in Apache Kafka from Kubernetes.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = _subcommand(
        sub, _run, help="run the operator against the current kubeconfig (like `kopf run`)"
    )
    scope = run.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        metavar="NS",
        help="watch this namespace (repeatable; glob patterns allowed)",
    )
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace")
    run.add_argument(
        "--peering",
        metavar="NAME",
        default=None,
        help="coordinate replicas through this peering object (ClusterKopfPeering with -A, "
        "KopfPeering in each namespace otherwise): one acts, the others stand by "
        "(default: standalone, the only replica)",
    )
    run.add_argument(
        "--priority",
        type=int,
        default=None,
        metavar="N",
        help="peering priority; the highest acts (default: by start time, so the oldest "
        "replica acts and a restarted one stands by)",
    )
    run.add_argument(
        "--peering-lifetime",
        type=int,
        default=60,
        metavar="SECONDS",
        help="a replica silent this long is taken as gone, and a standby takes over (default 60)",
    )
    run.add_argument(
        "--liveness",
        metavar="URL",
        default=None,
        help="serve a liveness probe, e.g. http://0.0.0.0:8080/healthz",
    )
    defaults = config.SparkConfig()
    run.add_argument(
        "--spark-mode",
        choices=["local", "kubernetes", "spark-operator"],
        default=os.environ.get("KAFKA_RETENTION_SPARK_MODE", defaults.mode),
        help="where plans run: local (in this process, default), kubernetes "
        "(spark-submit cluster mode) or spark-operator (SparkApplication)",
    )
    _add_flags(run, _SPARK_FLAGS, defaults)
    run.add_argument(
        "--spark-conf",
        action="append",
        type=_spark_conf,
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property for pod runs, e.g. spark.kubernetes.driver.podTemplateFile=... "
        "(repeatable; kubernetes and spark-operator modes)",
    )
    _add_flags(run, _SCHEDULING_FLAGS, config.SchedulingConfig())
    run.add_argument(
        "--in-process-max-partitions",
        type=int,
        default=None,
        metavar="N",
        help="plan batches of up to N partitions in the operator process, larger ones "
        "with Spark (default "
        + ", ".join(
            f"{n} with --spark-mode={m}" for m, n in config.IN_PROCESS_MAX_PARTITIONS.items()
        )
        + "; 0: always Spark)",
    )
    run.add_argument(
        "--tenancy",
        choices=("strict", "open"),
        default="strict",
        help="strict (default): a RecordPurge or RetentionPolicy may only name its cluster "
        "by spec.cluster.clusterRef, a KafkaClusterBinding an administrator made for its "
        "namespace. open: also typed-in bootstrap servers, Secrets of the resource's "
        "namespace, Strimzi references and broker pods: only for an install where everyone "
        "who may create these resources may also act on every cluster the operator reaches",
    )
    from kafka_retention.cli.common import operator_namespace_flag

    operator_namespace_flag(
        run,
        "the namespace whose Secrets KafkaClusterBindings name, and where pod runs of "
        "bound policies happen",
    )
    run.add_argument(
        "--erasure-signing-secret",
        default=config.OperatorConfig.erasure_signing_secret,
        metavar="NAME",
        help="the Secret in --operator-namespace holding the Ed25519 key RecordErasure "
        "receipts are signed with (data key ed25519.pem or ed25519.seed; default "
        f"{config.OperatorConfig.erasure_signing_secret})",
    )
    run.add_argument(
        "--local-broker-volumes",
        action="store_true",
        help="allow spec.cluster.brokers.access: local (orphan cleanup under the brokers' "
        "log.dirs on this machine: the local stack, or an operator beside its broker); "
        "off by default",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve Prometheus metrics on this port (default: off)",
    )
    run.add_argument(
        "--metrics-addr",
        default="0.0.0.0",  # noqa: S104 - scraped from outside the pod
        metavar="ADDR",
        help="address for the metrics server (default 0.0.0.0)",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="log more")
    run.add_argument("--debug", action="store_true", help="log everything")

    purge = _subcommand(
        sub,
        _purge,
        help="delete records like kafka-delete-records.sh, through the operator's safety rules",
        description="Reads kafka-delete-records.sh's offset JSON and deletes every record "
        "below each offset (-1 = high watermark). Exit status 1 when any partition fails.",
    )
    purge.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    purge.add_argument(
        "--offset-json-file",
        required=True,
        type=Path,
        metavar="FILE",
        help='{"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}',
    )
    purge.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (records and estimated bytes), delete nothing",
    )
    purge.add_argument(
        "--allow-internal-topics",
        action="store_true",
        help="allow topics whose names start with '__'",
    )
    _client_flags(purge)

    plan = _subcommand(
        sub,
        _plan,
        help="compute a RetentionPolicy's cuts with the Spark pipeline; delete nothing",
        description="Runs the plan pipeline in local Spark mode against the cluster named "
        "in the policy and prints one row per partition.",
    )
    plan.add_argument("-f", "--filename", required=True, type=Path, metavar="POLICY.yaml")
    plan.add_argument(
        "--output", type=Path, metavar="plan.jsonl", help="also write the plan as JSON lines"
    )
    _client_flags(plan)
    _erasure_commands(sub)
    from kafka_retention.cli.ledger import add_commands as ledger_commands

    ledger_commands(sub)
    return parser


def _erasure_commands(sub: Any) -> None:
    from kafka_retention.cli.common import VERIFY_RECEIPT_DESCRIPTION, kube_connection_flags

    erase = _subcommand(
        sub,
        _erase,
        help="print a RecordErasure for keys, as their SHA-256 digests only",
        description="Hashes each key on this machine (--key as UTF-8, --key-base64 as raw "
        "bytes, --key-file one UTF-8 key per line) and prints the RecordErasure for "
        "`kubectl create -f -`. The keys themselves are never printed; --key-file keeps "
        "them out of the shell history too.",
    )
    erase.add_argument(
        "--key", action="extend", nargs="+", metavar="TEXT", help="keys as UTF-8 text"
    )
    erase.add_argument(
        "--key-base64", action="extend", nargs="+", metavar="B64", help="keys' raw bytes, base64"
    )
    erase.add_argument("--key-file", type=Path, metavar="FILE", help="keys, one UTF-8 key a line")
    erase.add_argument(
        "--topic", action="extend", nargs="+", metavar="T", help="topics to erase the keys from"
    )
    erase.add_argument(
        "--pattern",
        metavar="RE",
        help="RE2 matching whole topic names (only those the binding allows for erase)",
    )
    erase.add_argument(
        "--cluster-ref", required=True, metavar="NAME", help="the KafkaClusterBinding to use"
    )
    erase.add_argument("--name", required=True, metavar="N", help="the RecordErasure's name")
    erase.add_argument(
        "-n", "--namespace", metavar="NS", help="its namespace (default: kubectl's at create)"
    )
    erase.add_argument(
        "--dry-run", action="store_true", help="scan and report matches; write nothing"
    )
    erase.add_argument(
        "--on-delete-topics",
        choices=["report", "cut"],
        default="report",
        help="on topics that cannot be compacted: report when retention removes the records "
        "(default), or cut past the last match (needs --accept-collateral)",
    )
    erase.add_argument(
        "--accept-collateral",
        action="store_true",
        help="accept the other keys' records a cut removes (see a --dry-run first)",
    )
    erase.add_argument(
        "--max-collateral-records",
        type=int,
        metavar="N",
        help="the most records of other keys the cuts may remove in all (the dry run's "
        "status.summary.collateralRecords)",
    )
    erase.add_argument(
        "--deadline", metavar="DURATION", help="when it must be complete, from creation (30d)"
    )

    evidence = _subcommand(
        sub,
        _evidence,
        help="write a RecordErasure's signed receipt",
        description="Reads the RecordErasure's status.receipt and the ConfigMap it names, "
        "checks the receipt is the one status states, and writes it as JSON. Exit 1 when "
        "there is none yet.",
    )
    evidence.add_argument("name", metavar="NAME")
    kube_connection_flags(evidence, suppress=False)
    evidence.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write it here (default: stdout)"
    )

    verify = _subcommand(
        sub,
        _verify_receipt,
        help="check a RecordErasure receipt's signature",
        description=VERIFY_RECEIPT_DESCRIPTION,
    )
    verify.add_argument(
        "file", type=Path, metavar="FILE", help="the receipt, as `evidence` writes it"
    )
    verify.add_argument("--public-key", type=Path, metavar="PEM", help=PUBLIC_KEY_HELP)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    heap.settle()
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
