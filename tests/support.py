"""Helpers for tests on the real stack: produce, commit, read offsets, run the operator."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import tenacity
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, OffsetSpec

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from kafka_retention.core.purge_states import FINAL_PHASES

__all__ = ["OperatorProcess"]


def produce(
    bootstrap: str,
    topic: str,
    per_partition: Mapping[int, int],
    *,
    timestamps: Mapping[int, list[int]] | None = None,
    value: bytes = b"v" * 100,
    key: Callable[[int, int], bytes | None] | None = None,
) -> None:
    """Write per_partition[p] records to each partition p (acks=all); optional CreateTimes."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    )
    failures: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(err)

    for partition, count in per_partition.items():
        for i in range(count):
            extra: dict[str, Any] = {}
            if timestamps is not None:
                extra["timestamp"] = timestamps[partition][i]
            producer.produce(
                topic,
                value=value,
                key=key(partition, i) if key else None,
                partition=partition,
                on_delivery=on_delivery,
                **extra,
            )
    assert producer.flush(60) == 0
    assert failures == []


def produce_to_each(
    bootstrap: str, targets: list[tuple[str, int]], value: bytes = b"r", rounds: int = 10
) -> None:
    """One record per entry of `targets` (a partition named n times gets n), exactly. A
    producer that has not yet seen a brand-new topic's partitions refuses records for them
    (unknown partition), which flush() does not count. A failed delivery report does not
    say the record is not written, though: a request that timed out may have landed. So
    after a round with failures the high watermarks say how many each partition still
    lacks, and only those are sent again (sending every failed record again wrote
    duplicates: 20,005 records in 20,000 partitions)."""
    # A record waiting for metadata fails after a minute (not librdkafka's default five)
    # and is sent again in the next round with fresh metadata.
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "message.timeout.ms": 60_000}
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted: dict[tuple[str, int], int] = {}
    for target in targets:
        wanted[target] = wanted.get(target, 0) + 1
    partitions: dict[str, int] = {}
    for topic, partition in wanted:
        partitions[topic] = max(partitions.get(topic, 0), partition + 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # let the producer see every partition first
        seen = producer.list_topics(timeout=10).topics
        if all(t in seen and len(seen[t].partitions) >= n for t, n in partitions.items()):
            break
        time.sleep(0.5)
    before = latest_offsets(admin, list(wanted))
    pending = dict(wanted)
    for _ in range(rounds):
        failures: list[int] = []

        def on_delivery(
            err: KafkaError | None, _msg: Message, failures: list[int] = failures
        ) -> None:
            if err is not None:
                failures.append(1)

        for (topic, partition), count in pending.items():
            for _i in range(count):
                try:
                    producer.produce(
                        topic, value=value, partition=partition, on_delivery=on_delivery
                    )
                except KafkaException:
                    failures.append(1)
                producer.poll(0)
        assert producer.flush(300) == 0
        if not failures:
            return
        time.sleep(2)  # a request that timed out here may still be landing
        now = latest_offsets(admin, list(pending))
        short = {tp: wanted[tp] - (now[tp] - before[tp]) for tp in pending}
        pending = {tp: n for tp, n in short.items() if n > 0}
        if not pending:
            return
        producer.list_topics(timeout=10)  # a fresh look at the metadata
    raise AssertionError(f"{len(pending)} partitions short of records, e.g. {list(pending)[:3]}")


def latest_offsets(
    admin: AdminClient, partitions: list[tuple[str, int]], chunk: int = 5000
) -> dict[tuple[str, int], int]:
    """Each partition's high watermark, asked in chunks (one request for 20,000 is slow)."""
    out: dict[tuple[str, int], int] = {}
    for i in range(0, len(partitions), chunk):
        part = partitions[i : i + chunk]

        # Brand-new partitions answer NOT_LEADER until their leader broker has taken them
        # on, which after creating 20,000 takes a minute or two past the metadata naming
        # it; the metadata is refreshed between tries, as _offsets does.
        def refresh(_: tenacity.RetryCallState) -> None:
            admin.list_topics(timeout=30)

        @tenacity.retry(
            retry=tenacity.retry_if_exception_type((KafkaException, TimeoutError, Unanswered)),
            stop=tenacity.stop_after_delay(300),
            wait=tenacity.wait_fixed(2),
            before_sleep=refresh,
            reraise=True,
        )
        def read(part: list[tuple[str, int]] = part) -> dict[tuple[str, int], int]:
            futures = admin.list_offsets(
                {TopicPartition(t, p): OffsetSpec.latest() for t, p in part},  # type: ignore[no-untyped-call]
                request_timeout=30,
            )
            got = {
                (tp.topic, tp.partition): f.result(timeout=60).offset for tp, f in futures.items()
            }
            if any(offset < 0 for offset in got.values()):
                raise Unanswered(f"no offset for {[tp for tp, o in got.items() if o < 0][:3]}")
            return got

        out.update(read())
    return out


def commit(bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]) -> None:
    """Commit offsets for a group without joining it, as a stopped consumer leaves them."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def commit_groups(admin: AdminClient, offsets: Mapping[str, int], suffix: str = "-g") -> None:
    """Commit each topic's own group (`<topic><suffix>`) at the offset given on partition
    0, many at once through the admin API, as their consumers would have. On a fresh
    cluster the group coordinators are still coming up: a partition's error comes back in
    the result (not raised), and those commits are made again until all are stored."""
    pending = dict(offsets)
    for _ in range(30):
        futures = {
            t: admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(f"{t}{suffix}", [TopicPartition(t, 0, offset)])]
            )[f"{t}{suffix}"]
            for t, offset in pending.items()
        }
        failed = {}
        for t, f in futures.items():
            try:
                result = f.result(timeout=60)
            except KafkaException:
                failed[t] = pending[t]
                continue
            if any(tp.error is not None for tp in result.topic_partitions):
                failed[t] = pending[t]
        if not failed:
            return
        pending = failed
        time.sleep(1)
    raise AssertionError(f"{len(pending)} group commits never stored, e.g. {list(pending)[:3]}")


def log_starts(admin: AdminClient, topic: str, partitions: int) -> list[int]:
    return _offsets(admin, topic, partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]


def high_watermarks(admin: AdminClient, topic: str, partitions: int) -> list[int]:
    return _offsets(admin, topic, partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]


class Unanswered(Exception):
    """Kafka gave no offset for a partition."""


def _offsets(admin: AdminClient, topic: str, partitions: int, spec: OffsetSpec) -> list[int]:
    # librdkafka answers "No leaders found" when its metadata cache lags a leader change
    # (brokers restarted by other tests); a fresh look a moment later gets the answer.
    def refresh(_: tenacity.RetryCallState) -> None:
        admin.list_topics(topic, timeout=10)

    # A request sent to a broker that was just killed gets no answer: it times out, and
    # the next one, after a metadata refresh, goes to the partition's new leader.
    @tenacity.retry(
        retry=tenacity.retry_if_exception_type((KafkaException, TimeoutError, Unanswered)),
        stop=tenacity.stop_after_attempt(20),
        wait=tenacity.wait_fixed(0.5),
        before_sleep=refresh,
        reraise=True,
    )
    def read() -> list[int]:
        futures = admin.list_offsets(
            {TopicPartition(topic, p): spec for p in range(partitions)}, request_timeout=10
        )
        by_partition = {tp.partition: f.result(timeout=15).offset for tp, f in futures.items()}
        if any(offset < 0 for offset in by_partition.values()):
            # -1001 (no offset) comes back while a partition has no leader to answer.
            raise Unanswered(f"{topic}: {by_partition}")
        return [by_partition[p] for p in range(partitions)]

    return read()


def first_offsets_read(bootstrap: str, topic: str, partitions: int) -> list[int | None]:
    """The first offset a consumer reading from the earliest position gets, per partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    first: dict[int, int | None] = {}
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    try:
        deadline = time.monotonic() + 30
        while len(first) < partitions and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=100, timeout=0.2):
                p = int(msg.partition() or 0)
                err = msg.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    first.setdefault(p, None)
                elif err is None:
                    first.setdefault(p, msg.offset())
    finally:
        consumer.close()
    return [first.get(p) for p in range(partitions)]


