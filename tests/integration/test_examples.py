"""examples/: each file is applied for real (strict field validation, not a dry run) to
the real API server in a namespace no test operator watches, is accepted by the CRD
schema and CEL, reads back through the operator's own parsers, and is deleted again.
Every field of both specs, as the CRDs define them, appears in some example: a feature
added without one fails here."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack.stack import Stack
from kafka_retention.core.bindings import parse_binding
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.purge import parse_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GROUP = "kafka-retention.io"
# The parsers the handlers and the CLI run on a spec before anything else.
PARSERS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "RecordPurge": parse_spec,
    "RetentionPolicy": parse_policy_spec,
    "KafkaClusterBinding": lambda spec: parse_binding("example", spec),
}
CRDS = {
    "RecordPurge": REPO / "crds" / "recordpurges.kafka-retention.io.yaml",
    "RetentionPolicy": REPO / "crds" / "retentionpolicies.kafka-retention.io.yaml",
    "KafkaClusterBinding": REPO / "crds" / "kafkaclusterbindings.kafka-retention.io.yaml",
}


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def ours(doc: Mapping[str, Any]) -> bool:
    return str(doc.get("apiVersion", "")).startswith(f"{GROUP}/")


def spec_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load(CRDS[kind].read_text())
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


def schema_paths(schema: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """Every field path the schema defines (`topics.before.timestamp`; a list's items share
    the list's path), with its schema. A map (additionalProperties) ends a path."""
    out: dict[str, Mapping[str, Any]] = {}
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        out[path] = sub
        inner = sub.get("items", sub) if sub.get("type") == "array" else sub
        out |= schema_paths(inner, f"{path}.")
    return out


def used(value: Any, prefix: str = "") -> dict[str, list[Any]]:
    """Every field path a spec sets, with the values set there."""
    out: dict[str, list[Any]] = {}
    if isinstance(value, list):
        for item in value:
            for path, values in used(item, prefix).items():
                out.setdefault(path, []).extend(values)
    elif isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}{key}"
            out.setdefault(path, []).extend(sub if isinstance(sub, list) else [sub])
            for inner, values in used(sub, f"{path}.").items():
                out.setdefault(inner, []).extend(values)
    return out


def example_specs() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """kind -> (file, spec) of every resource of the project's kinds in examples/."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {kind: [] for kind in PARSERS}
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in documents(path):
            if ours(doc):
                out[doc["kind"]].append((path.name, doc["spec"]))
    return out


def missing_features(kind: str, specs: list[dict[str, Any]]) -> list[str]:
    """Spec fields of the CRD that no spec sets, and sentinel values (an integer field's
    negative minimum, such as offset -1 for the high watermark) that none uses."""
    seen: dict[str, list[Any]] = {}
    for spec in specs:
        for path, values in used(spec).items():
            seen.setdefault(path, []).extend(values)
    missing = []
    for path, sub in schema_paths(spec_schema(kind)).items():
        if path not in seen:
            missing.append(path)
        elif sub.get("minimum", 0) < 0 and sub["minimum"] not in seen[path]:
            missing.append(f"{path}: {sub['minimum']}")
    return missing


def test_every_spec_field_and_sentinel_of_every_kind_has_an_example() -> None:
    specs = example_specs()
    for kind in PARSERS:
        assert missing_features(kind, [spec for _, spec in specs[kind]]) == [], kind


def test_the_coverage_check_names_what_no_example_shows() -> None:
    # The same check on fewer examples: it must name the features they leave out.
    purge = [{"cluster": {"bootstrapServers": "k:9092"}, "partitions": [{"offset": 5}]}]
    missing = missing_features("RecordPurge", purge)
    assert "cluster.clientConfigSecret" in missing
    assert "partitions.offset: -1" in missing
    assert "topics.before.highWatermark" in missing
    assert "partitions.offset" not in missing
    policy = [{"topics": {"names": ["t"]}, "deleteConsumed": {"groups": ["g"]}}]
    assert "deleteConsumed.minRetention" in missing_features("RetentionPolicy", policy)
    assert "orphanPartitions.strayDirs" in missing_features("RetentionPolicy", policy)


def test_every_example_opens_with_a_comment_saying_what_it_is_for() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        assert path.read_text().startswith("#"), path.name


@pytest.mark.stack
@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_example_is_applied_accepted_parsed_and_deleted(
    stack: Stack, namespace: str, example: str
) -> None:
    path = EXAMPLES / example
    docs = documents(path)
    assert any(ours(doc) for doc in docs), f"{example} holds no {GROUP} resource"
    # A real apply with kubectl's default strict field validation: an unknown or
    # duplicate field fails it, as a CRD schema or CEL rule refusing the spec does.
    done = stack.kubectl("apply", "-n", namespace, "-f", str(path), check=False)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    for doc in filter(ours, docs):
        kind, name = doc["kind"], doc["metadata"]["name"]
        stored = json.loads(stack.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout)
        # Nothing was pruned: every field the file sets is stored as written.
        assert _set(doc["spec"]) <= _set(stored["spec"]), kind
        # What the operator's handlers get (with the schema's defaults), and the file as
        # `kafka-retention plan -f` reads it: both parse.
        PARSERS[kind](stored["spec"])
        PARSERS[kind](doc["spec"])
    done = stack.kubectl(
        "delete", "-n", namespace, "-f", str(path), "--wait", "--timeout=60s", check=False
    )
    assert done.returncode == 0, done.stderr
    for doc in filter(ours, docs):
        gone = stack.kubectl(
            "get", doc["kind"], doc["metadata"]["name"], "-n", namespace, check=False
        )
        assert gone.returncode != 0, f"{doc['kind']}/{doc['metadata']['name']} still there"


def _set(spec: Any) -> set[tuple[str, str]]:
    """(path, value) of every leaf a spec sets, comparable across a round trip."""
    return {
        (path, json.dumps(value, sort_keys=True))
        for path, values in used(spec).items()
        for value in values
        if not isinstance(value, dict | list)
    }
