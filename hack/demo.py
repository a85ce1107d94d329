"""`make demo`: bring the local stack up and show the operator at work, scene by scene.

The stack stays up afterwards so you can look around (`. .dev/env; kubectl get
kafka-retention -A`); `make dev-down` stops it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

# hack/ is on sys.path as this script's own directory.
from devstack.operator import OperatorProcess
from devstack.stack import Stack

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "demo"


def banner(text: str) -> None:
    print(f"\n=== {text} ===", flush=True)


def show(stack: Stack, *args: str) -> None:
    print(f"$ kubectl {' '.join(args)}")
    print(stack.kubectl(*args, check=False).stdout.rstrip(), flush=True)


def start_operator(stack: Stack) -> OperatorProcess:
    log = stack.dev / "operator.log"
    log.write_bytes(b"")
    # Strict tenancy, as the operator ships: the demo's resources name the cluster only
    # through the KafkaClusterBinding an administrator made (bind()).
    operator = OperatorProcess(stack, [NAMESPACE], log, tenancy="strict").start()
    print(f"operator started (pid {operator.pid}), logging to {log}")
    return operator


BINDING = "demo-cluster"


def bind(stack: Stack) -> None:
    """What a platform administrator does once: bind the cluster (by its id) to the
    demo's namespace for purges and retention."""
    bootstrap = stack.kafka.bootstrap_servers
    cluster_id = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).cluster_id
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "KafkaClusterBinding",
        "metadata": {"name": BINDING},
        "spec": {
            "clusterId": cluster_id,
            "connection": {"bootstrapServers": bootstrap},
            "tenants": [
                {
                    "namespaces": [NAMESPACE],
                    "operations": ["purge", "retention"],
                    # Each entry grants its own topics (none without an allow): the demo's
                    # namespace owns the topics the demo's scenes make.
                    "topics": {"allow": ["orders-[0-9]+", "app-orders-.*-repartition"]},
                }
            ],
            # The second scene trims a Streams application's repartition topic, which a
            # binding protects by default (with changelogs, Connect's and Schema
            # Registry's topics): this administrator lifts that for the demo's cluster.
            "topics": {"protectWellKnownInternal": False},
        },
    }
    print(f"$ kubectl apply -f - <<< '{json.dumps(body['spec'])}'")
    print(stack.kubectl("apply", "-f", "-", stdin=json.dumps(body)).stdout.rstrip())
    show(stack, "get", "kafkaclusterbinding", BINDING)


def _offsets(admin: AdminClient, topic: str, partitions: int, kind: str) -> list[int]:
    make: Any = OffsetSpec.earliest if kind == "earliest" else OffsetSpec.latest
    spec = make()
    futures = admin.list_offsets({TopicPartition(topic, p): spec for p in range(partitions)})
    found = {tp.partition: f.result().offset for tp, f in futures.items()}
    return [found[p] for p in range(partitions)]


def offsets_table(admin: AdminClient, topic: str, partitions: int, label: str) -> None:
    start = _offsets(admin, topic, partitions, "earliest")
    end = _offsets(admin, topic, partitions, "latest")
    print(f"{label}: {topic}")
    print("  partition  log-start  high-watermark  readable")
    for p in range(partitions):
        print(f"  {p:>9}  {start[p]:>9}  {end[p]:>14}  {end[p] - start[p]:>8}")


def apply(stack: Stack, name: str, spec: dict[str, Any]) -> None:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }
    print(f"$ kubectl apply -f - <<< '{json.dumps(spec)}'")
    print(stack.kubectl("apply", "-f", "-", stdin=json.dumps(body)).stdout.rstrip())


