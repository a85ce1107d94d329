"""`make demo`: bring the local stack up and show the operator at work, scene by scene.

The stack stays up afterwards so you can look around (`. .dev/env; kubectl get
kafka-retention -A`); `make dev-down` stops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import zlib
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
    demo's namespace for purges, retention and erasure."""
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
                    # erase: the RecordErasure scene writes tombstones to its topic.
                    "operations": ["purge", "retention", "erase"],
                    # Each entry grants its own topics (none without an allow): the demo's
                    # namespace owns the topics the demo's scenes make.
                    "topics": {
                        "allow": ["orders-[0-9]+", "app-orders-.*-repartition", "customers-[0-9]+"]
                    },
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


# The topic configs that let the log cleaner finish an erasure in seconds (as
# tests/helpers/topics.FAST_COMPACTION): a segment rolls on the first append after 1 s and
# is cleanable at once; the stack's brokers look for cleaning work every second
# (log.cleaner.backoff.ms). A tombstone is kept 10 s after its first cleaning (KIP-534),
# not FAST_COMPACTION's 1 s: long enough for the operator's next scan to find the values
# gone and the tombstone still there, so ValuesErased shows before KeyErased.
COMPACT_QUICKLY = {
    "cleanup.policy": "compact",
    "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "1000",
    "delete.retention.ms": "10000",
    "file.delete.delay.ms": "1000",
}
CUSTOMER = "customer-4711"  # the one who asked to be forgotten
# Named after the request, not the customer: the name is in events, logs and ConfigMap
# names, where the key must never be.
ERASURE = "erasure-request-1042"
SIGNING_SECRET = "kafka-retention-erasure-signing"  # noqa: S105 - the Secret's name
OPERATOR_NAMESPACE = "kafka-retention-system"  # where the operator reads its signing key


def cli(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """`kafka-retention ARGS` as a user runs it, with the stack's kubeconfig."""
    exe = Path(sys.executable).with_name("kafka-retention")
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **stack.env()},
        check=False,
    )


def run(command: list[str], cwd: Path) -> None:
    print(f"$ {' '.join(command)}", flush=True)
    subprocess.run(command, cwd=cwd, check=True)


def signing_key(stack: Stack, workdir: Path) -> Path:
    """What the operator's administrator does once, as docs/how-to/erasure.md says: an
    Ed25519 key pair, the private key in a Secret in the operator's namespace, the public
    key kept for auditors. Returns the public key's path."""
    workdir.mkdir(parents=True, exist_ok=True)
    run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", "erasure-signing.pem"], workdir)
    run(
        [
            "openssl",
            "pkey",
            "-in",
            "erasure-signing.pem",
            "-pubout",
            "-out",
            "erasure-signing.pub.pem",
        ],
        workdir,
    )
    if stack.kubectl("get", "namespace", OPERATOR_NAMESPACE, check=False).returncode != 0:
        stack.kubectl("create", "namespace", OPERATOR_NAMESPACE)
    # A Secret from an earlier demo on this stack holds another key: the receipt must be
    # signed by the key made just now, whose public half the auditor checks it with.
    stack.kubectl(
        "delete", "secret", SIGNING_SECRET, "-n", OPERATOR_NAMESPACE, "--ignore-not-found"
    )
    pem = workdir / "erasure-signing.pem"
    print(
        f"$ kubectl -n {OPERATOR_NAMESPACE} create secret generic {SIGNING_SECRET} "
        "--from-file=ed25519.pem=erasure-signing.pem"
    )
    print(
        stack.kubectl(
            "-n",
            OPERATOR_NAMESPACE,
            "create",
            "secret",
            "generic",
            SIGNING_SECRET,
            f"--from-file=ed25519.pem={pem}",
        ).stdout.rstrip()
    )
    return workdir / "erasure-signing.pub.pem"


