"""The API server (schema and CEL) and the operator's parsers judge specs the same way.

Specs are validated twice on purpose: at apply time by the CRD, so `kubectl apply` and
GitOps tools refuse a bad spec before the operator sees it; and by the operator's parser,
for objects stored before a schema change and for specs the CLI builds. This corpus keeps
the two in step: each spec is sent to the real API server (server-side dry run) and given
to the parser, and their verdicts must agree, except where the parser is stricter on
purpose (it can compile the regex and compare durations; the schema cannot)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from devstack.stack import Stack
from kafka_retention.core.bindings import parse_binding
from kafka_retention.core.erasure import parse_erasure_spec
from kafka_retention.core.policy_spec import parse_policy_spec
from kafka_retention.core.purge import parse_spec
from kafka_retention.core.specs import SpecError
from tests.helpers.examples import EXAMPLES, example_files, example_manifest

CLUSTER = {"bootstrapServers": "127.0.0.1:39091"}
LOCAL_BROKERS = {**CLUSTER, "brokers": {"access": "local"}}

POLICIES: list[tuple[str, dict[str, Any], bool]] = [
    ("consumed", {"topics": {"names": ["t"]}, "deleteConsumed": {"groups": ["g"]}}, True),
    ("pattern", {"topics": {"pattern": "^app-.*$"}, "maxRetention": "7d"}, True),
    ("before", {"topics": {"names": ["t"]}, "deleteBefore": "2026-11-01T00:00:00Z"}, True),
    (
        "floor",
        {"topics": {"names": ["t"]}, "deleteConsumed": {"groups": ["g"], "minRetention": "1h"}},
        True,
    ),
    ("no-rule", {"topics": {"names": ["t"]}}, False),
    ("no-topics", {"topics": {}, "maxRetention": "1d"}, False),
    ("no-groups", {"topics": {"names": ["t"]}, "deleteConsumed": {"groups": []}}, False),
    ("bad-duration", {"topics": {"names": ["t"]}, "maxRetention": "soon"}, False),
    ("bad-time", {"topics": {"names": ["t"]}, "deleteBefore": "yesterday"}, False),
    # A negative timestamp is "latest" to ListOffsets: refused by CEL and the parser.
    ("before-epoch", {"topics": {"names": ["t"]}, "deleteBefore": "1969-12-31T23:59:59Z"}, False),
    ("at-epoch", {"topics": {"names": ["t"]}, "deleteBefore": "1970-01-01T00:00:00Z"}, True),
    ("bad-topic", {"topics": {"names": ["no spaces"]}, "maxRetention": "1d"}, False),
    ("notify-only", {"topics": {"names": ["t"]}, "notify": {"groups": ["g"]}}, True),
    (
        "orphans-only",
        {"cluster": LOCAL_BROKERS, "orphanPartitions": {"enabled": True, "removalDelay": "2d"}},
        True,
    ),
    (
        "orphans-exec",
        {
            "cluster": {**CLUSTER, "brokers": {"podSelector": {"matchLabels": {"app": "kafka"}}}},
            "orphanPartitions": {"enabled": True},
        },
        True,
    ),
    (
        "orphans-exec-without-selector",
        {"cluster": {**CLUSTER, "brokers": {}}, "orphanPartitions": {"enabled": True}},
        False,
    ),
    (
        "orphans-without-brokers",
        {"topics": {"names": ["t"]}, "orphanPartitions": {"enabled": True}},
        False,
    ),
    (
        "orphans-disabled-alone",
        {"topics": {"names": ["t"]}, "orphanPartitions": {"enabled": False}},
        False,
    ),
    (
        "no-topics-beside-a-rule",
        {
            "cluster": LOCAL_BROKERS,
            "orphanPartitions": {"enabled": True},
            "maxRetention": "1d",
        },
        False,
    ),
    (
        "orphans-bad-delay",
        {"cluster": LOCAL_BROKERS, "orphanPartitions": {"enabled": True, "removalDelay": "soon"}},
        False,
    ),
    ("notify-no-groups", {"topics": {"names": ["t"]}, "notify": {"groups": []}}, False),
    (
        "tombstone-inventory",
        {"topics": {"names": ["t"]}, "tombstones": {"groups": ["g"], "inventory": True}},
        True,
    ),
    (
        "raise-without-max",
        {
            "topics": {"names": ["t"]},
            "tombstones": {"groups": ["g"], "raiseDeleteRetention": {"enabled": True}},
        },
        False,
    ),
    (
        "warn-above-100",
        {"topics": {"names": ["t"]}, "tombstones": {"groups": ["g"], "warnAtPercent": 101}},
        False,
    ),
    *(
        (
            f"interval-{value.lower()}",
            {"topics": {"names": ["t"]}, "maxRetention": "1d", "interval": value},
            ok,
        )
        for value, ok in (
            ("1s", False),
            ("9s999ms", False),
            ("5000ms", False),
            ("10s", True),
            ("10000ms", True),
            ("1m", True),
            ("1h30m", True),
            ("7d", True),
        )
    ),
]
# Stricter in the parser by design, with the field it names.
PARSER_ONLY: dict[str, tuple[dict[str, Any], str]] = {
    "regex": (
        {"topics": {"pattern": "app-(unclosed"}, "maxRetention": "1d"},
        "spec.topics.pattern",
    ),
    "floor-above-cap": (
        {
            "topics": {"names": ["t"]},
            "deleteConsumed": {"groups": ["g"], "minRetention": "2d"},
            "maxRetention": "1d",
        },
        "spec.deleteConsumed.minRetention",
    ),
}

PURGES: list[tuple[str, dict[str, Any], bool]] = [
    ("offsets", {"partitions": [{"topic": "t", "partition": 0, "offset": -1}]}, True),
    ("time", {"topics": [{"name": "t", "before": {"timestamp": "2026-11-20T00:00:00Z"}}]}, True),
    ("groups", {"topics": [{"name": "t", "before": {"committedBy": ["a"]}}]}, True),
    ("empty", {}, False),
    ("below-minus-one", {"partitions": [{"topic": "t", "partition": 0, "offset": -2}]}, False),
    (
        "internal",
        {"partitions": [{"topic": "__consumer_offsets", "partition": 0, "offset": 1}]},
        False,
    ),
    (
        "internal-allowed",
        {
            "allowInternalTopics": True,
            "partitions": [{"topic": "__consumer_offsets", "partition": 0, "offset": 1}],
        },
        True,
    ),
    (
        "two-forms",
        {
            "topics": [
                {
                    "name": "t",
                    "before": {"timestamp": "2026-11-20T00:00:00Z", "highWatermark": True},
                }
            ]
        },
        False,
    ),
    (
        "duplicate",
        {
            "partitions": [
                {"topic": "t", "partition": 0, "offset": 1},
                {"topic": "t", "partition": 0, "offset": 2},
            ]
        },
        False,
    ),
]


# Invalid specs the API server takes on purpose, which the parser refuses naming the
# field before anything is contacted: a RecordPurge's spec.partitions is an atomic list
# (no per-entry field ownership, so 10,000 entries fit etcd), and the API server checks
# no duplicates in one.
OPERATOR_REFUSES = {("RecordPurge", "duplicate")}


def server_accepts(
    stack: Stack, namespace: str, kind: str, name: str, spec: dict[str, Any]
) -> bool:
    body = {
        "apiVersion": "kafka-retention.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cluster": CLUSTER, **spec},
    }
    done = stack.kubectl(
        "apply", "--dry-run=server", "-f", "-", stdin=json.dumps(body), check=False
    )
    return done.returncode == 0


def parser_accepts(parse: Any, spec: dict[str, Any]) -> bool:
    try:
        parse({"cluster": CLUSTER, **spec})
    except SpecError:
        return False
    return True


@pytest.mark.stack
def test_api_server_and_parsers_agree_on_the_corpus(stack: Stack, namespace: str) -> None:
    verdicts = []
    for kind, parse, corpus in (
        ("RetentionPolicy", parse_policy_spec, POLICIES),
        ("RecordPurge", parse_spec, PURGES),
    ):
        for name, spec, valid in corpus:
            verdicts.append(
                (
                    kind,
                    name,
                    valid,
                    server_accepts(stack, namespace, kind, name, spec),
                    parser_accepts(parse, spec),
                )
            )
    wrong = [
        v for v in verdicts if v[2] != v[4] or v[3] != (v[2] or (v[0], v[1]) in OPERATOR_REFUSES)
    ]
    assert wrong == [], "(kind, spec, expected, API server, parser): " + repr(wrong)


@pytest.mark.stack
def test_what_only_the_parser_refuses_is_named_in_its_error(stack: Stack, namespace: str) -> None:
    for name, (spec, field) in PARSER_ONLY.items():
        assert server_accepts(stack, namespace, "RetentionPolicy", name, spec), name
        with pytest.raises(SpecError) as caught:
            parse_policy_spec({"cluster": CLUSTER, **spec})
        assert caught.value.field == field, name


@pytest.mark.stack
@pytest.mark.parametrize("example", [p.relative_to(EXAMPLES).as_posix() for p in example_files()])
def test_every_shipped_example_is_accepted_by_the_api_server_and_the_parser(
    stack: Stack, namespace: str, example: str
) -> None:
    bodies = [b for b in yaml.safe_load_all((EXAMPLES / example).read_text()) if b]
    manifest = example_manifest(EXAMPLES / example, namespace)
    done = stack.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", stdin=manifest, check=False
    )
    assert done.returncode == 0, done.stderr
    parsers: dict[str, Callable[[Any], object]] = {
        "RetentionPolicy": parse_policy_spec,
        "RecordPurge": parse_spec,
        "RecordErasure": parse_erasure_spec,
        "KafkaClusterBinding": lambda spec: parse_binding("example", spec),
    }
    for body in bodies:
        parsers[body["kind"]](body["spec"])
