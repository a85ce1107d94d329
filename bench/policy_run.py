"""`make bench`, one RetentionPolicy run over 20,000 partitions: a deleteConsumed policy of
two groups, timed from `kubectl apply` to the watch event of its run's completedAt, beside
what a cron job would run for the same cut: `kafka-consumer-groups.sh --describe` of each
group, the smallest committed offset of each partition taken from their output, then
`kafka-delete-records.sh` at it. Same cluster, same run, taking turns, median of RUNS
after one untimed round (the operator's first Spark session, the first JVM's disk reads).

Before each turn one record goes to each partition, the fast group commits at the new
high watermark and the slow one a record behind: the cut is the slow group's offset,
and every turn deletes one record a partition, as the others do. Each turn starts once the
brokers are quiet again (bench.common.quiet_brokers).

A fresh policy (a new name each turn) runs at once; the operator plans it as it plans
any policy of its size: in process up to --in-process-max-partitions (50,000 by default
with a local Spark session, so 20,000 partitions plan in process), past it with its
local Spark session. py-spy records the operator during one more run, and each part's
share of its samples goes into the row (BENCH_POLICY_PROFILE=0 leaves it out).
BENCH_POLICY_PARTITIONS and BENCH_POLICY_RUNS change the size and the runs;
`PYTHONPATH=hack:. .venv/bin/python -m bench.policy_run` runs it alone.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from bench import planning
from bench.common import (
    REPO,
    Point,
    ResourceWatch,
    Row,
    delete_records,
    describe_group,
    drop_topics,
    offsets_file,
    profile_summary,
    py_spy,
    quiet_brokers,
    run_alone,
    say,
)
from bench.purge_scale import all_offsets
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.records import produce_to_each

SIZE = int(os.environ.get("BENCH_POLICY_PARTITIONS", "20000"))
RUNS = int(os.environ.get("BENCH_POLICY_RUNS", "3"))
PROFILE = os.environ.get("BENCH_POLICY_PROFILE", "1") == "1"
FAST, SLOW = planning.GROUPS
FIELDS = "{.metadata.name} {.status.lastRun.completedAt} {.status.lastRun.recordsDeleted}"
GOAL = 0.5  # the issue's: a run in at most half of the reference's time

SERIES_OURS = "RetentionPolicy run, apply -> completed"
SERIES_REF = "kafka-consumer-groups --describe x2 + kafka-delete-records"

TPs = list[tuple[str, int]]


def _advance(bootstrap: str, admin: AdminClient, tps: TPs) -> list[int]:
    """One more record in each partition; the fast group at the high watermark, the slow
    one a record behind it. Returns the cut (the slow group's offsets)."""
    produce_to_each(bootstrap, tps)
    ends = all_offsets(admin, tps, "latest")
    for group, behind in ((FAST, 0), (SLOW, 1)):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            offsets = [KTP(t, p, end - behind) for (t, p), end in zip(tps, ends, strict=True)]
            for i in range(0, len(offsets), 10_000):
                planning.commit(consumer, offsets[i : i + 10_000])
        finally:
            consumer.close()
    return [end - 1 for end in ends]


def run_policy(
    stack: Stack, watch: ResourceWatch, name: str, prefix: str, bootstrap: str = ""
) -> tuple[float, int]:
    """A deleteConsumed policy of both groups over the prefix's topics, on the stack's
    cluster unless `bootstrap` names another, applied, waited for and deleted: (seconds
    from apply to the watch event of its completedAt, records deleted). Also
    bench.footprint's run."""
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": name, "namespace": watch.namespace},
        "spec": {
            "cluster": {"bootstrapServers": bootstrap or stack.kafka.bootstrap_servers},
            "topics": {"pattern": f"^{prefix}-.*$"},
            "interval": "1h",
            "deleteConsumed": {"groups": [FAST, SLOW]},
        },
    }
    started = time.monotonic()
    stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    finished, _, deleted = watch.wait(name, timeout=1200)
    took = finished - started
    error = stack.kubectl(
        "get",
        "retentionpolicy",
        name,
        "-n",
        watch.namespace,
        "-o",
        "jsonpath={.status.lastRun.error}",
    ).stdout
    assert not error, error
    stack.kubectl("delete", "retentionpolicy", name, "-n", watch.namespace)
    return took, deleted


def smallest_commits(outputs: list[str]) -> dict[tuple[str, int], int]:
    """Each partition's smallest CURRENT-OFFSET across `kafka-consumer-groups --describe`
    outputs (GROUP TOPIC PARTITION CURRENT-OFFSET ...); a partition one group has not
    committed ("-") is left out: nothing may be cut there."""
    found: dict[tuple[str, int], list[int | None]] = {}
    for output in outputs:
        for line in output.splitlines():
            cols = line.split()
            if len(cols) < 4 or cols[0] == "GROUP" or not cols[2].isdigit():
                continue
            offset = int(cols[3]) if cols[3].isdigit() else None
            found.setdefault((cols[1], int(cols[2])), []).append(offset)
    return {
        tp: min(o for o in offsets if o is not None)
        for tp, offsets in found.items()
        if len(offsets) == len(outputs) and None not in offsets
    }


def _reference(bootstrap: str) -> tuple[float, int]:
    started = time.monotonic()
    cuts = smallest_commits([describe_group(bootstrap, group) for group in (FAST, SLOW)])
    path = offsets_file((t, p, o) for (t, p), o in cuts.items())
    try:
        delete_records(bootstrap, path)
    finally:
        os.unlink(path)
    return time.monotonic() - started, len(cuts)


