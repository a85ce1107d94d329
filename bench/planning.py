"""`make bench`, planning: one RetentionPolicy (deleteConsumed by two groups) over 1,000,
10,000 and 50,000 partitions, planned by the Spark plan job (warm local session) and by
the operator's in-process planner, beside `kafka-consumer-groups.sh --describe` for the
same two groups (the facts a person would gather by hand to find the slowest group), on
the same cluster in the same run. Each figure is the median of RUNS runs, the three tools
taking turns so that a slow moment of the machine falls on all of them.

Sizes whose partitions the local brokers cannot create, fill or serve within
MAKE_DEADLINE_S are reported as such, and FALLBACK_SIZE is measured instead (20,000 is what
bench/purge_scale.py found this machine's brokers serve reliably).

The growth is fitted over the sizes (a least-squares line, and a power law from the
log-log line), and where the time goes is read from the adapter calls of one in-process
plan and the progress lines of one Spark plan.
"""

from __future__ import annotations

import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from bench.common import (
    RUN,
    Point,
    Row,
    describe_group,
    drop_topics,
    load_average,
    say,
    wait_for_leaders,
)
from bench.common import timed as wall_seconds
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from devstack.stack import Stack
from kafka_retention.adapters.kafka import KafkaAdmin
from kafka_retention.adapters.spark import local_session
from kafka_retention.core.plan_request import PlanRequest, Scans
from kafka_retention.core.policy import RetentionRules
from kafka_retention.core.policy_spec import Member, PolicySpec, TopicSelector
from kafka_retention.services.policy.planning import plan_in_process, select
from kafka_retention.services.ports import PolicyKafka
from retention_jobs import plan_job

GROUPS = ("bench-fast", "bench-slow")  # committed at offsets 3 and 1 everywhere
PER_TOPIC = 200
SIZES = [int(s) for s in os.environ.get("BENCH_PLAN_SIZES", "1000,10000,50000").split(",")]
FALLBACK_SIZE = 20_000
RUNS = int(os.environ.get("BENCH_PLAN_RUNS", "3"))
MAKE_DEADLINE_S = 600
# A Spark plan still running after this long is cancelled, and larger sizes skip Spark:
# the rest of `make bench` must still run.
SPARK_CAP_S = float(os.environ.get("BENCH_PLAN_SPARK_CAP", "300"))
SERIES = ("Spark plan job", "in process", "kafka-consumer-groups --describe x2")


class TooBig(Exception):
    """The local brokers could not create, fill or serve this many partitions."""


# --- the growth fit (pure) ------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """t = intercept + slope * n (least squares) and t = scale * n ** exponent (log-log)."""

    intercept: float
    slope: float
    scale: float
    exponent: float

    def text(self) -> str:
        return (
            f"{self.intercept:.2f} s + {self.slope * 10_000:.2f} s per 10k partitions; "
            f"power law n^{self.exponent:.2f}"
        )


def fit_growth(xs: Sequence[float], ys: Sequence[float]) -> Fit | None:
    """Both fits over two or more distinct sizes; None with fewer."""
    if len(set(xs)) < 2 or len(xs) != len(ys):
        return None
    slope, intercept = statistics.linear_regression(xs, ys)
    if min(ys) <= 0:
        return Fit(intercept, slope, math.nan, math.nan)
    exponent, log_scale = statistics.linear_regression(
        [math.log(x) for x in xs], [math.log(y) for y in ys]
    )
    return Fit(intercept, slope, math.exp(log_scale), exponent)


# --- making the partitions ------------------------------------------------------------


