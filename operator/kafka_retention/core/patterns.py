"""spec.topics.pattern: a regular expression matched against every topic of the cluster,
on each run. Python's `re` backtracks: `(a+)+$` against a long topic name takes seconds
per topic, and a spec must not be able to stall the operator. Patterns are matched with
RE2 (linear time in the name's length), so RE2's syntax is the rule: everything topic
patterns use (classes, alternation, repeats, anchors) works; lookarounds and
backreferences, which RE2 cannot run in linear time, are refused with the field named.

Nor may a spec fill the operator's memory. A short pattern can compile to a large
program (`(?:.{100}){10}` repeated: 900 characters, 400,000 instructions, about 6 MiB,
within RE2's default limit), so a pattern
is refused past MAX_PATTERN_LENGTH characters or MAX_PROGRAM_SIZE instructions, and each
compiled pattern is held to RE2_MAX_MEM (its program and the DFA states RE2 caches while
matching). Compiled patterns are kept in an LRU bounded by their estimated size, not by
their count: a tenant's large patterns push out others' only up to CACHE_BUDGET_BYTES.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable

import re2

# The longest pattern accepted: the CRD's maxLength for spec.topics.pattern, checked
# here too for callers the CRD does not cover (bindings' topic patterns, the CLI).
MAX_PATTERN_LENGTH = 1024
# RE2 instructions a pattern may compile to. Topic names are at most 249 characters of
# [a-zA-Z0-9._-]: `.{249}` is 2,000 instructions, `[^.]{1,249}` 2,244, an alternation
# of a hundred names a few hundred; `.{1000}` (any character, UTF-8) is 8,000.
MAX_PROGRAM_SIZE = 20_000
# RE2's own memory cap per pattern (program, reverse program and DFA caches); RE2
# refuses to compile past it and falls back from its DFA to its NFA when matching would
# exceed it (still linear time). Its default is 8 MiB.
RE2_MAX_MEM = 1 << 20
# What the cache of compiled patterns may hold, by estimate (`_cost`).
CACHE_BUDGET_BYTES = 64 << 20
# Estimated bytes per RE2 instruction and per pattern, measured as RSS over 1,000
# compiled patterns each matched against 300 topic names: 16 to 32 bytes an instruction
# compiled and up to 10 more in DFA states while matching; about 2 KiB a pattern fixed,
# and 2 to 4 KiB of DFA states for a small one. Rounded up.
_BYTES_PER_INSTRUCTION = 48
_OVERHEAD_BYTES = 8192

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error goes to the user in a condition, not to stderr
_OPTIONS.max_mem = RE2_MAX_MEM


class PatternError(ValueError):
    """Why a pattern is refused, in words for the spec's condition."""


def _shown(pattern: str) -> str:
    """The pattern as an error message quotes it: long ones cut, the message stays small."""
    return repr(pattern) if len(pattern) <= 80 else f"{pattern[:60]!r}... ({len(pattern)} chars)"


def _too_large(pattern: str, size: str) -> PatternError:
    return PatternError(
        f"{_shown(pattern)} compiles to {size}, more than a pattern may use "
        f"({MAX_PROGRAM_SIZE:,} RE2 instructions): a repeat count multiplies its atom, and "
        r"an atom matching any character (., [^...], \W) is 7 to 11 instructions; match "
        "topic names with [a-zA-Z0-9._-] and smaller counts, or list the topics in "
        "spec.topics.names"
    )


def _compile(pattern: str) -> re2._Regexp[str]:
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(
            f"{_shown(pattern)} is longer than {MAX_PATTERN_LENGTH} characters; "
            "list the topics in spec.topics.names instead"
        )
    # Python's parser first: it refuses what RE2 would read as literal text (a repeat
    # count past 2**32), so a typo is an error rather than a pattern matching nothing.
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        raise PatternError(f"{_shown(pattern)} is not a regular expression: {err}") from None
    try:
        # Not re2.compile: its module-level cache would keep 128 patterns of up to
        # max_mem each whatever this module's budget says.
        compiled = re2._Regexp(pattern, _OPTIONS)
    except re2.error as err:
        why = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
        if "pattern too large" in why:
            limit = f"a program past RE2's {RE2_MAX_MEM >> 20} MiB limit"
            raise _too_large(pattern, limit) from None
        raise PatternError(
            f"{_shown(pattern)} is not supported: {why} (patterns use RE2 syntax: no "
            "lookarounds or backreferences)"
        ) from None
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise _too_large(pattern, f"{compiled.programsize:,} RE2 instructions")
    return compiled


def _cost(pattern: str, compiled: re2._Regexp[str]) -> int:
    """Estimated bytes a compiled pattern holds: its text, its program and the DFA states
    matching adds (RE2 caps program and states at RE2_MAX_MEM)."""
    held = _BYTES_PER_INSTRUCTION * max(0, compiled.programsize) + _OVERHEAD_BYTES
    return len(pattern.encode()) + min(RE2_MAX_MEM, held)


class PatternCache:
    """Compiled patterns, least recently used first out once their estimated sizes pass
    `budget` bytes. Shared by the threads that parse specs and select topics: a lock
    keeps its books; compiling happens outside it (two threads may compile one pattern
    at once, and one result is kept)."""

    def __init__(self, budget: int = CACHE_BUDGET_BYTES) -> None:
        self.budget = budget
        self.used = 0
        self._entries: OrderedDict[str, tuple[re2._Regexp[str], int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, pattern: object) -> bool:
        return pattern in self._entries

    def get(self, pattern: str) -> re2._Regexp[str]:
        with self._lock:
            hit = self._entries.get(pattern)
            if hit is not None:
                self._entries.move_to_end(pattern)
                return hit[0]
        compiled = _compile(pattern)  # refused patterns are not kept: they raise each time
        cost = _cost(pattern, compiled)
        with self._lock:
            if pattern not in self._entries:
                self._entries[pattern] = (compiled, cost)
                self.used += cost
            self._entries.move_to_end(pattern)
            # Never evict the pattern just asked for, even if it alone passes the budget.
            while self.used > self.budget and len(self._entries) > 1:
                _, (_, freed) = self._entries.popitem(last=False)
                self.used -= freed
        return compiled

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.used = 0


_CACHE = PatternCache()


def compile_pattern(pattern: str) -> re2._Regexp[str]:
    """The pattern compiled, from the cache when it is there (the parser checks a
    pattern, and every run's selection matches with it). PatternError says why not."""
    return _CACHE.get(pattern)


def first_match(patterns: Iterable[str], name: str) -> str | None:
    """The first pattern whose whole-name match `name` is, or None."""
    return next((p for p in patterns if compile_pattern(p).fullmatch(name)), None)
