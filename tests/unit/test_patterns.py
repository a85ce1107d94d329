"""Topic patterns: RE2, bounded in what one pattern and the cache of them may hold."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import re2

from kafka_retention.core import patterns
from kafka_retention.core.patterns import (
    MAX_PROGRAM_SIZE,
    RE2_MAX_MEM,
    PatternCache,
    PatternError,
    compile_pattern,
)


def test_a_pattern_is_refused_past_its_program_size_with_the_reason() -> None:
    # 8 instructions per `.` (any UTF-8 character): 3 x 1,000 fits, 3 x 1,000 x 10 not.
    assert compile_pattern(".{1000}" * 2).programsize <= MAX_PROGRAM_SIZE
    with pytest.raises(PatternError, match="compiles to 24,004 RE2 instructions"):
        compile_pattern(".{1000}" * 3)
    # Past RE2's own memory cap, RE2 refuses to compile it: the same words, not
    # "not supported (no lookarounds...)".
    with pytest.raises(PatternError, match=r"past RE2's 1 MiB limit.*20,000 RE2 instructions"):
        compile_pattern(".{1000}" * 100)


def test_refusals_are_not_cached_and_say_so_every_time() -> None:
    for _ in range(2):
        with pytest.raises(PatternError):
            compile_pattern("(?<=a)b")
    assert "(?<=a)b" not in patterns._CACHE


def test_the_cache_stays_within_its_budget_and_keeps_what_is_used() -> None:
    cache = PatternCache(budget=200_000)
    hot = cache.get("app-.*-hot")
    big = [f"t{i}-" + ".{249}" for i in range(20)]  # about 100 KB each, by estimate
    for i, pattern in enumerate(big):
        cache.get(pattern)
        assert cache.get("app-.*-hot") is hot  # used between: never the oldest
        assert cache.used <= cache.budget, i
    assert "app-.*-hot" in cache
    assert big[0] not in cache
    assert big[-1] in cache
    assert len(cache) < 5


def test_a_pattern_larger_than_the_whole_budget_is_still_answered_alone() -> None:
    cache = PatternCache(budget=1)
    cache.get("a")
    regex = cache.get("b+")
    assert regex.fullmatch("bbb")
    assert len(cache) == 1
    assert "b+" in cache


def test_adversarial_patterns_fill_the_cache_only_to_its_budget() -> None:
    """A tenant cycling distinct patterns at the size limit: the estimate of what the
    cache holds stays within the budget, and each entry within RE2's own cap."""
    cache = PatternCache(budget=8 << 20)
    for i in range(60):
        cache.get(f"x{i}" + ".{1000}" * 2)  # 16,000 instructions
        assert cache.used <= cache.budget
    assert 0 < len(cache) < 60
    assert max(cost for _, cost in cache._entries.values()) <= RE2_MAX_MEM + 64


def test_compiled_patterns_bypass_re2s_own_unbounded_cache() -> None:
    """re2.compile keeps 128 patterns of up to 8 MiB each in a module cache of its own,
    whatever this module's budget; patterns are compiled past it."""
    module_cache: Any = re2._Regexp._make  # type: ignore[attr-defined]
    before = module_cache.cache_info().currsize
    compile_pattern("bypass-[0-9]+-check")
    assert module_cache.cache_info().currsize == before


def test_threads_sharing_the_cache_keep_its_books_right() -> None:
    cache = PatternCache(budget=300_000)
    names = [f"t{i % 30}-[a-z]{{1,{i % 7 + 1}}}" for i in range(600)]
    barrier = threading.Barrier(8)

    def work(k: int) -> None:
        barrier.wait()
        for pattern in names[k::8]:
            assert cache.get(pattern).fullmatch(pattern.split("-")[0] + "-a")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert cache.used == sum(cost for _, cost in cache._entries.values())
    assert cache.used <= cache.budget


def test_matching_stays_right_under_the_lower_memory_cap() -> None:
    """RE2_MAX_MEM also caps the DFA states matching caches; past it RE2 falls back to its
    NFA (slower, still linear and right). Many distinct names through one pattern."""
    regex = compile_pattern("(?:[a-z]{1,5}-){1,40}[0-9]{1,200}")
    for i in range(2000):
        groups = "-".join(["abcde"[: i % 5 + 1]] * (i % 40 + 1))
        assert regex.fullmatch(f"{groups}-{i}"[:249]), i
        assert regex.fullmatch(f"{groups}-{i}x"[:249]) is None, i
