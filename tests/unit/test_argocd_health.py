"""The Argo CD health checks (manifests/argocd/*.lua) on a Lua 5.1 interpreter, as Argo
CD runs them: each kind's states map to Progressing, Healthy or Degraded. The e2e tests
run the same checks on objects the operator wrote (test_record_purge, test_hostile_specs,
test_retention_policy)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.helpers.argocd import ARGOCD, argocd_health


def cond(kind: str, status: str, reason: str, message: str = "", gen: int = 1) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": gen,
    }


def purge(status: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordPurge",
        "metadata": {"name": "p", "generation": 1},
    }
    if status is not None:
        body["status"] = status
    return body


def policy(conditions: list[dict[str, Any]] | None, generation: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RetentionPolicy",
        "metadata": {"name": "r", "generation": generation},
    }
    if conditions is not None:
        body["status"] = {"conditions": conditions}
    return body


def erasure(status: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": "RecordErasure",
        "metadata": {"name": "e", "generation": 1},
    }
    if status is not None:
        body["status"] = status
    return body


def test_a_purge_progresses_with_its_count_then_is_healthy() -> None:
    assert argocd_health(purge(None))[0] == "Progressing"
    status, message = argocd_health(
        purge({"phase": "Purging", "summary": {"partitions": 30, "purged": 12}})
    )
    assert (status, message) == ("Progressing", "Purging: 12 of 30 partitions purged")
    done = purge(
        {
            "phase": "Succeeded",
            "conditions": [cond("Succeeded", "True", "Purged", "300 records deleted")],
        }
    )
    assert argocd_health(done) == ("Healthy", "Purged: 300 records deleted")


@pytest.mark.parametrize("phase", ["PartiallySucceeded", "Failed"])
def test_a_purge_that_did_not_fully_succeed_is_degraded_with_the_reason(phase: str) -> None:
    obj = purge(
        {
            "phase": phase,
            "conditions": [
                cond("Ready", "True", "PlanApplied"),
                cond("Succeeded", "False", "PartiallyFailed", "2 partitions failed"),
            ],
        }
    )
    assert argocd_health(obj) == ("Degraded", f"{phase}: PartiallyFailed: 2 partitions failed")


def test_an_invalid_purge_names_the_field_in_its_degraded_message() -> None:
    obj = purge(
        {
            "phase": "Failed",
            "conditions": [
                cond("Ready", "False", "InvalidSpec", "spec.partitions[0].offset: below -1"),
                cond("Succeeded", "False", "Failed"),
            ],
        }
    )
    status, message = argocd_health(obj)
    assert status == "Degraded"
    assert "spec.partitions[0].offset" in message


def test_a_policy_waits_for_its_first_run_and_for_a_new_generation() -> None:
    assert argocd_health(policy(None))[0] == "Progressing"
    ran_old = policy([cond("Ready", "True", "RunSucceeded", gen=1)], generation=2)
    assert argocd_health(ran_old) == ("Progressing", "Generation 2 not run yet")


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        ([cond("Ready", "False", "KafkaUnavailable", "no broker")], "KafkaUnavailable: no broker"),
        (
            [cond("Ready", "False", "InvalidSpec", "spec.interval: x")],
            "InvalidSpec: spec.interval: x",
        ),
        (
            [
                cond("Ready", "True", "RunSucceeded"),
                cond("Degraded", "True", "PartiallyFailed", "1 partition failed"),
            ],
            "Degraded: PartiallyFailed: 1 partition failed",
        ),
        (
            [
                cond("Ready", "True", "RunSucceeded"),
                cond("TombstonesAtRisk", "True", "TombstonesAtRisk", "loader lags 90%"),
            ],
            "TombstonesAtRisk: TombstonesAtRisk: loader lags 90%",
        ),
    ],
)
def test_a_broken_policy_is_degraded_with_the_reason(
    conditions: list[dict[str, Any]], message: str
) -> None:
    assert argocd_health(policy(conditions)) == ("Degraded", message)


def test_a_policy_with_past_losses_is_healthy_and_says_so() -> None:
    obj = policy(
        [
            cond("Degraded", "False", "AllApplied"),
            cond("DataLoss", "True", "UnconsumedRecordsDeleted"),
            cond("OnSchedule", "False", "Late", "started 40s after it was due"),
            cond("Ready", "True", "RunSucceeded", "cut 3 partitions"),
        ]
    )
    status, message = argocd_health(obj)
    assert status == "Healthy"
    assert message == (
        "RunSucceeded: cut 3 partitions; DataLoss (UnconsumedRecordsDeleted); "
        "late: started 40s after it was due"
    )


def test_the_argocd_cm_snippet_carries_the_same_checks() -> None:
    data = yaml.safe_load((ARGOCD / "argocd-cm-patch.yaml").read_text())["data"]
    for kind in ("RecordPurge", "RetentionPolicy", "RecordErasure"):
        inline = data[f"resource.customizations.health.kafka-retention.io_{kind}"]
        assert inline == (ARGOCD / f"{kind.lower()}-health.lua").read_text()


RECEIPT = {"configMap": "e-receipt", "sha256": "ab" * 32, "keyId": "0123456789abcdef"}


def test_an_erasure_progresses_through_its_phases_with_the_ready_message() -> None:
    assert argocd_health(erasure(None))[0] == "Progressing"
    for phase in ("Pending", "Scanning", "Tombstoned", "ValuesErased", "AwaitingRetention"):
        waiting = erasure(
            {
                "phase": phase,
                "conditions": [
                    cond("Erased", "False", "AwaitingCompaction", "the cleaner's next pass"),
                    cond("Ready", "True", "InProgress", "2 matches left in orders.customers"),
                ],
            }
        )
        assert argocd_health(waiting) == (
            "Progressing",
            f"{phase}: InProgress: 2 matches left in orders.customers",
        )


def test_an_erasure_is_healthy_only_once_its_keys_are_gone_and_its_receipt_signed() -> None:
    conditions = [
        cond("Ready", "True", "KeyErased", "no record with a listed key is left"),
        cond("Erased", "True", "KeyErased", "no record with a listed key is left"),
    ]
    done = erasure({"phase": "KeyErased", "conditions": conditions, "receipt": RECEIPT})
    assert argocd_health(done) == (
        "Healthy",
        "KeyErased: KeyErased: no record with a listed key is left",
    )
    # Erased, but the operator has no signing key yet: not done for an auditor.
    unsigned = erasure(
        {
            "phase": "KeyErased",
            "conditions": [
                cond("Ready", "False", "SigningKeyUnavailable", "no Secret x"),
                cond("ReceiptSigned", "False", "SigningKeyUnavailable", "no Secret x"),
            ],
        }
    )
    assert argocd_health(unsigned) == (
        "Progressing",
        "KeyErased: SigningKeyUnavailable: no Secret x",
    )


def test_a_dry_run_erasure_is_healthy() -> None:
    obj = erasure(
        {
            "phase": "DryRun",
            "conditions": [cond("Ready", "True", "DryRunCompleted", "3 matches found")],
        }
    )
    assert argocd_health(obj) == ("Healthy", "DryRun: DryRunCompleted: 3 matches found")


def test_a_failed_erasure_is_degraded_naming_the_field() -> None:
    obj = erasure(
        {
            "phase": "Failed",
            "conditions": [
                cond(
                    "Ready",
                    "False",
                    "NotPermitted",
                    "spec.topics.names[0]: billing is not allowed; nothing was read or written",
                ),
                cond("Erased", "False", "NotPermitted"),
            ],
        }
    )
    status, message = argocd_health(obj)
    assert status == "Degraded"
    assert message.startswith("Failed: NotPermitted: spec.topics.names[0]: ")