def make_partitions(
    admin: AdminClient, bootstrap: str, prefix: str, count: int, within: float = MAKE_DEADLINE_S
) -> list[str]:
    """count // PER_TOPIC topics of PER_TOPIC partitions (replication factor 1: the plan's
    cost is per partition, not per replica), three records in each, and both groups
    committed. Raises TooBig past `within` seconds or when the brokers refuse."""
    deadline = time.monotonic() + within
    names = [f"{prefix}-{i:03d}" for i in range(count // PER_TOPIC)]
    try:
        # KRaft refuses one request that creates too many records: a few topics per call.
        for i in range(0, len(names), 5):
            futures = admin.create_topics([NewTopic(n, PER_TOPIC, 1) for n in names[i : i + 5]])
            for f in futures.values():
                f.result(timeout=max(1.0, deadline - time.monotonic()))
            if time.monotonic() > deadline:
                raise TooBig(f"creating topics took over {within:.0f} s")
        wait_for_leaders(admin, names, PER_TOPIC)
    except TooBig:
        raise
    except Exception as exc:
        raise TooBig(f"creating {count} partitions: {exc}") from exc
    tps = [(n, p) for n in names for p in range(PER_TOPIC)]
    _fill(bootstrap, tps, deadline)
    for group, offset in zip(GROUPS, (3, 1), strict=True):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            for i in range(0, len(tps), 10_000):
                commit(consumer, [TopicPartition(t, p, offset) for t, p in tps[i : i + 10_000]])
        except KafkaException as exc:
            raise TooBig(f"committing {group}: {exc}") from exc
        finally:
            consumer.close()
    return names


_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}


def commit(consumer: Consumer, offsets: list[TopicPartition], tries: int = 20) -> None:
    """A commit, retried while the group's coordinator moves or loads (NOT_COORDINATOR
    right after the stack starts, while the offsets topic's leaders settle)."""
    for attempt in range(tries):
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as exc:
            error = exc.args[0]
            moving = error.code() in _COORDINATOR_MOVING or error.retriable()
            if attempt == tries - 1 or not moving:
                raise
            time.sleep(0.5)


_NOT_SEEN_YET = {KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}


def _fill(bootstrap: str, tps: list[tuple[str, int]], deadline: float) -> None:
    """At least three records in every partition (a failed delivery is sent again; a
    duplicate does not change the plan, whose cut is the slow group's offset 1)."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "message.timeout.ms": 60_000}
    )
    topics = {t for t, _ in tps}
    while time.monotonic() < deadline:  # let the producer see every partition first
        seen = producer.list_topics(timeout=30).topics
        if all(t in seen and len(seen[t].partitions) == PER_TOPIC for t in topics):
            break
        time.sleep(1)
    pending = dict.fromkeys(tps, 3)
    while pending:
        if time.monotonic() > deadline:
            raise TooBig(f"{len(pending)} partitions still lacked records after the deadline")
        delivered: dict[tuple[str, int], int] = {}

        def done(err: Any, msg: Any, delivered: dict[tuple[str, int], int] = delivered) -> None:
            if err is None:
                key = (msg.topic(), msg.partition())
                delivered[key] = delivered.get(key, 0) + 1

        for (t, p), n in pending.items():
            for _ in range(n):
                while True:
                    try:
                        producer.produce(t, b"x" * 20, partition=p, on_delivery=done)
                        break
                    except BufferError:
                        producer.poll(0.05)
                    except KafkaException as exc:
                        # At 50,000 partitions a broker still catching up on the new
                        # topics may answer metadata without one: the producer drops it
                        # ("partition count changed from 200 to 0") until its next
                        # refresh. Sent again until the deadline, as a failed delivery is.
                        if exc.args[0].code() in _NOT_SEEN_YET and time.monotonic() < deadline:
                            producer.poll(0.5)
                            continue
                        raise TooBig(f"producing to {t}: {exc}") from exc
        producer.flush(max(1.0, deadline - time.monotonic()))
        pending = {tp: n - delivered.get(tp, 0) for tp, n in pending.items()}
        pending = {tp: n for tp, n in pending.items() if n > 0}


# --- timing -----------------------------------------------------------------------------


class Timed:
    """The Kafka adapter, with the time spent in each of its calls added up by name."""

    def __init__(self, inner: KafkaAdmin) -> None:
        self._inner = inner
        self.spent: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return found(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.monotonic() - started

        return timed


@dataclass(frozen=True)
class Measured:
    partitions: int
    spark: list[float]
    here: list[float]
    reference: list[float]
    here_calls: dict[str, float]
    spark_phases: list[tuple[str, float]]
    load: str  # the machine's load average before and after

    def medians(self) -> tuple[float, float, float]:
        """Spark's is NaN where its plan was cancelled at SPARK_CAP_S or not tried."""
        return (
            statistics.median(self.spark) if self.spark else math.nan,
            statistics.median(self.here),
            statistics.median(self.reference),
        )


def _capped(spark: Any, fn: Callable[[], Any]) -> float | None:
    """fn's time, or None when its Spark jobs were cancelled after SPARK_CAP_S."""
    sc = spark.sparkContext
    group = f"bench-plan-{time.monotonic_ns()}"
    fired = threading.Event()

    def cancel() -> None:
        fired.set()
        sc.cancelJobGroup(group)

    timer = threading.Timer(SPARK_CAP_S, cancel)
    sc.setJobGroup(group, "planning benchmark")
    timer.start()
    try:
        return wall_seconds(fn)
    except Exception:
        if fired.is_set():
            return None
        raise
    finally:
        timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)


