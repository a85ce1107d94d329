"""Every spec of the hostile corpus (tests/helpers/hostile.py), applied to the real API
server with the operator running: each is refused by `kubectl apply` (schema or CEL) or
ends with an InvalidSpec condition naming its field, no record of the topics the corpus
names is deleted, and nothing is written to the compacted topic its erasures aim at (a
tombstone would move its high watermark). The counts of both outcomes are printed for the
issue note. A RecordErasure's spec cannot change once created."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from devstack.stack import Stack
from tests.helpers.argocd import argocd_health
from tests.helpers.commits import commit
from tests.helpers.hostile import (
    BOOTSTRAP,
    CORPUS,
    ERASE_DIGEST,
    ERASE_KEY,
    ERASE_TOPIC,
    PASTED_64,
    PASTED_EMAIL,
    manifest,
)
from tests.helpers.kafka import Kafka
from tests.helpers.kube import apply, apply_refused, events, get, resource, wait_for
from tests.helpers.offsets import high_watermarks, log_starts
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


def _erase_topic(kafka: Kafka) -> None:
    """ERASE_TOPIC, compacted, holding ERASE_KEY in two partitions (and other keys): what
    an erasure accepted by mistake would write a tombstone to."""
    if ERASE_TOPIC not in kafka.admin.list_topics(timeout=10).topics:
        topic = NewTopic(ERASE_TOPIC, PARTITIONS, 3, config={"cleanup.policy": "compact"})
        kafka.admin.create_topics([topic])[ERASE_TOPIC].result(timeout=30)
    produce(
        kafka.bootstrap,
        ERASE_TOPIC,
        {0: 5, 1: 5},
        key=lambda p, i: ERASE_KEY if i == 0 else f"customer-{p}-{i}".encode(),
    )


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
    _erase_topic(kafka)
    before = {
        TOPIC: log_starts(kafka.admin, TOPIC, PARTITIONS),
        "__consumer_offsets": log_starts(kafka.admin, "__consumer_offsets", 10),
    }
    written_before = high_watermarks(kafka.admin, ERASE_TOPIC, PARTITIONS)

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
    # Not a tombstone: the erasures' topic holds what it held.
    assert high_watermarks(kafka.admin, ERASE_TOPIC, PARTITIONS) == written_before
    for name, (kind, _) in accepted.items():
        status = get(stack, kind.lower(), e2e_ns, name).get("status", {})
        assert not status.get("lastRun"), (name, "a policy with an invalid spec ran")
        assert (status.get("summary") or {}).get("recordsDeleted", 0) == 0, name
        if kind == "RecordErasure":
            assert status.get("phase") == "Failed", (name, status.get("phase"))
            assert (status.get("summary") or {}).get("tombstonesWritten", 0) == 0, name
            # What was pasted for a key is in no condition or event.
            told = json.dumps([status, events(stack, e2e_ns, name)])
            assert PASTED_EMAIL not in told, name
            assert PASTED_64 not in told, name
    print(
        f"hostile corpus: {len(CORPUS)} specs; {len(at_apply)} refused at apply, "
        f"{len(accepted)} refused by the operator naming the field"
    )
    for plural in ("recordpurges", "recorderasures"):
        stack.kubectl("delete", plural, "--all", "-n", e2e_ns, "--wait=false", check=False)


def test_an_erasure_spec_cannot_change_once_created(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    """The API server refuses any change to a RecordErasure's spec (the receipt vouches
    for the keys it was created with): another key, another topic, a dry run turned
    real. The stored spec stays as created."""
    _erase_topic(kafka)
    spec = {
        "cluster": {"bootstrapServers": BOOTSTRAP},
        "topics": {"names": [ERASE_TOPIC]},
        "keys": [{"sha256": ERASE_DIGEST}],
        "dryRun": True,
    }
    name = "erase-immutable"
    apply(stack, resource("RecordErasure", name, e2e_ns, spec=spec))
    try:
        done = wait_for(
            stack,
            "recorderasure",
            e2e_ns,
            name,
            lambda o: (o.get("status") or {}).get("phase") in ("DryRun", "Failed"),
            timeout=120,
        )
        assert done["status"]["phase"] == "DryRun", done["status"]
        assert argocd_health(done)[0] == "Healthy"
        stored = done["spec"]
        changes: list[dict[str, Any]] = [
            {"keys": [{"sha256": "0" * 64}]},
            {"topics": {"names": [ERASE_TOPIC, TOPIC]}},
            {"dryRun": False},
        ]
        for change in changes:
            said = apply_refused(
                stack, resource("RecordErasure", name, e2e_ns, spec={**spec, **change})
            )
            assert "immutable" in said, said
        assert get(stack, "recorderasure", e2e_ns, name)["spec"] == stored
    finally:
        stack.kubectl("delete", "recorderasure", name, "-n", e2e_ns, "--wait=false", check=False)
