"""`make bench`: planning time and scan throughput, each beside Apache Kafka's own tool on
the same local cluster in the same run; results go to BENCHMARKS.md.

- Planning: the Spark plan job (warm session) for 1k and 10k partitions with two groups,
  beside `kafka-consumer-groups.sh --describe` for the same two groups (the facts a person
  would gather by hand to find the slowest group).
- Scan: the plan job's record scan (executors reading an offset range with confluent-kafka)
  over one topic, beside `kafka-consumer-perf-test.sh` reading the same topic.
- RecordPurge at 1k/10k/20k partitions beside `kafka-delete-records.sh` (purge_scale.py).
- A RetentionPolicy fleet: runs per minute at 1,000 policies and the operator's footprint
  at 0/100/1,000 policies (policies.py).
"""

from __future__ import annotations

import os
import platform
import re
import sys
import time
from pathlib import Path

from bench import policies, purge_scale, scan
from bench.common import REPO, RUN, Row, java_tool, say, wait_for_leaders
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from devstack import paths
from devstack.stack import Stack
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.spark import local_session
from kafka_retention.core.policy import RetentionRules
from kafka_retention.core.policy_spec import Member, PolicySpec, TopicSelector
from kafka_retention.services.policy_planning import plan_in_process, select
from retention_jobs import plan_job
from retention_jobs.request import PlanRequest, Scans
from tests.support import produce_to_each

GROUPS = ("bench-fast", "bench-slow")  # committed at offsets 3 and 1 everywhere


def make_partitions(
    admin: AdminClient, bootstrap: str, prefix: str, topics: int, per_topic: int
) -> list[str]:
    names = [f"{prefix}-{i:03d}" for i in range(topics)]
    # Replication factor 1 keeps 10k partitions within one small machine's means; the
    # plan's cost is per partition, not per replica.
    # KRaft refuses one request that creates too many records: a few topics per call.
    for i in range(0, len(names), 5):
        futures = admin.create_topics([NewTopic(n, per_topic, 1) for n in names[i : i + 5]])
        for f in futures.values():
            f.result(timeout=300)
    wait_for_leaders(admin, names, per_topic)
    # Three records to every partition, sure of delivery (new topics' metadata lags).
    produce_to_each(bootstrap, [(n, p) for n in names for p in range(per_topic)] * 3, b"x" * 20)
    for group, offset in zip(GROUPS, (3, 1), strict=True):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        for n in names:
            consumer.commit(
                offsets=[TopicPartition(n, p, offset) for p in range(per_topic)], asynchronous=False
            )
        consumer.close()
    return names


def bench_planning(
    stack: Stack, admin: AdminClient, label: str, topics: int, per_topic: int
) -> Row:
    bootstrap = stack.kafka.bootstrap_servers
    prefix = f"bench{label}-{RUN}"
    say(f"creating {topics} x {per_topic} partitions for the {label} planning run")
    make_partitions(admin, bootstrap, prefix, topics, per_topic)
    policy = PolicySpec(
        bootstrap,
        None,
        TopicSelector(pattern=f"{prefix}-.*"),
        RetentionRules(consumed_groups=GROUPS),
        300_000,
        dry_run=True,
    )
    request = PlanRequest.for_policy(
        policy, {}, int(time.time() * 1000), Scans(time_lag=False, unconsumed=False)
    )
    spark = local_session()
    plan_job.run(spark, request)  # warm-up: Python workers, JIT
    started = time.monotonic()
    result = plan_job.run(spark, request)
    ours = time.monotonic() - started
    partitions = topics * per_topic
    assert len(result.rows) == partitions, (len(result.rows), partitions)
    assert all(r["targetOffset"] == 1 for r in result.rows)
    # The same plan in the operator process (what batches below the line use).
    kafka = KafkaAdmin(bootstrap)
    members = [Member("bench/policy", policy)]
    started = time.monotonic()
    in_process = plan_in_process(kafka, members, select(kafka, members), request.now_ms)
    here = time.monotonic() - started
    assert [r["targetOffset"] for r in in_process["bench/policy"].rows] == [1] * partitions
    started = time.monotonic()
    for group in GROUPS:
        java_tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
        )
    reference = time.monotonic() - started
    return Row(
        f"plan {partitions} partitions, 2 groups",
        f"Spark {ours:.1f} s; in process {here:.1f} s",
        f"{reference:.1f} s",
        "ours: offsets, commits, cuts, size sampling, by the Spark job (warm local session) "
        "and by the operator's in-process planner (the same core); reference: "
        "kafka-consumer-groups.sh --describe for each group (facts only, no plan)",
    )


def machine() -> str:
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
    gib = int(mem.group(1)) / 1024 / 1024 if mem else 0
    return (
        f"{os.cpu_count()} cores ({cpu}), {gib:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def write(rows: list[Row], seconds: float) -> None:
    pins = paths.Pins.read()
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (bench/run.py); every figure beside Apache Kafka's own tool,",
        "on the same local cluster, in the same run. Rerun to refresh.",
        "",
        f"- Machine: {machine()}",
        f"- Cluster: Apache Kafka {pins.kafka}, 3 KRaft brokers on 127.0.0.1 (the local "
        "stack); Spark local mode, warm session",
        "- Command: `make bench`",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; run took {seconds:.0f} s",
        "",
        "| what | kafka-retention | reference tool | notes |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {r.what} | {r.ours} | {r.reference} | {r.note} |" for r in rows]
    (REPO / "BENCHMARKS.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> int:
    started = time.monotonic()
    stack = Stack()
    started_stack = stack.up()
    try:
        admin = AdminClient({"bootstrap.servers": stack.kafka.bootstrap_servers})
        rows = [
            bench_planning(stack, admin, "1k", 10, 100),
            bench_planning(stack, admin, "10k", 50, 200),
        ]
        rows += scan.bench_scan(stack, admin)
        rows += purge_scale.bench_purges(stack, admin, RUN)
        rows += policies.bench_fleet(stack, admin, RUN)
    finally:
        if started_stack:
            stack.down()
    write(rows, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
