"""spec.topics.pattern: a regular expression matched against every topic of the cluster,
on each run. Python's `re` backtracks: `(a+)+$` against a long topic name takes seconds
per topic, and a spec must not be able to stall the operator. Patterns are matched with
RE2 (linear time in the name's length), so RE2's syntax is the rule: everything topic
patterns use (classes, alternation, repeats, anchors) works; lookarounds and
backreferences, which RE2 cannot run in linear time, are refused with the field named.
"""

from __future__ import annotations

import functools
import re

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error goes to the user in a condition, not to stderr


class PatternError(ValueError):
    """Why a pattern is refused, in words for the spec's condition."""


# The parser checks a pattern and every run's selection matches with it: compile once.
@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re2._Regexp[str]:
    # Python's parser first: it refuses what RE2 would read as literal text (a repeat
    # count past 2**32), so a typo is an error rather than a pattern matching nothing.
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        raise PatternError(f"{pattern!r} is not a regular expression: {err}") from None
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as err:
        why = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
        raise PatternError(
            f"{pattern!r} is not supported: {why} (patterns use RE2 syntax: no lookarounds "
            "or backreferences)"
        ) from None
