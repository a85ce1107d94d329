"""Every spec of the hostile corpus (tests/helpers/hostile.py), applied to the real API
server with the operator running: each is refused by `kubectl apply` (schema or CEL) or
ends with an InvalidSpec condition naming its field, and no record of the topics the
corpus names is deleted. The counts of both outcomes are printed for the issue note."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from devstack.stack import Stack
from tests.helpers.argocd import argocd_health
from tests.helpers.commits import commit
from tests.helpers.hostile import CORPUS, manifest
from tests.helpers.kafka import Kafka
from tests.helpers.kube import get
from tests.helpers.offsets import log_starts
from tests.helpers.records import produce

# It aims at the fixed topic `orders`, as test_tenancy's corpus does: the two files share
# a group in tests/helpers/sharing.py, so they never run at once.
pytestmark = [pytest.mark.stack]

# The topics the corpus cuts, made to hold records so a wrong delete would show.
TOPIC = "orders"
PARTITIONS = 3


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    conditions: list[dict[str, Any]] = obj.get("status", {}).get("conditions") or []
    return conditions


def _named_invalid(obj: dict[str, Any], field: str) -> bool:
    return any(
        c.get("reason") == "InvalidSpec" and field in c.get("message", "") for c in _conditions(obj)
    )


def test_every_hostile_spec_is_refused_at_apply_or_named_in_a_condition_and_nothing_is_deleted(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    if TOPIC not in kafka.admin.list_topics(timeout=10).topics:
        kafka.admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=30)
    produce(kafka.bootstrap, TOPIC, dict.fromkeys(range(PARTITIONS), 20))
    # The group the corpus names has read some: a spec misread as "delete what it read"
    # would cut. The commit also makes __consumer_offsets, which some entries name.
    commit(kafka.bootstrap, "enricher", TOPIC, dict.fromkeys(range(PARTITIONS), 15))
    before = {
        TOPIC: log_starts(kafka.admin, TOPIC, PARTITIONS),
        "__consumer_offsets": log_starts(kafka.admin, "__consumer_offsets", 10),
    }

    at_apply: list[str] = []
    accepted: dict[str, tuple[str, str]] = {}  # name -> (kind, field)
    for entry in CORPUS:
        # Server-side: the largest entries (1 MB) exceed client-side apply's annotation.
        done = stack.kubectl(
            "apply",
            "--server-side",
            "--field-manager=hostile-corpus",
            "-f",
            "-",
            stdin=json.dumps(manifest(entry, e2e_ns)),
            check=False,
        )
        if done.returncode != 0:
            assert "spec" in done.stderr, (entry.name, done.stderr)
            at_apply.append(entry.name)
        else:
            accepted[entry.name] = (entry.kind, entry.field)

    deadline = time.monotonic() + 180
    waiting = dict(accepted)
    while waiting and time.monotonic() < deadline:
        for name, (kind, field) in list(waiting.items()):
            if _named_invalid(get(stack, kind.lower(), e2e_ns, name), field):
                del waiting[name]
        time.sleep(1)
    unnamed = {
        name: [c.get("message") for c in _conditions(get(stack, kind.lower(), e2e_ns, name))]
        for name, (kind, _) in waiting.items()
    }
    assert unnamed == {}, "accepted by the API server and not refused naming the field"
    # Argo CD shows each as Degraded, naming the field (manifests/argocd).
    not_degraded = {}
    for name, (kind, field) in accepted.items():
        health, message = argocd_health(get(stack, kind.lower(), e2e_ns, name))
        if health != "Degraded" or field not in message:
            not_degraded[name] = (health, message)
    assert not_degraded == {}

    after = {
        TOPIC: log_starts(kafka.admin, TOPIC, PARTITIONS),
        "__consumer_offsets": log_starts(kafka.admin, "__consumer_offsets", 10),
    }
    assert after == before
    for name, (kind, _) in accepted.items():
        status = get(stack, kind.lower(), e2e_ns, name).get("status", {})
        assert not status.get("lastRun"), (name, "a policy with an invalid spec ran")
        assert (status.get("summary") or {}).get("recordsDeleted", 0) == 0, name
    print(
        f"hostile corpus: {len(CORPUS)} specs; {len(at_apply)} refused at apply, "
        f"{len(accepted)} refused by the operator naming the field"
    )
    stack.kubectl("delete", "recordpurges", "--all", "-n", e2e_ns, "--wait=false", check=False)