def customers_topic(admin: AdminClient, bootstrap: str, topic: str) -> dict[int, int]:
    """A compacted topic of 300 customers' profiles, each key in its partition by CRC32;
    CUSTOMER's profile was updated twice, and one copy sits in a second partition (a
    producer that partitioned differently: librdkafka's default is not Java's). Returns
    the partitions holding CUSTOMER, with its record count in each."""
    config = dict(COMPACT_QUICKLY)
    admin.create_topics([NewTopic(topic, 3, 3, config=config)])[topic].result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(1, 301):
        key = f"customer-{i:04d}"
        value = json.dumps({"name": f"Customer {i}", "email": f"c{i}@example.com"})
        producer.produce(topic, key=key, value=value, partition=zlib.crc32(key.encode()) % 3)
    home = zlib.crc32(CUSTOMER.encode()) % 3
    stray = (home + 1) % 3
    for city in ("Berlin", "Hamburg", "Munich"):
        value = json.dumps({"name": "Erika Mustermann", "email": "erika@example.com", "city": city})
        producer.produce(topic, key=CUSTOMER, value=value, partition=home)
    producer.produce(topic, key=CUSTOMER, value=b'{"name": "E. Mustermann"}', partition=stray)
    producer.flush()
    return {home: 3, stray: 1}


def updates(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """Other customers' updates, to every partition every 300 ms, as a live topic has: the
    cleaner compacts only rolled segments, and a segment rolls on an append."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    i = 0
    while not stop.wait(0.3):
        for p in range(3):
            i += 1
            producer.produce(topic, key=f"customer-{i % 300 + 1:04d}", value=b"{}", partition=p)
        producer.poll(0)
    producer.flush()


def records_with_key(bootstrap: str, topic: str, key: bytes) -> tuple[int, int]:
    """(records read, records whose key is `key`) reading the whole topic, as any
    consumer would, up to the high watermarks of now."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    start = _offsets(admin, topic, 3, "earliest")
    end = _offsets(admin, topic, 3, "latest")
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, start[p]) for p in range(3)])
    left = {p for p in range(3) if end[p] > start[p]}
    read = found = 0
    deadline = time.monotonic() + 60
    while left and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        read += 1
        found += msg.key() == key
        partition, offset = msg.partition(), msg.offset()
        if partition is not None and offset is not None and offset + 1 >= end[partition]:
            left.discard(partition)
    consumer.close()
    if left:
        raise SystemExit(f"could not read {topic} to its end (partitions {sorted(left)})")
    return read, found


def table_cells(table: str) -> tuple[list[str], list[str]]:
    """The header and the one row of a `kubectl get` table, cell by cell: kubectl aligns
    cells under their header, and an empty cell is blank."""
    header, row = table.splitlines()[:2]
    names = header.split()
    starts = [header.index(name) for name in names]
    ends = [*starts[1:], None]
    return names, [row[start:end].strip() for start, end in zip(starts, ends, strict=True)]


def follow(stack: Stack, name: str, timeout: float = 180) -> dict[str, Any]:
    """`kubectl get rerase NAME` each time the phase changes, until a final one; the rows
    aligned as `kubectl get --watch` prints them (each call aligns only its own)."""
    deadline = time.monotonic() + timeout
    seen = ""
    widths = [len(name) + 3, 19, 8, 11, 23, 5]
    print(f"$ kubectl get rerase {name} -n {NAMESPACE} --watch")
    while time.monotonic() < deadline:
        obj: dict[str, Any] = json.loads(
            stack.kubectl("get", "recorderasure", name, "-n", NAMESPACE, "-o", "json").stdout
        )
        status = obj.get("status") or {}
        phase = str(status.get("phase") or "")
        if phase and phase != seen:
            header, row = table_cells(stack.kubectl("get", "rerase", name, "-n", NAMESPACE).stdout)
            lines = [row] if seen else [header, row]
            for cells in lines:
                print("".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip())
            seen = phase
        if phase in ("DryRun", "Failed") or (phase == "KeyErased" and status.get("receipt")):
            return obj
        time.sleep(0.3)
    raise SystemExit(f"RecordErasure {name} did not finish in {timeout:.0f}s (phase {seen})")


