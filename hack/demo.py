"""`make demo`: bring the local stack up and show the operator at work, scene by scene.

The stack stays up afterwards so you can look around (`. .dev/env; kubectl get
kafka-retention -A`); `make dev-down` stops it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# hack/ is on sys.path as this script's own directory.
from devstack.stack import Stack

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "demo"


def banner(text: str) -> None:
    print(f"\n=== {text} ===", flush=True)


def show(stack: Stack, *args: str) -> None:
    print(f"$ kubectl {' '.join(args)}")
    print(stack.kubectl(*args, check=False).stdout.rstrip(), flush=True)


def start_operator(stack: Stack) -> subprocess.Popen[bytes]:
    log = stack.dev / "operator.log"
    env = {**os.environ, **stack.env()}
    exe = Path(sys.executable).with_name("kafka-retention")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(exe), "run", "--namespace", NAMESPACE, "--verbose"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    print(f"operator started (pid {proc.pid}), logging to {log}")
    return proc


def main() -> int:
    stack = Stack()
    banner("local stack: 3 Kafka brokers (KRaft), etcd, kube-apiserver")
    stack.up()
    print(stack.status())
    banner("CRDs")
    print(
        stack.kubectl(
            "apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds")
        ).stdout.rstrip()
    )
    stack.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    if stack.kubectl("get", "namespace", NAMESPACE, check=False).returncode != 0:
        stack.kubectl("create", "namespace", NAMESPACE)
    show(stack, "explain", "recordpurge.spec")

    banner("operator")
    operator = start_operator(stack)
    try:
        time.sleep(5)
        if operator.poll() is not None:
            print((stack.dev / "operator.log").read_text()[-3000:])
            print("the operator exited early", file=sys.stderr)
            return 1
        show(stack, "get", "kafka-retention", "-n", NAMESPACE)
    finally:
        operator.terminate()
        operator.wait(timeout=30)

    banner("done")
    print(
        f"The stack is still running. `. {stack.env_file}` and try kubectl; "
        "`make dev-down` stops it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
