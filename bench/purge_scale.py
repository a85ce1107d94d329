"""`make bench`, RecordPurge at scale: `kubectl apply` -> Succeeded for whole-topic purges
of 1,000 / 10,000 / 20,000 partitions (replication factor 1), beside
kafka-delete-records.sh cutting the same partitions at their high watermark, on the same
cluster in the same run.

20,000 is what this machine's 3 local brokers serve reliably: every partition keeps a
file open and index files mapped on its broker, a broker process here may open 20,000
files and map 65,530 regions, and at 40,000 partitions producing one record to each did
not finish within minutes (tried; 60,000 and more exceed the open-file limit). The service
itself is tested at 100,000 partitions against an in-memory Kafka
(tests/unit/test_purge_service.py).
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from bench.common import REPO, Row, java_tool, say, wait_for_leaders
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.support import produce_to_each, wait_for

PER_TOPIC = 200
SIZES = [int(s) for s in os.environ.get("BENCH_PURGE_SIZES", "1000,10000,20000").split(",")]


def _topics(admin: AdminClient, prefix: str, count: int) -> list[str]:
    names = [f"{prefix}-{i:03d}" for i in range(count)]
    for i in range(0, len(names), 5):
        futures = admin.create_topics([NewTopic(n, PER_TOPIC, 1) for n in names[i : i + 5]])
        for f in futures.values():
            f.result(timeout=300)
    wait_for_leaders(admin, names, PER_TOPIC)
    return names


def _one_each(bootstrap: str, names: list[str]) -> None:
    produce_to_each(bootstrap, [(t, p) for t in names for p in range(PER_TOPIC)])


def _purge(stack: Stack, ns: str, name: str, names: list[str]) -> float:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
            "topics": [{"name": t, "before": {"highWatermark": True}} for t in names],
        },
    }
    started = time.monotonic()
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    obj = wait_for(
        stack,
        "recordpurge",
        ns,
        name,
        lambda o: o.get("status", {}).get("phase") in ("Succeeded", "PartiallySucceeded", "Failed"),
        timeout=1200,
    )
    took = time.monotonic() - started
    assert obj["status"]["phase"] == "Succeeded", obj["status"].get("conditions")
    assert obj["status"]["summary"]["recordsDeleted"] == len(names) * PER_TOPIC
    return took


def _delete_records(bootstrap: str, names: list[str]) -> float:
    offsets = {
        "version": 1,
        "partitions": [
            {"topic": t, "partition": p, "offset": -1} for t in names for p in range(PER_TOPIC)
        ],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(offsets, f)
    started = time.monotonic()
    java_tool(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "--bootstrap-server",
        bootstrap,
        "--offset-json-file",
        f.name,
    )
    return time.monotonic() - started


def bench_purges(stack: Stack, admin: AdminClient, run: str) -> list[Row]:
    bootstrap = stack.kafka.bootstrap_servers
    stack.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds"))
    ns = f"bench-purge-{run}"
    stack.kubectl("create", "namespace", ns)
    log = stack.dev / f"bench-purge-operator-{run}.log"
    operator = OperatorProcess(stack, [ns], log).start()
    rows = []
    try:
        for size in SIZES:
            say(f"RecordPurge of {size} partitions")
            names = _topics(admin, f"bp{size}-{run}", size // PER_TOPIC)
            try:
                _one_each(bootstrap, names)
                ours = _purge(stack, ns, f"all-{size}", names)
                _one_each(bootstrap, names)
                reference = _delete_records(bootstrap, names)
            finally:
                for f in admin.delete_topics(names, request_timeout=300).values():
                    f.result(timeout=300)
            rows.append(
                Row(
                    f"RecordPurge of {size} partitions (RF 1), apply -> Succeeded",
                    f"{ours:.1f} s",
                    f"{reference:.1f} s",
                    f"{ours / reference:.2f}x; ours: kubectl apply, plan (stored in "
                    "ConfigMaps), fresh re-check, DeleteRecords, read back, status; "
                    "reference: kafka-delete-records.sh with the same partitions at -1 "
                    "(JVM start included); one run each",
                )
            )
    finally:
        operator.stop()
        stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    return rows