def scene_record_erasure(stack: Stack, operator: OperatorProcess) -> None:
    banner("RecordErasure: one customer's records erased by key, with a signed receipt")
    bootstrap = stack.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    workdir = stack.dev / "demo-erasure"
    print("the operator's administrator makes the receipts' signing key, once:")
    public_key = signing_key(stack, workdir)

    topic = f"customers-{int(time.time())}"
    where = customers_topic(admin, bootstrap, topic)
    print(
        f"\ncompacted topic {topic}: 300 customers' profiles; {CUSTOMER} has "
        + ", ".join(f"{n} record(s) in partition {p}" for p, n in sorted(where.items()))
    )
    read, found = records_with_key(bootstrap, topic, CUSTOMER.encode())
    print(f"a consumer reading all of it: {read} records, {found} with key {CUSTOMER}")
    stop = threading.Event()
    writer = threading.Thread(target=updates, args=(bootstrap, topic, stop), daemon=True)
    writer.start()
    print("(other customers' updates keep arriving, 3 records every 300 ms)")

    # Leftover from an earlier demo on this stack: the name is the request's, not the topic's.
    stack.kubectl("delete", "recorderasure", ERASURE, "-n", NAMESPACE, "--ignore-not-found")
    args = ["erase", "--key", CUSTOMER, "--topic", topic, "--cluster-ref", BINDING]
    args += ["--name", ERASURE, "-n", NAMESPACE]
    print(f"\n$ kafka-retention {' '.join(args)}")
    made = cli(stack, *args)
    if made.returncode != 0:
        raise SystemExit(f"kafka-retention erase failed: {made.stderr}")
    print(made.stdout.rstrip())
    print(f"$ kafka-retention {' '.join(args)} | kubectl create -f -")
    print(stack.kubectl("create", "-f", "-", stdin=made.stdout).stdout.rstrip())
    try:
        obj = follow(stack, ERASURE)
    finally:
        stop.set()
        writer.join()
    status = obj["status"]
    if status["phase"] != "KeyErased":
        show(stack, "get", "recorderasure", ERASURE, "-n", NAMESPACE, "-o", "yaml")
        raise SystemExit(f"RecordErasure {ERASURE} ended {status['phase']}")
    show(
        stack,
        "get",
        "recorderasure",
        ERASURE,
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{'\\n'}{end}",
    )
    show(
        stack,
        "get",
        "recorderasure",
        ERASURE,
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={range .status.evidence[?(@.tombstone)]}{.topic}-{.partition}: tombstone at "
        "{.tombstone.offset}, digest {.digest}{'\\n'}{end}",
    )
    read, found = records_with_key(bootstrap, topic, CUSTOMER.encode())
    print(f"a consumer reading all of {topic}: {read} records, {found} with key {CUSTOMER}")

    receipt = workdir / "receipt.json"
    print(f"\n$ kafka-retention evidence {ERASURE} -n {NAMESPACE} -o receipt.json")
    got = cli(stack, "evidence", ERASURE, "-n", NAMESPACE, "-o", str(receipt))
    print((got.stdout + got.stderr).rstrip())
    if got.returncode != 0:
        raise SystemExit("kafka-retention evidence failed")
    signed = json.loads(receipt.read_text())
    doc = signed["receipt"]
    print(
        f"receipt of {doc['resource']['namespace']}/{doc['resource']['name']} on cluster "
        f"{doc['clusterId']}: digests {doc['digests']}, {len(doc['evidence'])} evidence "
        f"entries, phases {sorted(doc['phases'], key=doc['phases'].get)}, completed "
        f"{doc['completedAt']}"
    )
    print("$ kafka-retention verify-receipt receipt.json --public-key erasure-signing.pub.pem")
    checked = cli(stack, "verify-receipt", str(receipt), "--public-key", str(public_key))
    print((checked.stdout + checked.stderr).rstrip(), f"(exit {checked.returncode})")
    if checked.returncode != 0:
        raise SystemExit("the receipt did not verify")

    # What the privacy promise means, checked: the operator's log (--verbose) names the
    # digest and never the key.
    log = operator.log.read_text(errors="replace")
    digest = doc["digests"][0]
    print(
        f"operator log: {log.count(digest)} mentions of the digest, "
        f"{log.count(CUSTOMER)} of {CUSTOMER}"
    )
    if CUSTOMER in log:
        raise SystemExit(f"the operator log names {CUSTOMER}")
    show(
        stack,
        "get",
        "events",
        "-n",
        NAMESPACE,
        "--field-selector",
        f"involvedObject.name={ERASURE}",
        "--sort-by=.lastTimestamp",
        "-o",
        "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message",
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
        scene_record_erasure(stack, operator)
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
