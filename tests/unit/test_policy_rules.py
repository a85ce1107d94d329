"""RetentionPolicy cuts: the safe combination of rules, tried against random facts."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kafka_retention.core.durations import parse_duration_ms
from kafka_retention.core.facts import PartitionFacts, TopicPartition
from kafka_retention.core.policy import RetentionRules, plan_partition

TP = TopicPartition("t", 0)
NOW = 1_800_000_000_000
GROUPS = ("a", "b", "c")


@st.composite
def partitions(draw: st.DrawFn, policy: RetentionRules) -> PartitionFacts:
    log_start = draw(st.integers(0, 10_000))
    hw = draw(st.integers(log_start, log_start + 10_000))
    committed = {g: draw(st.none() | st.integers(0, hw + 10)) for g in policy.groups()}
    times: dict[int, int | None] = {}
    for t in policy.lookup_times(NOW):
        times[t] = draw(st.none() | st.integers(log_start, hw))
    return PartitionFacts(TP, log_start, hw, committed, times)


policies = st.builds(
    RetentionRules,
    consumed_groups=st.lists(st.sampled_from(GROUPS), unique=True).map(tuple),
    min_retention_ms=st.none() | st.integers(0, 10**9),
    delete_before_ms=st.none() | st.integers(NOW - 10**10, NOW),
    max_retention_ms=st.none() | st.integers(1, 10**10),
)


@given(st.data(), policies)
def test_cut_stays_between_log_start_and_high_watermark(
    data: st.DataObject, policy: RetentionRules
) -> None:
    facts = data.draw(partitions(policy))
    cut = plan_partition(facts, policy, NOW)
    assert facts.log_start <= cut.target <= facts.high_watermark


@given(st.data(), policies)
def test_consumed_only_never_passes_any_group(data: st.DataObject, policy: RetentionRules) -> None:
    assume(policy.consumed_groups)
    policy = RetentionRules(
        consumed_groups=policy.consumed_groups, min_retention_ms=policy.min_retention_ms
    )
    facts = data.draw(partitions(policy))
    cut = plan_partition(facts, policy, NOW)
    for g in policy.consumed_groups:
        committed = facts.committed[g]
        assert cut.target <= max(
            facts.log_start, facts.log_start if committed is None else committed
        )
    assert all(i.unconsumed_to_delete == 0 for i in cut.groups)


@given(st.data(), policies)
def test_min_retention_keeps_every_young_record(
    data: st.DataObject, policy: RetentionRules
) -> None:
    assume(policy.min_retention_ms is not None)
    facts = data.draw(partitions(policy))
    assert policy.min_retention_ms is not None
    first_young = facts.offsets_for_times[NOW - policy.min_retention_ms]
    cut = plan_partition(facts, policy, NOW)
    if first_young is not None:
        assert cut.target <= max(first_young, facts.log_start)


# Policies that read at least one group, so the group that reads on is drawn from them
# (filtering random policies for that starved Hypothesis of inputs).
policies_with_groups = policies.flatmap(
    lambda p: st.lists(st.sampled_from(GROUPS), min_size=1, unique=True).map(
        lambda groups: RetentionRules(
            consumed_groups=tuple(groups),
            min_retention_ms=p.min_retention_ms,
            delete_before_ms=p.delete_before_ms,
            max_retention_ms=p.max_retention_ms,
        )
    )
)


@given(st.data(), policies_with_groups, st.integers(0, 100))
def test_a_group_reading_further_never_lowers_the_cut(
    data: st.DataObject, policy: RetentionRules, step: int
) -> None:
    group = data.draw(st.sampled_from(policy.consumed_groups))
    facts = data.draw(partitions(policy))
    committed = facts.committed[group]
    assume(committed is not None)
    assert committed is not None  # for the type checker; assume() rejected None
    before = plan_partition(facts, policy, NOW)
    moved = dict(facts.committed)
    moved[group] = committed + step
    after = plan_partition(
        PartitionFacts(TP, facts.log_start, facts.high_watermark, moved, facts.offsets_for_times),
        policy,
        NOW,
    )
    assert after.target >= before.target


def facts(
    log_start: int, hw: int, committed: dict[str, int | None], times: dict[int, int | None]
) -> PartitionFacts:
    return PartitionFacts(TP, log_start, hw, committed, times)


def test_max_retention_passes_an_idle_group_and_reports_its_loss() -> None:
    policy = RetentionRules(consumed_groups=("slow",), max_retention_ms=3_600_000)
    cut = plan_partition(facts(0, 100, {"slow": 10}, {NOW - 3_600_000: 70}), policy, NOW)
    assert (cut.target, cut.rule) == (70, "maxRetention")
    assert cut.groups[0].unconsumed_to_delete == 60


def test_delete_before_cuts_regardless_of_groups() -> None:
    policy = RetentionRules(consumed_groups=("g",), delete_before_ms=NOW - 5)
    cut = plan_partition(facts(0, 100, {"g": None}, {NOW - 5: 40}), policy, NOW)
    assert (cut.target, cut.rule) == (40, "deleteBefore")


def test_group_without_commit_keeps_the_partition_under_delete_consumed() -> None:
    policy = RetentionRules(consumed_groups=("a", "b"))
    cut = plan_partition(facts(5, 100, {"a": 50, "b": None}, {}), policy, NOW)
    assert cut.target == 5
    assert "no committed offset" in cut.reason


def test_min_retention_holds_back_a_consumed_cut() -> None:
    policy = RetentionRules(consumed_groups=("a",), min_retention_ms=900_000)
    cut = plan_partition(facts(0, 100, {"a": 90}, {NOW - 900_000: 60}), policy, NOW)
    assert cut.target == 60
    assert any("minRetention" in n for n in cut.notes)


def test_durations() -> None:
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("1h30m") == 5_400_000
    assert parse_duration_ms("7d") == 604_800_000
    assert parse_duration_ms("250ms") == 250


@pytest.mark.parametrize("bad", ["", "5", "5 m", "m5", "5w", "1h x"])
def test_malformed_duration_is_named_in_the_error(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration_ms(bad)
