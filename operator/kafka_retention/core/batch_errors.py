"""Whose status may carry a shared batch's error in full.

The policies of a batch can belong to different namespaces (tenants sharing a cluster
binding). An error that stops the batch (a Spark task's failure, a read that failed) may
name one member's topic, partition or group: it goes in full only to the member(s) it
names, and only when they are all of one namespace; the others learn that the batch
failed and that nothing was deleted, never another namespace's names. Pure: the caller
says which names each member uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Characters a topic or group name may carry around a name found in free text; a
# partition follows its topic as "-N" (or "[N]").
_NAME_CHARS = r"A-Za-z0-9._-"

NAMES_OTHER_POLICY = (
    "the batch this policy was planned with failed on another policy (its cause is in "
    "that policy's status); nothing was deleted; retried at status.nextRunAt"
)
NAMES_UNKNOWN = (
    "the batch this policy was planned with failed; its cause may concern other "
    "namespaces, so it is only in the operator's log; nothing was deleted; retried at "
    "status.nextRunAt"
)


class BatchFailed(Exception):
    """A member's view of a batch failure that concerns others."""


def _namespace(key: str) -> str:
    namespace, slash, _ = key.partition("/")
    return namespace if slash else ""


def names_any(text: str, names: Iterable[str]) -> bool:
    """Whether `text` names one of `names` as a whole name (a partition suffix allowed)."""
    for name in names:
        if not name:
            continue
        pattern = rf"(?<![{_NAME_CHARS}]){re.escape(name)}(?:-\d+)?(?![{_NAME_CHARS}])"
        if re.search(pattern, text):
            return True
    return False


def told_in_full(text: str, names: Mapping[str, Iterable[str]]) -> set[str]:
    """The members (keys namespace/name -> the topics and groups they use) whose status
    may carry `text` as it is."""
    named = {key for key, used in names.items() if names_any(text, used)}
    namespaces = {_namespace(key) for key in names}
    if len(namespaces) <= 1:
        # One namespace: nothing can leak; the member(s) named, else every member.
        return named or set(names)
    if len({_namespace(key) for key in named}) == 1:
        return named
    # Nobody named (the error may name what no member lists), or several namespaces.
    return set()


def as_told(err: BaseException, key: str, full: set[str]) -> BaseException:
    """The error member `key` is told, `full` being told_in_full's answer."""
    if key in full:
        return err
    return BatchFailed(NAMES_OTHER_POLICY if full else NAMES_UNKNOWN)