def bench_policy_run(stack: Stack, admin: AdminClient, run: str) -> list[Row]:
    bootstrap = stack.kafka.bootstrap_servers
    prefix = f"bpr-{run}"
    say(f"one RetentionPolicy run over {SIZE} partitions, {RUNS} runs beside the reference")
    names = planning.make_partitions(admin, bootstrap, prefix, SIZE)
    tps = [(n, p) for n in names for p in range(planning.PER_TOPIC)]
    stack.kubectl("apply", "--server-side", "--force-conflicts", "-k", str(REPO / "crds"))
    ns = f"bench-policy-{run}"
    stack.kubectl("create", "namespace", ns)
    operator = OperatorProcess(stack, [ns], stack.dev / f"bench-policy-operator-{run}.log")
    operator.start()
    watch = ResourceWatch(stack, ns, "retentionpolicies", FIELDS, bool)
    times: dict[str, list[float]] = {SERIES_OURS: [], SERIES_REF: []}
    try:
        for i in range(-1, RUNS):  # run -1: the untimed warm-up
            for series in (SERIES_OURS, SERIES_REF):
                cut = _advance(bootstrap, admin, tps)
                quiet_brokers(stack.kafka)
                if series == SERIES_OURS:
                    took, deleted = run_policy(stack, watch, f"run{i + 1}", prefix)
                    assert deleted >= len(tps), (deleted, len(tps))
                else:
                    took, cut_partitions = _reference(bootstrap)
                    assert cut_partitions == len(tps), (cut_partitions, len(tps))
                assert all_offsets(admin, tps, "earliest") == cut, f"{series} cut elsewhere"
                if i >= 0:
                    times[series].append(took)
                say(f"  {series}: {took:.2f} s" + (" (warm-up)" if i < 0 else ""))
        profiled = _profiled(stack, admin, watch, operator, tps, prefix) if PROFILE else ""
    finally:
        watch.stop()
        operator.stop()
        stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)
        drop_topics(admin, names)
    return [row(times, profiled)]


# Where a run's time goes, by the functions its samples pass through.
PROFILE_PARTS = {
    "topic selection and metadata": ("select",),
    "Spark plan job (local session)": ("SparkBatchPlanner.__call__",),
    "in-process plan": ("plan_in_process",),
    "groups re-read before the delete": ("_safe_cuts",),
    "DeleteRecords": ("KafkaAdmin.delete_records",),
    "status write": ("PolicyStatus.patch",),
}


def _profiled(
    stack: Stack,
    admin: AdminClient,
    watch: ResourceWatch,
    operator: OperatorProcess,
    tps: TPs,
    prefix: str,
) -> str:
    """One more run with py-spy on the operator: each part's share of the run's samples
    (the batch's thread and the threads that apply its plans)."""
    _advance(stack.kafka.bootstrap_servers, admin, tps)
    out = operator.log.with_name(f"bench-policy-profile-{SIZE}.speedscope.json")
    spy = py_spy(operator.pid, out)
    if spy is None:
        return ""
    time.sleep(1)  # py-spy attaching
    quiet_brokers(stack.kafka)
    took, _ = run_policy(stack, watch, "profiled", prefix)
    spy.send_signal(2)
    spy.wait(timeout=60)
    summary = profile_summary(out, ("run_batch", "apply_plan"), PROFILE_PARTS)
    say(f"  profiled run {took:.2f} s: {out}: {summary}")
    return (
        f"py-spy record --idle at 200 Hz of the operator during one more run ({took:.1f} s; "
        f"{out.name}): {summary}"
    )


def row(times: dict[str, list[float]], profiled: str = "") -> Row:
    ours, ref = statistics.median(times[SERIES_OURS]), statistics.median(times[SERIES_REF])
    ratio = ours / ref

    def runs(series: str) -> str:
        return ", ".join(f"{x:.2f}" for x in times[series])

    return Row(
        f"RetentionPolicy run over {SIZE} partitions, 2 groups (RF 1), apply -> completed",
        f"{ours:.2f} s",
        f"{ref:.2f} s",
        f"{ratio:.2f}x; ours: kubectl apply of a deleteConsumed policy, its plan (offsets, "
        "both groups' commits, the cut, by the operator as it plans a policy of this size), "
        "the groups re-read, DeleteRecords, status, timed to the watch event of the run's "
        f"completedAt; reference: kafka-consumer-groups.sh --describe of each group, the "
        "smallest commit of each partition from their output, kafka-delete-records.sh at "
        f"it (three JVM starts); median of {len(times[SERIES_REF])} runs, taking turns "
        f"(ours {runs(SERIES_OURS)}; reference {runs(SERIES_REF)}); one record more in "
        "every partition before each run" + (f"; profile: {profiled}" if profiled else ""),
        (
            Point("policy_run", SERIES_OURS, SIZE, ours),
            Point("policy_run", SERIES_REF, SIZE, ref),
        ),
        why=""
        if ratio <= GOAL
        else (
            f"{ratio:.2f}x of the reference against a goal of {GOAL}x. Where the time went: "
            + (profiled or "not profiled (BENCH_POLICY_PROFILE=0)")
        ),
    )


def main() -> int:
    """This benchmark alone: `PYTHONPATH=hack:. .venv/bin/python -m bench.policy_run`."""
    return run_alone(bench_policy_run)


if __name__ == "__main__":
    sys.exit(main())
