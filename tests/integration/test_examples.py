"""examples/ (its subdirectories too: open-tenancy/ holds what needs --tenancy=open): each
file is applied for real (strict field validation, not a dry run) to the real API server
in a namespace no test operator watches, is accepted by the CRD schema and CEL, reads back
through the operator's own parsers, and is deleted again. Every field of both specs, as
the CRDs define them, appears in some example: a feature added without one fails here.
tests/e2e/test_examples_accepted.py runs them through the operator as well."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack.stack import Stack
from kafka_retention.core.bindings import parse_binding
from kafka_retention.core.erasure import parse_erasure_spec
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.purge import parse_spec
from tests.helpers.examples import (
    EXAMPLES,
    as_list,
    crd_schema,
    example_files,
    in_namespace,
    ours,
    schema_paths,
    used,
)

GROUP = "kafka-retention.io"
# The parsers the handlers and the CLI run on a spec before anything else.
PARSERS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "RecordPurge": parse_spec,
    "RetentionPolicy": parse_policy_spec,
    "KafkaClusterBinding": lambda spec: parse_binding("example", spec),
    "RecordErasure": parse_erasure_spec,
}
FILES = {path.relative_to(EXAMPLES).as_posix(): path for path in example_files()}


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def spec_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = crd_schema(kind)["properties"]["spec"]
    return schema


def example_specs() -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """kind -> (file, spec) of every resource of the project's kinds in examples/."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {kind: [] for kind in PARSERS}
    for name, path in FILES.items():
        for doc in documents(path):
            if ours(doc):
                out[doc["kind"]].append((name, doc["spec"]))
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
    for name, path in FILES.items():
        assert path.read_text().startswith("#"), name


def test_open_tenancy_examples_and_only_they_say_so_on_their_first_line() -> None:
    for name, path in FILES.items():
        first = path.read_text().splitlines()[0]
        assert (first == "# tenancy: open") == name.startswith("open-tenancy/"), name


@pytest.mark.stack
@pytest.mark.parametrize("example", sorted(FILES))
def test_example_is_applied_accepted_parsed_and_deleted(
    stack: Stack, namespace: str, example: str
) -> None:
    docs = documents(FILES[example])
    assert any(ours(doc) for doc in docs), f"{example} holds no {GROUP} resource"
    # The file's namespaces (team-orders, analytics) are the test's own namespace here.
    moved = as_list(in_namespace(docs, namespace))
    # A real apply with kubectl's default strict field validation: an unknown or
    # duplicate field fails it, as a CRD schema or CEL rule refusing the spec does.
    done = stack.kubectl("apply", "-n", namespace, "-f", "-", stdin=moved, check=False)
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
        "delete", "-n", namespace, "-f", "-", "--wait", "--timeout=60s", stdin=moved, check=False
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
