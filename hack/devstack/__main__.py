"""python -m devstack {setup,up,down,status,env}: the local stack from the command line."""

from __future__ import annotations

import argparse
import sys

from devstack import build, image
from devstack.procs import StackError
from devstack.stack import Stack


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
    except StackError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
