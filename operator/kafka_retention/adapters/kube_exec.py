"""Commands in pods (the orphan check's broker pods): which pods run, and one command's
output, bounded in time and size, with the pod's stderr kept out of any status."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import kubernetes

from kafka_retention.adapters.kube import api_client
from kafka_retention.core.failures import ExecFailed
from kafka_retention.core.specs import labels

log = logging.getLogger(__name__)


# No stdin and no terminal; stdout and stderr read apart, as they arrive, rather than
# preloaded into one string.
_STREAMS = {"stdin": False, "stdout": True, "stderr": True, "tty": False, "_preload_content": False}


def label_selector(match_labels: Mapping[str, str]) -> str:
    """An equality selector from labels, each key and value checked against Kubernetes'
    label syntax first: joined unchecked, a key `foo!` would become `foo!=bar`."""
    pairs = labels(dict(match_labels), "podSelector.matchLabels")
    if not pairs:
        raise ValueError("an empty selector would choose every pod")
    return ",".join(f"{k}={v}" for k, v in pairs)


def running_pods(namespace: str, match_labels: Mapping[str, str]) -> list[str]:
    """Names of the Running pods with all these labels (the broker pods an orphan check
    execs into), sorted."""
    api = kubernetes.client.CoreV1Api(api_client())
    found = api.list_namespaced_pod(namespace, label_selector=label_selector(match_labels))
    return sorted(
        str(p.metadata.name)
        for p in found.items
        if p.metadata and p.status and p.status.phase == "Running"
    )


# The most a command run in a broker pod may print: a listing of one log dir with 50,000
# partition directories is about 5 MiB. Past this the command is cut off and fails.
MAX_EXEC_OUTPUT = 32 * 1024 * 1024


def exec_in_pod(
    namespace: str, pod: str, container: str, argv: list[str], timeout: float = 120.0
) -> str:
    """Run argv (no shell unless argv names one) in a pod's container; its stdout.

    `stream` swaps the client's request function while it runs, so each call gets an
    ApiClient of its own rather than the one status writes share across threads."""
    from kubernetes.stream import stream

    api_client()  # loads the configuration once
    core = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient())
    connect = core.connect_get_namespaced_pod_exec
    resp = stream(connect, pod, namespace, container=container, command=argv, **_STREAMS)
    out: list[str] = []
    err: list[str] = []
    size = 0
    deadline = time.monotonic() + timeout
    try:
        while resp.is_open():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ExecFailed(f"{argv[0]} in {namespace}/{pod} ran past {timeout:.0f}s")
            resp.update(timeout=min(left, 1.0))
            if resp.peek_stdout():
                chunk = resp.read_stdout()
                size += len(chunk)
                out.append(chunk)
            if resp.peek_stderr():
                chunk = resp.read_stderr()
                size += len(chunk)
                err.append(chunk)
            if size > MAX_EXEC_OUTPUT:
                raise ExecFailed(
                    f"{argv[0]} in {namespace}/{pod} printed over {MAX_EXEC_OUTPUT} bytes; cut off"
                )
        out.append(resp.read_stdout())
        err.append(resp.read_stderr())
        code = resp.returncode
    finally:
        resp.close()
    if code != 0:
        log.warning("%s in %s/%s exited %s: %s", argv[0], namespace, pod, code, "".join(err)[:2000])
        raise ExecFailed(
            f"{argv[0]} in {namespace}/{pod} exited {code} (its stderr is in the operator's log)"
        )
    return "".join(out)