def wait_final(stack: Stack, name: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        obj: dict[str, Any] = json.loads(
            stack.kubectl("get", "recordpurge", name, "-n", NAMESPACE, "-o", "json").stdout
        )
        if obj.get("status", {}).get("phase") in ("Succeeded", "PartiallySucceeded", "Failed"):
            return obj
        time.sleep(0.5)
    raise SystemExit(f"RecordPurge {name} did not finish in {timeout:.0f}s")


def orders_topic(admin: AdminClient, bootstrap: str, topic: str) -> None:
    """3 partitions of 1000 order records each."""
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(3000):
        producer.produce(topic, key=f"order-{i}".encode(), value=b"x" * 120, partition=i % 3)
    producer.flush()


def commit(bootstrap: str, group: str, topic: str, offsets: list[int]) -> None:
    """What a consumer group leaves behind after reading up to `offsets` (per partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(
        offsets=[TopicPartition(topic, p, o) for p, o in enumerate(offsets)], asynchronous=False
    )
    consumer.close()


def scene_record_purge(stack: Stack) -> None:
    banner("RecordPurge: an audited DeleteRecords, planned, checked and verified")
    bootstrap = stack.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"orders-{int(time.time())}"
    orders_topic(admin, bootstrap, topic)
    # The billing job has read part of each partition; it must not lose what it has not read.
    commit(bootstrap, f"billing-{topic}", topic, [900, 400, 1000])
    print(f"produced 3000 records to {topic}; group billing-{topic} committed 900/400/1000")
    offsets_table(admin, topic, 3, "before")

    cluster = {"clusterRef": BINDING}
    apply(
        stack,
        f"{topic}-preview",
        {
            "cluster": cluster,
            "dryRun": True,
            "topics": [{"name": topic, "before": {"highWatermark": True}}],
            "protectGroups": [f"billing-{topic}"],
        },
    )
    wait_final(stack, f"{topic}-preview")
    show(
        stack,
        "get",
        "recordpurge",
        f"{topic}-preview",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={range .status.results[*]}{.topic}-{.partition}: would cut to "
        "{.requestedOffset}, {.recordsToDelete} records, ~{.bytesToDeleteEstimate} bytes"
        "  ({.note}){'\\n'}{end}",
    )
    offsets_table(admin, topic, 3, "after the dry run (nothing deleted)")

    apply(
        stack,
        f"{topic}-purge",
        {
            "cluster": cluster,
            "topics": [{"name": topic, "before": {"highWatermark": True}}],
            "protectGroups": [f"billing-{topic}"],
        },
    )
    obj = wait_final(stack, f"{topic}-purge")
    print(
        f"phase {obj['status']['phase']}: "
        f"{next(c for c in obj['status']['conditions'] if c['type'] == 'Succeeded')['message']}"
    )
    offsets_table(admin, topic, 3, "after the purge (cut at what billing has read)")

    apply(
        stack,
        f"{topic}-too-far",
        {
            "cluster": cluster,
            "partitions": [
                {"topic": topic, "partition": 0, "offset": 950},
                {"topic": topic, "partition": 1, "offset": 99999},
            ],
        },
    )
    wait_final(stack, f"{topic}-too-far")
    show(
        stack,
        "get",
        "recordpurge",
        f"{topic}-too-far",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={range .status.results[*]}{.topic}-{.partition}: {.state} "
        "{.lowWatermark}{.error}{'\\n'}{end}",
    )
    show(stack, "get", "kafka-retention", "-n", NAMESPACE)
    show(
        stack,
        "get",
        "events",
        "-n",
        NAMESPACE,
        "--sort-by=.lastTimestamp",
        "-o",
        "custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message",
    )


def scene_retention_policy(stack: Stack) -> None:
    banner("RetentionPolicy: an intermediate topic trimmed as its consumers advance")
    bootstrap = stack.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"app-orders-{int(time.time())}-repartition"
    orders_topic(admin, bootstrap, topic)
    groups = {"enricher": [0, 0, 0], "auditor": [0, 0, 0]}
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "repartition-topics", "namespace": NAMESPACE},
        "spec": {
            "cluster": {"clusterRef": BINDING},
            "topics": {"pattern": "^app-.*-repartition$"},
            "interval": "10s",
            "deleteConsumed": {"groups": list(groups)},
        },
    }
    print("policy: delete what both enricher and auditor have read, every 10s")
    print(stack.kubectl("apply", "-f", "-", stdin=json.dumps(body)).stdout.rstrip())
    steps = [
        {"enricher": [400, 300, 500], "auditor": [200, 250, 100]},
        {"enricher": [800, 700, 900], "auditor": [600, 650, 700]},
        {"enricher": [1000, 1000, 1000], "auditor": [1000, 950, 1000]},
    ]
    for step in steps:
        for group, offsets in step.items():
            commit(bootstrap, group, topic, offsets)
        print(f"\nconsumers advance: {step}")
        expected = [min(step[g][p] for g in step) for p in range(3)]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and _offsets(admin, topic, 3, "earliest") != expected:
            time.sleep(1)
        offsets_table(admin, topic, 3, "after the next policy run")
    # The status is written just after the log starts move; let it land before showing it.
    total = sum(_offsets(admin, topic, 3, "earliest"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and stack.kubectl(
        "get",
        "retentionpolicy",
        "repartition-topics",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.status.recordsDeletedTotal}",
        check=False,
    ).stdout.strip() != str(total):
        time.sleep(0.5)
    show(stack, "get", "retentionpolicy", "-n", NAMESPACE)
    stack.kubectl(
        "delete",
        "retentionpolicy",
        "repartition-topics",
        "-n",
        NAMESPACE,
        "--timeout=60s",
        check=False,
    )


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

    banner("binding: the administrator lets the demo namespace use the cluster")
    bind(stack)
    banner("operator")
    operator = start_operator(stack)
    try:
        scene_record_purge(stack)
        scene_retention_policy(stack)
    finally:
        operator.stop()

    banner("done")
    print(
        f"The stack is still running. `. {stack.env_file}` and try kubectl; "
        "`make dev-down` stops it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
