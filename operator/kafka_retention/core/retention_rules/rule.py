"""What every retention rule declares, whatever it decides.

A rule reads one value of the policy (its field of `registry.RetentionRules`, named by
`attr`): `parse` makes it from the spec, refusing a bad one with a SpecError that names
the field. A rule is one of three kinds:

- a `Proposer` proposes a cut (deleteConsumed, deleteBefore, maxRetention): the furthest
  proposal wins, the first rule listed on a tie;
- a `Floor` only ever lowers the winning cut (minRetention), with a note and a guard tag
  of its own saying why (registry.GUARDS lists them beside core.rules');
- a `Watch` cuts nothing; it only needs groups read (notify).

`passes_groups` marks a rule whose cut may pass a group's committed offset (a time rule):
strict tenancy admits it only with the `retention` operation, and a loss it causes is
attributed to it by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from kafka_retention.core import rules
from kafka_retention.core.conditions import timestamp
from kafka_retention.core.facts import PartitionFacts
from kafka_retention.core.specs import Shape

T = TypeVar("T")


class Values(Protocol):
    """A policy's rule values (registry.RetentionRules), as another rule reads them."""

    def of(self, rule: Rule[T]) -> T: ...


class Rule(Generic[T]):
    # How status, events and loss attribution name the rule.
    name: ClassVar[str]
    # Its field under spec, dotted ("deleteConsumed.minRetention"); refusals name
    # `spec.<path>`.
    path: ClassVar[str]
    # Its value's field of registry.RetentionRules.
    attr: ClassVar[str]
    # Its part of the spec's field tree (policy_spec.POLICY_FIELDS, the CRD's).
    shape: ClassVar[Shape]
    # Whether its cut may pass a group's committed offset: only with the retention
    # operation under strict tenancy, and its name is a loss's cause.
    passes_groups: ClassVar[bool] = False

    @property
    def field(self) -> str:
        return f"spec.{self.path}"

    def parse(self, spec: Mapping[str, Any]) -> T:
        """Its value from the spec (its unset value when the field is absent)."""
        raise NotImplementedError

    def asked(self, value: T) -> bool:
        """Whether the policy asks for the rule at all."""
        return value is not None

    def check(self, values: Values) -> None:
        """Refuse a value that contradicts another rule's, once every rule is parsed."""

    def groups(self, value: T) -> tuple[str, ...]:
        """Groups whose positions the plan reads for the rule."""
        return ()

    def lookup_times(self, value: T, now_ms: int) -> tuple[int, ...]:
        """Times whose offsets (ListOffsets for a timestamp) the rule needs."""
        return ()

    def retention_ms(self, value: T) -> int | None:
        """The age past which it deletes records, read or not (at-risk checks)."""
        return None


class Proposer(Rule[T]):
    """A deleting rule: it proposes a cut."""

    def propose(self, value: T, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        raise NotImplementedError


class Floor(Rule[T]):
    """A guard of the policy's own: it only lowers the cut, tagging its note `guard` (a
    tag of status.topics[].cut.limits[].guard, listed in the CRD's enum)."""

    guard: ClassVar[str]

    def lower(self, value: T, cut: rules.Cut, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        raise NotImplementedError


class Watch(Rule[T]):
    """Cuts nothing: it only needs facts read (groups whose losses are counted)."""


def iso(epoch_ms: int) -> str:
    """A time as rules' reasons and notes write it."""
    return timestamp(datetime.fromtimestamp(epoch_ms / 1000, tz=UTC))