def measure(bootstrap: str, prefix: str, partitions: int, with_spark: bool = True) -> Measured:
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
    members = [Member("bench/policy", policy)]

    def by_spark() -> None:
        result = plan_job.run(spark, request)
        assert len(result.rows) == partitions, (len(result.rows), partitions)
        assert all(r.target_offset == 1 for r in result.rows)

    def here(kafka: PolicyKafka) -> None:
        plans = plan_in_process(kafka, members, select(kafka, members), request.now_ms)
        cut = [r.target_offset for r in plans["bench/policy"].rows]
        assert cut == [1] * partitions, (len(cut), partitions)

    def reference() -> None:
        for group in GROUPS:
            describe_group(bootstrap, group)

    # Warm-up: Python workers, JIT.
    if with_spark and _capped(spark, by_spark) is None:
        say(f"the Spark plan of {partitions} partitions took over {SPARK_CAP_S:.0f} s: cancelled")
        with_spark = False
    load = load_average()
    spark_s: list[float] = []
    here_s, ref_s = [], []
    for i in range(RUNS):
        say(f"planning {partitions} partitions, run {i + 1} of {RUNS}")
        if with_spark:
            took = _capped(spark, by_spark)
            if took is None:
                with_spark, spark_s = False, []
            else:
                spark_s.append(took)
        here_s.append(wall_seconds(lambda: here(cast(PolicyKafka, KafkaAdmin(bootstrap)))))
        ref_s.append(wall_seconds(reference))
    # Where the time goes, from one more run of each (not counted in the medians).
    timed = Timed(KafkaAdmin(bootstrap))
    here(cast(PolicyKafka, timed))
    phases: list[tuple[str, float]] = []
    started = time.monotonic()

    def progress(message: str) -> None:
        phases.append((message, time.monotonic() - started))

    if with_spark:
        _capped(spark, lambda: plan_job.run(spark, request, progress))
    load = f"{load} -> {load_average()}"
    say(
        f"{partitions} partitions: Spark {spark_s}, in process {here_s}, reference {ref_s}; "
        f"in process by call {timed.spent}; Spark {phases}"
    )
    return Measured(partitions, spark_s, here_s, ref_s, dict(timed.spent), phases, load)


def spark_breakdown(phases: list[tuple[str, float]]) -> str:
    """The time between the plan job's progress lines, by what it did in between."""
    names = {
        0: "building the job's DataFrames",
        1: "offsets, commits and cuts",
        2: "size sampling and collecting",
    }
    out, last = [], 0.0
    for i, (_, at) in enumerate(phases[1:], start=0):
        out.append(f"{names.get(i, f'step {i}')} {at - last:.1f} s")
        last = at
    if phases:
        out.insert(0, f"topics and configs {phases[0][1]:.1f} s")
    return ", ".join(out)


# --- the benchmark ----------------------------------------------------------------------


