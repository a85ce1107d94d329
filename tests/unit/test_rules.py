"""Properties of the cut rules: ceilings only lower, nothing passes a protected group."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_retention.core import rules

offsets = st.integers(min_value=0, max_value=10**12)
commits = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.none() | offsets, min_size=1)


@given(cut=offsets, committed=commits, log_start=offsets)
def test_protected_cut_never_passes_a_committed_offset(
    cut: int, committed: dict[str, int | None], log_start: int
) -> None:
    result = rules.protect_groups(rules.Cut(cut, "x"), committed, committed.keys(), log_start)
    ceilings = [log_start if offset is None else offset for offset in committed.values()]
    # Exactly the lowest ceiling: a group without a commit counts as "read nothing".
    assert result.offset == min(cut, *ceilings)


@given(committed=commits, log_start=offsets)
def test_consumed_cut_is_the_slowest_group(
    committed: dict[str, int | None], log_start: int
) -> None:
    result = rules.consumed_by(committed, committed.keys(), log_start)
    if any(v is None for v in committed.values()):
        assert result.offset == log_start
        assert "no committed offset" in result.reason
    else:
        assert result.offset == min(v for v in committed.values() if v is not None)


@given(a=offsets, b=offsets, committed=commits, log_start=offsets)
def test_protection_is_monotone_in_the_proposed_cut(
    a: int, b: int, committed: dict[str, int | None], log_start: int
) -> None:
    lo, hi = sorted((a, b))
    groups = committed.keys()
    assert (
        rules.protect_groups(rules.Cut(lo, "x"), committed, groups, log_start).offset
        <= rules.protect_groups(rules.Cut(hi, "x"), committed, groups, log_start).offset
    )


@given(cut=offsets, hw=offsets)
def test_cut_never_exceeds_the_high_watermark(cut: int, hw: int) -> None:
    assert rules.at_most_high_watermark(rules.Cut(cut, "x"), hw).offset == min(cut, hw)


def test_lowering_records_why() -> None:
    result = rules.protect_groups(rules.Cut(100, "offset 100"), {"audit": 40}, ["audit"], 0)
    assert result.offset == 40
    assert result.reason == "offset 100"
    assert result.notes == ("lowered to 40, committed offset of audit",)


def test_minus_one_means_the_high_watermark() -> None:
    assert rules.explicit(-1, 77).offset == 77


def test_timestamp_after_every_record_cuts_everything() -> None:
    assert rules.before_timestamp(None, 50, "2026-01-01T00:00:00+00:00").offset == 50
    assert rules.before_timestamp(-1, 50, "2026-01-01T00:00:00+00:00").offset == 50
    assert rules.before_timestamp(12, 50, "2026-01-01T00:00:00+00:00").offset == 12


def test_cut_below_log_start_deletes_nothing() -> None:
    assert rules.records_deleted_by(5, 10) == 0
    assert rules.records_deleted_by(15, 10) == 5
