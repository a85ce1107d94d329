"""The `kafka-retention` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kafka_retention import __version__


def _run(args: argparse.Namespace) -> int:
    import kopf

    import kafka_retention.handlers  # noqa: F401  (registers the handlers with Kopf)

    if not args.all_namespaces and not args.namespace:
        print("error: pass --namespace NS (repeatable) or --all-namespaces", file=sys.stderr)
        return 2
    kopf.configure(verbose=args.verbose, debug=args.debug)
    kopf.run(
        clusterwide=args.all_namespaces,
        namespaces=args.namespace or (),
        standalone=args.peering is None,
        peering_name=args.peering,
        liveness_endpoint=args.liveness,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-retention",
        description="Manage the lifetime of data in Apache Kafka from Kubernetes.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run", help="run the operator against the current kubeconfig (like `kopf run`)"
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
        help="coordinate with other replicas through this KopfPeering (default: standalone)",
    )
    run.add_argument(
        "--liveness",
        metavar="URL",
        default=None,
        help="serve a liveness probe, e.g. http://0.0.0.0:8080/healthz",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="log more")
    run.add_argument("--debug", action="store_true", help="log everything")
    run.set_defaults(func=_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
