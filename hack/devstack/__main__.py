"""python -m devstack {setup,up,down,status,env,kafka-up,kafka-down,kafka-versions}: the local
stack, and the compatibility clusters of other Kafka releases, from the command line."""

from __future__ import annotations

import argparse
import sys

from devstack import build, image
from devstack.kafka import (
    COMPAT_PORT_OFFSETS,
    COMPAT_VERSIONS,
    KafkaCluster,
    compat_cluster,
    start_compat,
)
from devstack.procs import StackError
from devstack.stack import Stack


def describe(cluster: KafkaCluster) -> str:
    tls = cluster.tls
    return "\n".join(
        [
            f"Kafka {cluster.release} ({cluster.name}, tiered storage "
            f"{'on' if cluster.tiered else 'off'}): {cluster.root}",
            f"  PLAINTEXT       {cluster.bootstrap_servers}",
            f"  SASL_PLAINTEXT  {cluster.sasl_bootstrap_servers}  (SCRAM-SHA-512 or PLAIN)",
            f"  SSL             {cluster.ssl_bootstrap_servers}",
            f"  TLS files       ca {tls.ca}, client {tls.client_cert} + {tls.client_key}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "setup", help="install the node's packages, collect Kafka jars, build binaries and images"
    )
    sub.add_parser("image", help="build the operator and pause images (buildah, no Docker)")
    sub.add_parser("up", help="start Kafka x3, etcd, kube-apiserver and the node; write .dev/env")
    sub.add_parser("down", help="stop everything `up` started")
    sub.add_parser("status", help="show which parts are running")
    sub.add_parser("env", help="print the shell exports of .dev/env")
    up = sub.add_parser("kafka-up", help="start (anew) a three-node cluster of a Kafka release")
    up.add_argument("version", choices=COMPAT_VERSIONS)
    down = sub.add_parser("kafka-down", help="stop a release's cluster (all of them: no version)")
    down.add_argument("version", choices=COMPAT_VERSIONS, nargs="?")
    sub.add_parser("kafka-versions", help="list the releases kafka-up starts, their ports, state")
    args = parser.parse_args(argv)
    stack = Stack()
    try:
        if args.command == "setup":
            build.setup()
        elif args.command == "image":
            for built in image.node_images().load:
                print(f"{built.name}\t{built.archive}")
        elif args.command == "up":
            stack.up()
        elif args.command == "down":
            stack.down()
        elif args.command == "status":
            print(stack.status())
        elif args.command == "env":
            stack.write_env()
            print(stack.env_file.read_text(), end="")
        elif args.command == "kafka-up":
            print(describe(start_compat(args.version)))
        elif args.command == "kafka-down":
            for version in [args.version] if args.version else COMPAT_VERSIONS:
                compat_cluster(version).stop()
        elif args.command == "kafka-versions":
            for version in COMPAT_VERSIONS:
                cluster = compat_cluster(version)
                state = "running" if cluster.running() else "stopped"
                offset = COMPAT_PORT_OFFSETS[version]
                print(f"{version:<8} +{offset:<3} {cluster.bootstrap_servers:<50} {state}")
    except StackError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
