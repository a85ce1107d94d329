"""notify.groups (KIP-490, from outside Kafka): groups watched for records lost before they
read them. Read, never protecting: the plan reads their positions and counts what a cut
takes from them; services.watch reports the losses."""

from __future__ import annotations

from typing import ClassVar

from kafka_retention.core.retention_rules.rule import GroupList, Watch
from kafka_retention.core.specs import Shape


class Notify(GroupList, Watch[tuple[str, ...]]):
    name = "notify"
    attr = "notify_groups"
    # notify.atRiskWithin is the watch's look-ahead, a setting of the policy
    # (policy_spec), not a value of this rule.
    shape: ClassVar[Shape] = {"notify": {"groups": None}}


RULE = Notify()
