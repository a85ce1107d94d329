"""notify.groups (KIP-490, from outside Kafka): groups watched for records lost before they
read them. Read, never protecting: the plan reads their positions and counts what a cut
takes from them; services.watch reports the losses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kafka_retention.core.retention_rules.rule import Watch
from kafka_retention.core.specs import Shape, SpecError, group_ids, obj


class Notify(Watch[tuple[str, ...]]):
    name = "notify"
    path = "notify"
    attr = "notify_groups"
    # notify.atRiskWithin is the watch's look-ahead, a setting of the policy
    # (policy_spec), not a value of this rule.
    shape: ClassVar[Shape] = {"notify": {"groups": None}}

    def parse(self, spec: Mapping[str, Any]) -> tuple[str, ...]:
        notify = spec.get("notify")
        if notify is None:
            return ()
        notify = obj(notify, "spec.notify")
        groups = group_ids(notify.get("groups"), "spec.notify.groups")
        if not groups:
            raise SpecError("spec.notify.groups", "needs at least one group")
        return groups

    def asked(self, value: tuple[str, ...]) -> bool:
        return bool(value)

    def groups(self, value: tuple[str, ...]) -> tuple[str, ...]:
        return value


RULE = Notify()