def bench_planning(stack: Stack, admin: AdminClient) -> list[Row]:
    bootstrap = stack.kafka.bootstrap_servers
    done: list[Measured] = []
    refused: list[str] = []
    todo = list(SIZES)
    with_spark = True
    while todo:
        size = todo.pop(0)
        prefix = f"benchplan{size // 1000}k-{RUN}"
        say(f"creating {size} partitions for the planning benchmark")
        started = time.monotonic()
        names: list[str] = []
        try:
            names = make_partitions(admin, bootstrap, prefix, size)
            say(f"{size} partitions made in {time.monotonic() - started:.0f} s")
            done.append(measure(bootstrap, prefix, size, with_spark))
            with_spark = bool(done[-1].spark)
        except TooBig as exc:
            say(f"{size} partitions: {exc}")
            refused.append(f"{size:,} partitions could not be made here ({exc})")
            if size > FALLBACK_SIZE and FALLBACK_SIZE not in SIZES:
                todo.insert(0, FALLBACK_SIZE)
        except Exception as exc:  # the sizes measured so far still make their rows
            say(f"planning {size} partitions failed: {exc!r}")
            refused.append(f"planning {size:,} partitions failed ({exc!r})")
        finally:
            # Every size's topics go before the next: the brokers serve ~20k partitions.
            made = names or [f"{prefix}-{i:03d}" for i in range(size // PER_TOPIC)]
            drop_topics(admin, made, settle=stack.kafka)
    return rows(done, refused)


def rows(done: list[Measured], refused: list[str]) -> list[Row]:
    """A row per size, and one with the growth fits."""
    out = []
    for m in done:
        spark_s, here_s, ref_s = m.medians()
        calls = ", ".join(
            f"{name} {s:.1f} s" for name, s in sorted(m.here_calls.items(), key=lambda kv: -kv[1])
        )
        spark_text = (
            f"Spark over {SPARK_CAP_S:.0f} s (cancelled)"
            if math.isnan(spark_s)
            else f"Spark {spark_s:.1f} s ({spark_s / ref_s:.2f}x)"
        )
        points = [
            Point("planning", SERIES[1], m.partitions, here_s),
            Point("planning", SERIES[2], m.partitions, ref_s),
        ]
        if not math.isnan(spark_s):
            points.insert(0, Point("planning", SERIES[0], m.partitions, spark_s))
        out.append(
            Row(
                f"plan {m.partitions:,} partitions, 2 groups",
                f"{spark_text}; in process {here_s:.1f} s ({here_s / ref_s:.2f}x)",
                f"{ref_s:.1f} s",
                f"medians of {len(m.here)} runs, taking turns (load average {m.load}); "
                "ours: offsets, commits, cuts and size sampling (the first records of each "
                "partition read to estimate bytes), by the Spark job (warm local session) and "
                "by the operator's in-process planner (the same core); reference: "
                "kafka-consumer-groups.sh --describe for each group (facts only, no plan; a "
                f"JVM start each). In process, by adapter call (the log bounds, group positions "
                f"and time lookups overlap, so these add up to more than the plan): {calls}. "
                "Spark, between its "
                f"progress lines: {spark_breakdown(m.spark_phases) or '-'}",
                points=tuple(points),
                why=_why(m),
            )
        )
    if len(done) >= 2:
        fits = []
        for i, name in enumerate(SERIES):
            pairs = [(float(m.partitions), m.medians()[i]) for m in done]
            pairs = [(x, y) for x, y in pairs if not math.isnan(y)]
            fit = fit_growth([x for x, _ in pairs], [y for _, y in pairs])
            fits.append(f"{name}: {fit.text()}" if fit else f"{name}: too few sizes")
        out.append(
            Row(
                "planning time's growth with partitions",
                "; ".join(fits[:2]),
                fits[2],
                f"least-squares line and log-log power law over the medians at "
                f"{', '.join(f'{m.partitions:,}' for m in done)} partitions"
                + ("; " + "; ".join(refused) if refused else ""),
            )
        )
    elif refused:
        out.append(Row("planning at larger sizes", "-", "-", "; ".join(refused)))
    return out


def _why(m: Measured) -> str:
    spark_s, here_s, reference = m.medians()
    parts = []
    if here_s > reference:
        heavy = max(m.here_calls.items(), key=lambda kv: kv[1], default=("-", 0.0))
        parts.append(
            f"In process ({here_s:.1f} s) spends most in {heavy[0]} ({heavy[1]:.1f} s of one run)."
        )
    if math.isnan(spark_s):
        parts.append(
            f"The Spark job did not finish within {SPARK_CAP_S:.0f} s: its size sampling reads "
            "each partition as its own task (one Kafka consumer each)."
        )
    elif spark_s > reference:
        parts.append(
            f"The Spark job ({spark_s:.1f} s) adds scheduling, Python workers and a DataFrame "
            f"round trip on top of the same reads ({spark_breakdown(m.spark_phases)})."
        )
    return " ".join(parts)
