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
from kafka_retention.core.specs import Shape, SpecError, group_ids, obj

T = TypeVar("T")


class Values(Protocol):
    """A policy's rule values (registry.RetentionRules), as another rule reads them."""

    def of(self, rule: Rule[T]) -> T: ...


class Rule(Generic[T]):
    # How status, events and loss attribution name the rule.
    name: ClassVar[str]
    # Its field under spec, dotted ("deleteConsumed.minRetention"); refusals name
    # `spec.<path>`. The name, unless the rule says otherwise.
    path: ClassVar[str]
    # Its value's field of registry.RetentionRules.
    attr: ClassVar[str]
    # Its part of the spec's field tree (policy_spec.POLICY_FIELDS, the CRD's): the field
    # at `path` alone, unless the rule says otherwise.
    shape: ClassVar[Shape]
    # Whether its cut may pass a group's committed offset: only with the retention
    # operation under strict tenancy, and its name is a loss's cause.
    passes_groups: ClassVar[bool] = False

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if "name" in cls.__dict__:  # a rule, not a kind of rule
            if "path" not in cls.__dict__:
                cls.path = cls.name
            if "shape" not in cls.__dict__:
                cls.shape = _field_at(cls.path)

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


class GroupList(Rule[tuple[str, ...]]):
    """A rule whose value is the group list at `spec.<path>.groups` (at least one group;
    none when `spec.<path>` is absent), and whose groups' positions the plan reads."""

    def parse(self, spec: Mapping[str, Any]) -> tuple[str, ...]:
        section = spec.get(self.path)
        if section is None:
            return ()
        field = f"{self.field}.groups"
        groups = group_ids(obj(section, self.field).get("groups"), field)
        if not groups:
            raise SpecError(field, "needs at least one group")
        return groups

    def asked(self, value: tuple[str, ...]) -> bool:
        return bool(value)

    def groups(self, value: tuple[str, ...]) -> tuple[str, ...]:
        return value


class BeforeTime(Proposer[int | None]):
    """A time rule: it cuts at the first record at or after the time `cut_time` derives
    from its value (a fixed time, or an age counted back from now)."""

    passes_groups = True

    def parse(self, spec: Mapping[str, Any]) -> int | None:
        raw = spec.get(self.path)
        return None if raw is None else self.parse_value(raw)

    def parse_value(self, raw: Any) -> int:
        """Its value (milliseconds) from the field as written."""
        raise NotImplementedError

    def cut_time(self, value: int, now_ms: int) -> int:
        raise NotImplementedError

    def lookup_times(self, value: int | None, now_ms: int) -> tuple[int, ...]:
        return () if value is None else (self.cut_time(value, now_ms),)

    def propose(self, value: int | None, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        assert value is not None  # asked
        since = self.cut_time(value, now_ms)
        return rules.before_timestamp(
            facts.offset_for_time(since), facts.high_watermark, iso(since)
        )


class Floor(Rule[T]):
    """A guard of the policy's own: it only lowers the cut, tagging its note `guard` (a
    tag of status.topics[].cut.limits[].guard, listed in the CRD's enum)."""

    guard: ClassVar[str]

    def lower(self, value: T, cut: rules.Cut, facts: PartitionFacts, now_ms: int) -> rules.Cut:
        raise NotImplementedError


class Watch(Rule[T]):
    """Cuts nothing: it only needs facts read (groups whose losses are counted)."""


def _field_at(path: str) -> Shape:
    head, _, rest = path.partition(".")
    return {head: _field_at(rest) if rest else None}


def iso(epoch_ms: int) -> str:
    """A time as rules' reasons and notes write it."""
    return timestamp(datetime.fromtimestamp(epoch_ms / 1000, tz=UTC))