def get(stack: Stack, kind: str, namespace: str, name: str) -> dict[str, Any]:
    done = stack.kubectl("get", kind, name, "-n", namespace, "-o", "json")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def wait_for(
    stack: Stack,
    kind: str,
    namespace: str,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    timeout: float = 60,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    obj = get(stack, kind, namespace, name)
    while not check(obj):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{kind}/{name} did not get there in {timeout}s: "
                f"{json.dumps(obj.get('status'), indent=1)}"
            )
        time.sleep(0.3)
        obj = get(stack, kind, namespace, name)
    return obj


def events(stack: Stack, namespace: str, name: str) -> list[dict[str, Any]]:
    done = stack.kubectl(
        "get",
        "events",
        "-n",
        namespace,
        "-o",
        "json",
        "--field-selector",
        f"involvedObject.name={name}",
    )
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def install_spark_operator_crd(stack: Stack) -> None:
    """The stand-in SparkApplication CRD (tests/fixtures), established and discoverable."""
    crd = Path(__file__).resolve().parent / "fixtures" / "sparkapplications-crd.yaml"
    stack.kubectl("apply", "--server-side", "-f", str(crd))
    stack.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/sparkapplications.sparkoperator.k8s.io",
    )


def purge_finished(stack: Stack, ns: str, name: str, timeout: float = 60) -> dict[str, Any]:
    """The RecordPurge once it reached a final phase."""
    return wait_for(
        stack,
        "recordpurge",
        ns,
        name,
        lambda o: o.get("status", {}).get("phase") in FINAL_PHASES,
        timeout,
    )


