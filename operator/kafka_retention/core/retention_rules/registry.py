"""Every retention rule, in order, and the values a policy gives them (RetentionRules).

The order is the rules' precedence: among proposals of the same offset the first rule
listed names the cut, and floors lower it one after another in this order. Planning
(core.policy.plan_partition, the Spark plan job through it), policy_spec's parser,
services.tenancy and core.loss iterate RULES rather than naming rules.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka_retention.core import rules
from kafka_retention.core.retention_rules import (
    delete_before,
    delete_consumed,
    max_retention,
    min_records,
    min_retention,
    notify,
)
from kafka_retention.core.retention_rules.rule import Floor, Proposer, Rule
from kafka_retention.core.specs import Shape

T = TypeVar("T")

RULES: tuple[Rule[Any], ...] = (
    delete_consumed.RULE,
    min_retention.RULE,
    delete_before.RULE,
    max_retention.RULE,
    min_records.RULE,
    notify.RULE,
)

# Every guard tag a cut may carry (status.topics[].cut.limits[].guard): core.rules' own
# and each floor's.
GUARDS: tuple[str, ...] = (*rules.GUARDS, *(r.guard for r in RULES if isinstance(r, Floor)))


@dataclass(frozen=True)
class RetentionRules:
    """A policy's value for each rule (a rule's `attr` names its field), as the spec gave
    them; a field's default is "not asked". The plan request carries these fields to
    Spark pods as they are."""

    consumed_groups: tuple[str, ...] = ()
    min_retention_ms: int | None = None
    delete_before_ms: int | None = None
    max_retention_ms: int | None = None
    # Groups watched for unread-record loss (spec.notify.groups): read, never protecting.
    notify_groups: tuple[str, ...] = ()
    # The last records of each partition kept (spec.minRecords; 0: no buffer).
    min_records: int = 0

    def of(self, rule: Rule[T]) -> T:
        value: T = getattr(self, rule.attr)
        return value

    # Asked once a partition by every planner: at fleet size (a million rows in the Spark
    # job) these are worked out once per policy, not again for each row.
    @functools.cached_property
    def _asked(self) -> tuple[tuple[Rule[Any], Any], ...]:
        found = ((rule, self.of(rule)) for rule in RULES)
        return tuple((rule, value) for rule, value in found if rule.asked(value))

    @functools.cached_property
    def proposers(self) -> tuple[tuple[Proposer[Any], Any], ...]:
        """The deleting rules asked for, with their values, in order."""
        return tuple((r, v) for r, v in self._asked if isinstance(r, Proposer))

    @functools.cached_property
    def floors(self) -> tuple[tuple[Floor[Any], Any], ...]:
        """The floors asked for, with their values, in order."""
        return tuple((r, v) for r, v in self._asked if isinstance(r, Floor))

    @functools.cached_property
    def _groups(self) -> tuple[str, ...]:
        return tuple(sorted({g for rule, value in self._asked for g in rule.groups(value)}))

    def asked(self) -> tuple[Rule[Any], ...]:
        """The rules the policy asks for, in order."""
        return tuple(rule for rule, _ in self._asked)

    def lookup_times(self, now_ms: int) -> tuple[int, ...]:
        """The times whose offsets (ListOffsets for a timestamp) the plan needs."""
        return tuple(
            sorted({t for rule, value in self._asked for t in rule.lookup_times(value, now_ms)})
        )

    def groups(self) -> tuple[str, ...]:
        """Groups whose committed offsets the plan reads, and whose losses it counts."""
        return self._groups

    def acts(self) -> bool:
        """Whether it asks for a rule that acts by itself, deleting or watching: a floor
        alone only lowers what no rule proposes."""
        return any(not isinstance(rule, Floor) for rule, _ in self._asked)

    def deletes(self) -> bool:
        """False for a watch-only policy (notify alone): it plans no cut."""
        return bool(self.proposers)

    def retentions(self) -> list[tuple[int, str]]:
        """(age, rule) for each rule that deletes records past an age, read or not."""
        found = ((rule.retention_ms(value), rule.name) for rule, value in self._asked)
        return [(ms, name) for ms, name in found if ms is not None]


def parse(spec: Mapping[str, Any]) -> RetentionRules:
    """Each rule's value from a RetentionPolicy spec, in order (the first bad field is the
    one refused). Cross-rule checks wait for `check`."""
    return RetentionRules(**{rule.attr: rule.parse(spec) for rule in RULES})


def check(values: RetentionRules) -> None:
    """Refuse values that contradict each other (a floor above a cap)."""
    for rule in RULES:
        rule.check(values)


def standalone() -> tuple[Rule[Any], ...]:
    """Rules a policy may consist of alone: every rule but the floors, which only lower
    what another proposes."""
    return tuple(rule for rule in RULES if not isinstance(rule, Floor))


def merged_shape(shapes: Iterable[Shape]) -> dict[str, Shape | None]:
    """Parts of the spec's field tree, merged (two rules may share an object:
    deleteConsumed.groups and deleteConsumed.minRetention)."""
    out: dict[str, Shape | None] = {}
    for shape in shapes:
        _merge(out, shape)
    return out


def _merge(into: dict[str, Shape | None], shape: Shape) -> dict[str, Shape | None]:
    for key, inner in shape.items():
        found = into.get(key)
        if key not in into:
            into[key] = None if inner is None else _merge({}, inner)
        elif inner is not None and isinstance(found, dict):
            _merge(found, inner)
        else:
            raise ValueError(f"two rules define {key}")
    return into
