"""The RetentionPolicy due-queue, with simulated time: who runs when, and who is late."""

from __future__ import annotations

import itertools
import random

from kafka_retention.services.scheduler import Scheduler, slack_for


def add(
    s: Scheduler,
    key: str,
    cluster: str = "c1",
    interval: float = 60,
    gen: int = 1,
    now: float = 0.0,
    resume_at: float | None = None,
) -> None:
    s.upsert(key, cluster, interval, gen, {}, now, resume_at=resume_at)


def keys(batches: list[list]) -> list[list[str]]:  # type: ignore[type-arg]
    return [[e.key for e in b] for b in batches]


def test_new_policies_of_one_cluster_run_as_one_batch_and_other_clusters_apart() -> None:
    s = Scheduler(window=5)
    add(s, "ns/a", "c1")
    add(s, "ns/b", "c1", now=3)
    add(s, "ns/x", "c2")
    assert keys(s.take(now=3)) == [["ns/a", "ns/b"], ["ns/x"]]
    assert s.take(now=4) == []  # nothing due, and both clusters busy


def test_a_run_never_overlaps_itself_and_the_next_is_one_interval_after_it_ends() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a", interval=60)
    (_batch,) = s.take(now=0)
    assert s.take(now=100) == []  # still running: no second run of it
    s.finish("c1", {"ns/a": 60}, now=100)
    assert s.take(now=159) == []
    assert keys(s.take(now=160)) == [["ns/a"]]


def test_a_busy_cluster_holds_its_next_batch_until_the_running_one_ends() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a")
    s.take(now=0)
    add(s, "ns/b", now=1)
    assert s.take(now=2) == []
    s.finish("c1", {"ns/a": 60}, now=10)
    assert keys(s.take(now=10)) == [["ns/b"]]


def test_a_spec_change_runs_at_once_or_right_after_the_run_in_progress() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a", gen=1)
    s.take(now=0)
    add(s, "ns/a", gen=2, now=5)  # changed while running
    s.finish("c1", {"ns/a": 60}, now=10)
    assert keys(s.take(now=10)) == [["ns/a"]]
    s.finish("c1", {"ns/a": 60}, now=11)
    add(s, "ns/a", gen=3, now=20)  # changed while waiting
    assert keys(s.take(now=20)) == [["ns/a"]]


def test_the_same_generation_seen_again_changes_nothing() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a", gen=1)
    s.take(now=0)
    s.finish("c1", {"ns/a": 60}, now=1)
    add(s, "ns/a", gen=1, now=2)  # a status write comes back through the watch
    assert s.take(now=2) == []
    assert s.next_due() == 61


def test_a_restart_resumes_the_stored_schedule() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a", now=100, resume_at=130)
    add(s, "ns/b", now=100, resume_at=50)  # overdue: at once
    assert keys(s.take(now=100)) == [["ns/b"]]
    s.finish("c1", {"ns/b": 60}, now=101)
    assert s.take(now=129) == []
    assert keys(s.take(now=130)) == [["ns/a"]]


def test_an_invalid_spec_waits_for_a_new_generation() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a", gen=1)
    s.take(now=0)
    s.finish("c1", {"ns/a": float("inf")}, now=1)
    assert s.take(now=10_000) == []
    add(s, "ns/a", gen=2, now=10_001)
    assert keys(s.take(now=10_001)) == [["ns/a"]]


def test_a_deleted_policy_never_runs_again() -> None:
    s = Scheduler(window=0)
    add(s, "ns/a")
    s.take(now=0)
    s.remove("ns/a")
    s.finish("c1", {"ns/a": 60}, now=1)
    assert s.take(now=1000) == []
    assert s.next_due() == float("inf")


def test_a_policy_waiting_past_its_slack_is_reported_late_once() -> None:
    s = Scheduler(window=0)
    add(s, "ns/slow", interval=60)
    add(s, "ns/waiting", interval=60, now=1)
    s.take(now=0)  # ns/slow's batch; ns/waiting is due at 1 behind it
    assert s.late(now=1 + slack_for(60)) == []
    late = s.late(now=1 + slack_for(60) + 1)
    assert [e.key for e in late] == ["ns/waiting"]
    assert s.late(now=500) == []  # said once per episode
    assert s.queue_depth(now=500) == 1


def test_a_thousand_policies_each_start_within_their_slack() -> None:
    """1,000 policies on 10 clusters, intervals of 1 to 10 minutes, batches that take
    0.5 s plus 20 ms per policy: every run starts within its slack, and every policy
    runs again within its interval plus its slack, over two simulated hours."""
    rng = random.Random(7)  # noqa: S311 - a repeatable simulation, not a secret
    s = Scheduler(window=5)
    intervals = {}
    for i in range(1000):
        key = f"ns/p{i:04d}"
        intervals[key] = rng.choice([60, 120, 300, 600])
        add(s, key, f"c{i % 10}", interval=intervals[key], now=rng.uniform(0, 30))
    in_flight: list[tuple[float, str, list[str]]] = []
    starts: dict[str, list[float]] = {k: [] for k in intervals}
    worst = 0.0
    now = 0.0
    while now < 7200:
        for end, cluster, members in [b for b in in_flight if b[0] <= now]:
            in_flight.remove((end, cluster, members))
            s.finish(cluster, {k: intervals[k] for k in members}, now=end)
        for batch in s.take(now):
            for e in batch:
                worst = max(worst, (now - e.due) - e.slack)
                starts[e.key].append(now)
            members = [e.key for e in batch]
            in_flight.append((now + 0.5 + 0.02 * len(members), str(batch[0].cluster), members))
        now += 0.25
    assert worst <= 0, f"a run started {worst:.1f}s past its slack"
    for key, times in starts.items():
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert len(times) >= 7200 // (intervals[key] + slack_for(intervals[key])) - 1, key
        assert max(gaps) <= intervals[key] + slack_for(intervals[key]) + 1, key
