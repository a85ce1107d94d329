"""The CRDs in crds/ are generated from hack/crd-src/ and document every field."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_retention.core.bindings import OPERATIONS
from kafka_retention.core.erasure import ERASURE_FIELDS
from kafka_retention.core.erasure_states import Phase
from kafka_retention.core.policy_spec import POLICY_FIELDS
from kafka_retention.core.purge import PURGE_FIELDS

REPO = Path(__file__).resolve().parents[2]
CRDS = sorted((REPO / "crds").glob("*.kafka-retention.io.yaml"))


def _fields(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}.{name}", sub
        yield from _fields(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _fields(schema["items"], f"{path}[]")


def test_generated_crds_match_their_sources() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "hack" / "crdgen.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_both_kinds_have_a_crd() -> None:
    kinds = {yaml.safe_load(p.read_text())["spec"]["names"]["kind"] for p in CRDS}
    assert kinds == {"RecordPurge", "RetentionPolicy", "KafkaClusterBinding", "RecordErasure"}


@pytest.mark.parametrize("crd_file", CRDS, ids=lambda p: p.name)
def test_every_field_has_an_explain_text(crd_file: Path) -> None:
    crd = yaml.safe_load(crd_file.read_text())
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        undocumented = [
            path
            for path, sub in _fields(schema, "")
            if path != ".metadata" and not sub.get("description")
        ]
        assert undocumented == []


@pytest.mark.parametrize("crd_file", CRDS, ids=lambda p: p.name)
def test_crd_has_status_subresource_category_and_age_column(crd_file: Path) -> None:
    crd = yaml.safe_load(crd_file.read_text())
    assert "kafka-retention" in crd["spec"]["names"]["categories"]
    for version in crd["spec"]["versions"]:
        # A binding is the administrator's word; the operator writes nothing back to it.
        if crd["spec"]["names"]["kind"] != "KafkaClusterBinding":
            assert version["subresources"] == {"status": {}}
        assert version["additionalPrinterColumns"][-1]["name"] == "Age"


@pytest.mark.parametrize("crd_file", CRDS, ids=lambda p: p.name)
def test_crd_schema_has_no_unresolved_refs(crd_file: Path) -> None:
    assert "$ref" not in crd_file.read_text()


def _shape(schema: dict[str, Any]) -> Any:
    """The field tree of a schema, in the parsers' Shape form."""
    if schema.get("type") == "array":
        return _shape(schema.get("items") or {})
    if schema.get("type") == "object" and "properties" in schema:
        return {k: _shape(v) for k, v in schema["properties"].items()}
    return None  # a scalar, or a map of any keys


@pytest.mark.parametrize(
    ("crd_name", "fields"),
    [
        ("recordpurges.kafka-retention.io.yaml", PURGE_FIELDS),
        ("retentionpolicies.kafka-retention.io.yaml", POLICY_FIELDS),
        ("recorderasures.kafka-retention.io.yaml", ERASURE_FIELDS),
    ],
)
def test_the_parsers_know_exactly_the_fields_the_crd_defines(
    crd_name: str, fields: dict[str, Any]
) -> None:
    """A field added to the CRD but not to the parser would be refused as unknown; one
    left in the parser after leaving the CRD would be accepted from the CLI only."""
    crd = yaml.safe_load((REPO / "crds" / crd_name).read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert _shape(spec) == fields


@pytest.mark.parametrize("crd_file", CRDS, ids=lambda p: p.name)
def test_printer_columns_hold_only_the_fields_the_api_server_knows(crd_file: Path) -> None:
    # A comma in an unquoted flow-style description splits it into a stray key, which
    # YAML accepts and the API server refuses when the CRD is applied.
    known = {"name", "type", "jsonPath", "description", "priority", "format"}
    crd = yaml.safe_load(crd_file.read_text())
    for version in crd["spec"]["versions"]:
        for column in version.get("additionalPrinterColumns", []):
            assert set(column) <= known, column


def _erasure_schema() -> dict[str, Any]:
    crd = yaml.safe_load((REPO / "crds" / "recorderasures.kafka-retention.io.yaml").read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_the_erasure_phases_are_the_ones_the_operator_writes() -> None:
    phase = _erasure_schema()["properties"]["status"]["properties"]["phase"]
    assert phase["enum"] == [p.value for p in Phase]


def test_an_erasure_digest_has_no_pattern_the_api_server_would_quote() -> None:
    """A pattern's refusal quotes the value, which may be a key pasted by mistake: the
    operator refuses a bad digest instead, naming the field and not the value."""
    keys = _erasure_schema()["properties"]["spec"]["properties"]["keys"]
    assert "pattern" not in keys["items"]["properties"]["sha256"]
    assert keys["maxItems"] == 10_000


def test_the_erasure_columns_show_phase_topics_remaining_and_deadline() -> None:
    crd = yaml.safe_load((REPO / "crds" / "recorderasures.kafka-retention.io.yaml").read_text())
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in columns] == ["Phase", "Topics", "Remaining", "Deadline", "Age"]
    assert columns[2]["jsonPath"] == ".status.summary.matchesRemaining"


def test_the_binding_crd_offers_exactly_the_operations_the_parser_knows() -> None:
    crd = yaml.safe_load(
        (REPO / "crds" / "kafkaclusterbindings.kafka-retention.io.yaml").read_text()
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    operations = schema["properties"]["spec"]["properties"]["tenants"]["items"]["properties"][
        "operations"
    ]
    assert operations["items"]["enum"] == list(OPERATIONS)
    assert operations["maxItems"] == len(OPERATIONS)