ARGOCD = Path(__file__).resolve().parents[1] / "manifests" / "argocd"


def argocd_health(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(status, message) of the object by the project's Argo CD health check, run on a
    Lua 5.1 interpreter as Argo CD runs it (gopher-lua implements 5.1)."""
    from lupa import lua51

    script = (ARGOCD / f"{str(obj['kind']).lower()}-health.lua").read_text()
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(json.loads(json.dumps(obj)), recursive=True)
    hs = lua.execute(script)
    return str(hs["status"]), str(hs["message"] or "")


# --- the project's resources on the stack: apply, wait, read ---------------------------

HOUR = 3_600_000
NO_RETENTION = {"retention.ms": "-1"}


def apply_policy(stack: Stack, ns: str, name: str, **spec: Any) -> None:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "cluster": {"bootstrapServers": stack.kafka.bootstrap_servers},
            "interval": "10s",
            **spec,
        },
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def apply_purge(stack: Stack, ns: str, name: str, **spec: Any) -> None:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"cluster": {"bootstrapServers": stack.kafka.bootstrap_servers}, **spec},
    }
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))


def eventually(check: Callable[[], bool], timeout: float = 90, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.5)


def ran(stack: Stack, ns: str, name: str, after: str = "") -> dict[str, Any]:
    """The policy once a run completed (after the given completedAt, if any)."""
    return wait_for(
        stack,
        "retentionpolicy",
        ns,
        name,
        lambda o: o.get("status", {}).get("lastRun", {}).get("completedAt", "") > after,
        timeout=120,
    )


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def results(obj: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["topic"], r["partition"]): r for r in obj["status"]["results"]}


def delete_records(admin: AdminClient, topic: str, cuts: dict[int, int]) -> None:
    """A manual DeleteRecords, as a person with kafka-delete-records.sh would."""
    futures = admin.delete_records([KTP(topic, p, o) for p, o in cuts.items()])
    for fut in futures.values():
        fut.result(timeout=30)


def loss_events(stack: Stack, ns: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events(stack, ns, name) if e["reason"] == "UnconsumedRecordsDeleted"]
