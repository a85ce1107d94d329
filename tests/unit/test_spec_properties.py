"""Properties of the spec parsers and the planning core, tried on generated input.

Parsers: whatever a spec holds, the answer is a parsed spec or a SpecError naming a field
of it; any other exception is a crash (Kopf retries it forever, and a RetentionPolicy
batch fails with it for every policy in the batch).

Planning: the safety rules, as the pure core decides them. A cut never goes
past the high watermark, never past the committed offset of a group that guards it (a
group without one guards the whole partition), never deletes below the log start,
minRetention holds it back, notify groups never do, overlapping policies take the lowest
cut, dry runs delete nothing, internal topics are only touched when a field says so, and
compact-only topics are never planned for DeleteRecords.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_retention.core import topics as topic_rules
from kafka_retention.core.cluster_features import ClusterFeatures
from kafka_retention.core.facts import GroupRead, PartitionFacts, TopicPartition
from kafka_retention.core.failures import KafkaFailure, OffsetKind
from kafka_retention.core.overlap import Peer, PeerIndex, conservative_cut
from kafka_retention.core.policy import plan_partition
from kafka_retention.core.policy_spec import PolicySpec, parse_policy_spec
from kafka_retention.core.purge import (
    OFFSET_OUT_OF_RANGE,
    PartitionPlan,
    PlanInput,
    PurgeRequest,
    parse_spec,
    plan_purge,
    recheck,
)
from kafka_retention.core.purge_entry import planned
from kafka_retention.core.purge_states import State
from kafka_retention.core.specs import SpecError
from kafka_retention.services.policy.apply import _delete
from kafka_retention.services.purge.execute import estimate

REPO = Path(__file__).resolve().parents[2]
BOOTSTRAP = "127.0.0.1:39091"
NOW_MS = 1_800_000_000_000
TOPICS = ("orders", "clicks", "audit-log")
GROUPS = ("enricher", "auditor", "loader")
TIMES = ("2026-11-20T00:00:00Z", "2027-01-01T12:30:00+02:00", "2026-06-01T00:00:00.250Z")

Parser = Callable[[Mapping[str, Any]], object]
PARSERS: dict[str, Parser] = {"RecordPurge": parse_spec, "RetentionPolicy": parse_policy_spec}

# Enough examples to meet the rare shapes, few enough to keep both files near 20 s.
PROPERTY = settings(max_examples=100, deadline=None)
# Any JSON at all: more examples, since a crash hides in rare shapes (these two found
# the parsers' type crashes when they were written).
ANY_JSON = settings(max_examples=150, deadline=None)


# --- input strategies ----------------------------------------------------------------------

# Strings that lead the parsers past their first checks, beside random ones.
STRINGS = st.text(max_size=12) | st.sampled_from(
    [
        BOOTSTRAP,
        "",
        " ",
        *TOPICS,
        *GROUPS,
        "__consumer_offsets",
        "a" * 249,
        "a" * 250,
        "..",
        "orders\n",
        "5m",
        "10s",
        "0s",
        "9s999ms",
        "1h30m",
        "99999999d",
        "-5m",
        "7 d",
        *TIMES,
        "2026-11-20T00:00:00",
        "10000-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999Z",
        "^app-.*-repartition$",
        "(unclosed",
        "*",
        "exec",
        "local",
        "ssh",
        "true",
        "false",
    ]
)
INTEGERS = st.integers(-(2**64), 2**64) | st.sampled_from([-2, -1, 0, 1, 100, 2**31, 2**63])
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | INTEGERS
    | st.floats(allow_nan=False, allow_infinity=False)
    | STRINGS
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
    max_leaves=12,
)


def _spec_schema(crd_file: str) -> dict[str, Any]:
    crd = yaml.safe_load((REPO / "crds" / crd_file).read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return dict(schema["properties"]["spec"])


# Fields whose absence the parsers refuse first: always generating them takes the parsers
# further (the mutation properties below drop them too).
USUALLY_PRESENT = {"RecordPurge": ("partitions", "topics"), "RetentionPolicy": ("topics",)}
SCHEMAS = {
    "RecordPurge": _spec_schema("recordpurges.kafka-retention.io.yaml"),
    "RetentionPolicy": _spec_schema("retentionpolicies.kafka-retention.io.yaml"),
}


@st.composite
def _objects(
    draw: st.DrawFn,
    required: Mapping[str, st.SearchStrategy[Any]],
    optional: Mapping[str, st.SearchStrategy[Any]],
) -> dict[str, Any]:
    """Objects with every required field and each optional one at even odds (Hypothesis's
    fixed_dictionaries mostly leaves optional fields out, so parsers stop early)."""
    out = {k: draw(v) for k, v in required.items()}
    for k, v in optional.items():
        if draw(st.booleans()):
            out[k] = draw(v)
    return out


def typed_as(schema: Mapping[str, Any], present: Iterable[str] = ()) -> st.SearchStrategy[Any]:
    """Values of the JSON types the CRD schema declares (its patterns, bounds and CEL rules
    left out): what the API server's structural check lets through to the operator.
    `present` names top-level fields always generated, beside the required ones."""
    kind = schema.get("type")
    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        if props:
            required = set(schema.get("required", ())) | set(present)
            return _objects(
                {k: typed_as(v) for k, v in props.items() if k in required},
                {k: typed_as(v) for k, v in props.items() if k not in required},
            )
        extra = schema.get("additionalProperties")
        values = typed_as(extra) if isinstance(extra, Mapping) else JSON
        return st.dictionaries(STRINGS, values, max_size=3)
    if kind == "array":
        return st.lists(typed_as(schema["items"]), max_size=3)
    if kind == "string":
        # Often what the schema's pattern, enum or format allows, so the parsers get past
        # the first field; as often anything at all.
        if "enum" in schema:
            return st.sampled_from(schema["enum"]) | STRINGS
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True) | STRINGS
        if schema.get("format") == "date-time":
            return st.sampled_from(TIMES) | STRINGS
        return STRINGS
    if kind == "integer":
        return INTEGERS
    if kind == "boolean":
        return st.booleans()
    raise AssertionError(f"no strategy for schema type {kind!r}")


def _purge(**fields: Any) -> dict[str, Any]:
    return {"cluster": {"bootstrapServers": BOOTSTRAP}, **fields}


def _policy(**fields: Any) -> dict[str, Any]:
    return {"cluster": {"bootstrapServers": BOOTSTRAP}, "topics": {"names": ["orders"]}, **fields}


# Valid specs, each using different fields, for the mutation properties.
VALID: dict[str, list[dict[str, Any]]] = {
    "RecordPurge": [
        _purge(
            partitions=[
                {"topic": "orders", "partition": 0, "offset": 1200},
                {"topic": "orders", "partition": 1, "offset": -1},
            ],
            protectGroups=["auditor"],
        ),
        _purge(
            topics=[
                {"name": "clicks", "before": {"timestamp": "2026-11-20T00:00:00Z"}},
                {"name": "enriched", "before": {"committedBy": ["enricher", "auditor"]}},
                {"name": "scratch", "before": {"highWatermark": True}},
            ],
            dryRun=True,
        ),
        _purge(
            partitions=[{"topic": "__consumer_offsets", "partition": 3, "offset": 5}],
            allowInternalTopics=True,
        ),
    ],
    "RetentionPolicy": [
        _policy(
            topics={"names": ["orders"], "pattern": "^app-.*-repartition$", "exclude": ["x"]},
            interval="30s",
            deleteConsumed={"groups": ["enricher", "auditor"], "minRetention": "15m"},
            maxRetention="7d",
            notify={"groups": ["auditor"], "atRiskWithin": "2h"},
        ),
        _policy(
            deleteBefore="2026-11-01T00:00:00Z",
            tombstones={
                "groups": ["cache-loader"],
                "warnAtPercent": 50,
                "raiseDeleteRetention": {"enabled": True, "max": "7d"},
                "inventory": True,
            },
            dryRun=False,
        ),
        {
            "cluster": {
                "bootstrapServers": BOOTSTRAP,
                "brokers": {
                    "access": "exec",
                    "namespace": "kafka",
                    "podSelector": {"matchLabels": {"app": "kafka"}},
                    "container": "kafka",
                },
            },
            "orphanPartitions": {
                "enabled": True,
                "removalDelay": "24h",
                "minAge": "7d",
                "strayDirs": False,
                "dryRun": True,
            },
        },
    ],
}
SEEDS = [(kind, spec) for kind, specs in VALID.items() for spec in specs]
# Keys whose object is a map of free names (labels), where no key is "unknown".
FREE_MAPS = {"matchLabels"}

Where = tuple[str | int, ...]


def _paths(value: Any, prefix: Where = ()) -> list[Where]:
    """Every place in a JSON value (dict keys and list items), outermost first."""
    out: list[Where] = []
    if isinstance(value, dict):
        for key, sub in value.items():
            out += [(*prefix, key), *_paths(sub, (*prefix, key))]
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += [(*prefix, i), *_paths(sub, (*prefix, i))]
    return out


def _dict_paths(value: Any) -> list[Where]:
    """The root and every object in a JSON value that has named fields (not a free map)."""
    return [()] + [
        p
        for p in _paths(value)
        if isinstance(_at(value, p), dict) and not (p and p[-1] in FREE_MAPS)
    ]


def _at(value: Any, path: Where) -> Any:
    for step in path:
        value = value[step]
    return value


def _replaced(spec: dict[str, Any], path: Where, new: Any) -> dict[str, Any]:
    out = copy.deepcopy(spec)
    _at(out, path[:-1])[path[-1]] = new
    return out


def _dropped(spec: dict[str, Any], path: Where) -> dict[str, Any]:
    out = copy.deepcopy(spec)
    del _at(out, path[:-1])[path[-1]]
    return out


def _field_path(path: Where) -> str:
    """A place as SpecError.field spells it: spec.topics[0].before."""
    text = "spec"
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text


def _same_type(value: Any) -> st.SearchStrategy[Any]:
    """Any value of the JSON type `value` has: what a schema-valid edit could put there."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return INTEGERS
    if isinstance(value, str):
        return STRINGS
    if isinstance(value, list):
        return st.lists(_same_type(value[0]) if value else STRINGS, max_size=3)
    raise AssertionError(f"no same-type strategy for {value!r}")


def _scalar_paths(spec: dict[str, Any]) -> list[Where]:
    """Places holding a scalar or a list of scalars."""
    out = []
    for p in _paths(spec):
        v = _at(spec, p)
        if isinstance(v, (bool, int, str)) or (
            isinstance(v, list) and all(isinstance(x, (bool, int, str)) for x in v)
        ):
            out.append(p)
    return out


def parsed_or_refused(kind: str, spec: Mapping[str, Any]) -> object | SpecError:
    """The parse result, or the SpecError; any other exception propagates and fails."""
    try:
        return PARSERS[kind](spec)
    except SpecError as err:
        refused = err
    # A refusal names a place in the spec and says what is wrong with it.
    assert refused.field == "spec" or refused.field.startswith(("spec.", "spec[")), refused.field
    assert refused.message
    return refused


# --- spec parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "spec"), SEEDS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SEEDS)]
)
def test_mutation_seeds_are_valid(kind: str, spec: dict[str, Any]) -> None:
    # The mutation properties below start from these; a refused seed would test little.
    assert not isinstance(parsed_or_refused(kind, spec), SpecError)


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_any_spec_typed_as_the_crd_says_is_parsed_or_refused_by_field(kind: str) -> None:
    @PROPERTY
    @given(spec=typed_as(SCHEMAS[kind], present=USUALLY_PRESENT[kind]))
    def check(spec: dict[str, Any]) -> None:
        parsed_or_refused(kind, spec)

    check()


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_any_json_spec_is_parsed_or_refused_by_field(kind: str) -> None:
    keys = st.sampled_from(sorted(SCHEMAS[kind]["properties"])) | STRINGS

    @ANY_JSON
    @given(spec=st.dictionaries(keys, JSON, max_size=6))
    def check(spec: dict[str, Any]) -> None:
        parsed_or_refused(kind, spec)

    check()


@PROPERTY
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_a_valid_spec_missing_any_field_is_parsed_or_refused_by_field(
    seed: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, spec = seed
    path = data.draw(st.sampled_from(_paths(spec)))
    parsed_or_refused(kind, _dropped(spec, path))


@PROPERTY
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_a_valid_spec_with_any_value_edited_within_its_type_is_parsed_or_refused_by_field(
    seed: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, spec = seed
    path = data.draw(st.sampled_from(_scalar_paths(spec)))
    new = data.draw(_same_type(_at(spec, path)))
    parsed_or_refused(kind, _replaced(spec, path, new))


@ANY_JSON
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_a_valid_spec_with_any_value_replaced_by_any_json_is_parsed_or_refused_by_field(
    seed: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, spec = seed
    path = data.draw(st.sampled_from(_paths(spec)))
    parsed_or_refused(kind, _replaced(spec, path, data.draw(JSON)))


@PROPERTY
@given(seed=st.sampled_from(SEEDS), data=st.data(), suffix=st.text(max_size=8), value=JSON)
def test_an_unknown_field_anywhere_changes_nothing_or_is_refused_by_its_path(
    seed: tuple[str, dict[str, Any]], data: st.DataObject, suffix: str, value: Any
) -> None:
    kind, spec = seed
    where = data.draw(st.sampled_from(_dict_paths(spec)))
    key = f"xUnknown{suffix}"  # never one of the CRDs' field names
    mutated = copy.deepcopy(spec)
    _at(mutated, where)[key] = value
    result = parsed_or_refused(kind, mutated)
    if isinstance(result, SpecError):
        # Refusing unknown fields is fine, as long as the refusal points at the field.
        assert result.field == _field_path((*where, key))
    else:
        # Ignoring them is fine too, as long as they change nothing.
        assert result == parsed_or_refused(kind, spec)


# --- RecordPurge planning ------------------------------------------------------------------


@st.composite
def purge_specs(draw: st.DrawFn) -> dict[str, Any]:
    """Valid RecordPurge specs over TOPICS: explicit cuts in any order, whole-topic cuts of
    every kind, protected groups; the spec order is the user's, never sorted."""
    explicit_topics = draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=2))
    partitions = [
        {"topic": t, "partition": p, "offset": draw(st.integers(-1, 3_000))}
        for t in explicit_topics
        for p in draw(st.lists(st.integers(0, 3), unique=True, min_size=1, max_size=3))
    ]
    whole = []
    for t in TOPICS:
        if t in explicit_topics or not draw(st.booleans()):
            continue
        kind = draw(st.sampled_from(["timestamp", "committedBy", "committedBy", "highWatermark"]))
        before: dict[str, Any] = {kind: True}
        if kind == "timestamp":
            before[kind] = draw(st.sampled_from(TIMES))
        elif kind == "committedBy":
            before[kind] = draw(st.lists(st.sampled_from(GROUPS), min_size=1, unique=True))
        whole.append({"name": t, "before": before})
    if not partitions and not whole:
        whole = [{"name": "orders", "before": {"highWatermark": True}}]
    return _purge(
        partitions=draw(st.permutations(partitions)),
        topics=draw(st.permutations(whole)),
        protectGroups=draw(st.lists(st.sampled_from(GROUPS), unique=True, max_size=2)),
        dryRun=draw(st.booleans()),
    )


def guards(spec: Mapping[str, Any], topic: str) -> set[str]:
    """From the spec itself: the groups whose commits bound every cut on `topic`."""
    named = {
        g
        for t in spec.get("topics", [])
        if t["name"] == topic
        for g in t["before"].get("committedBy", [])
    }
    return set(spec.get("protectGroups", [])) | named


def commits(log_start: int, hw: int) -> st.SearchStrategy[int | None]:
    """A group's committed offset: none, anywhere from 0 to past the high watermark (after
    a truncation), and often right at the edges, where an off-by-one would show."""
    return (
        st.none()
        | st.integers(0, hw + 50)
        | st.integers(hw + 1, hw + 50)
        | st.integers(max(0, hw - 2), hw + 2)
        | st.integers(max(0, log_start - 2), log_start + 2)
    )


@st.composite
def partition_facts(
    draw: st.DrawFn, tp: TopicPartition, groups: Iterable[str], times: Iterable[int]
) -> PartitionFacts:
    """One partition as Kafka could report it: commits anywhere from before the log start
    to past the high watermark (after a truncation), or none; ListOffsets for a time
    answers an offset between log start and high watermark, or none."""
    log_start = draw(st.integers(0, 2_000))
    hw = draw(st.integers(log_start, log_start + 2_000))
    committed = {g: draw(commits(log_start, hw)) for g in sorted(groups)}
    for_times = {t: draw(st.none() | st.integers(log_start, hw)) for t in times}
    return PartitionFacts(tp, log_start, hw, committed, for_times)


@st.composite
def purge_cases(draw: st.DrawFn) -> tuple[dict[str, Any], PurgeRequest, PlanInput]:
    """A valid spec, its request, and facts for it, some partitions missing or failing."""
    spec = draw(purge_specs())
    request = parse_spec(spec)
    given_ = PlanInput()
    for topic in sorted(request.topic_names()):
        if draw(st.integers(0, 9)) == 0:
            given_.topic_errors[topic] = f"UNKNOWN_TOPIC_OR_PARTITION: no topic {topic}"
        else:
            given_.topic_partitions[topic] = draw(st.lists(st.integers(0, 7), unique=True))
    tps = [c.tp for c in request.partitions] + [
        TopicPartition(t.topic, p)
        for t in request.topics
        for p in given_.topic_partitions.get(t.topic, [])
    ]
    for tp in tps:
        if tp.topic in given_.topic_errors:
            continue  # as the service does: nothing is read of a topic that failed
        fate = draw(st.integers(0, 9))
        if fate == 0:
            given_.partition_errors[tp] = "NOT_LEADER_OR_FOLLOWER: gave up"
        elif fate != 1:  # 1: no facts at all, as for a partition that does not exist
            times = [
                t.timestamp_ms
                for t in request.topics
                if t.topic == tp.topic and t.timestamp_ms is not None
            ]
            given_.facts[tp] = draw(partition_facts(tp, guards(spec, tp.topic), times))
    return spec, request, given_


def _planned(plans: Sequence[PartitionPlan]) -> list[PartitionPlan]:
    return [p for p in plans if p.error is None]


@PROPERTY
@given(case=purge_cases())
def test_purge_never_cuts_past_the_high_watermark(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    _, request, given_ = case
    for plan in _planned(plan_purge(request, given_)):
        assert plan.target <= given_.facts[plan.tp].high_watermark


@PROPERTY
@given(case=purge_cases())
def test_purge_never_cuts_past_a_protected_or_committed_by_groups_commit(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    spec, request, given_ = case
    for plan in _planned(plan_purge(request, given_)):
        facts = given_.facts[plan.tp]
        for group in guards(spec, plan.tp.topic):
            commit = facts.committed[group]
            if commit is None:
                # A group that has read nothing here guards the whole partition.
                assert plan.records_to_delete == 0
            else:
                assert plan.target <= commit


@PROPERTY
@given(case=purge_cases())
def test_purge_deletes_exactly_the_records_between_log_start_and_cut(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    _, request, given_ = case
    for plan in _planned(plan_purge(request, given_)):
        facts = given_.facts[plan.tp]
        assert plan.log_start == facts.log_start
        if plan.target <= facts.log_start:
            # Nothing to delete is a no-op that says so, never an error.
            assert plan.records_to_delete == 0
            assert any("already at or past the cut" in n for n in plan.notes)
        else:
            assert plan.records_to_delete == plan.target - facts.log_start


@PROPERTY
@given(case=purge_cases())
def test_purge_partition_it_could_not_read_is_an_error_that_deletes_nothing(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    _, request, given_ = case
    for plan in plan_purge(request, given_):
        if plan.tp not in given_.facts:
            assert plan.error
            assert plan.records_to_delete == 0


@PROPERTY
@given(case=purge_cases())
def test_purge_offset_above_the_high_watermark_is_refused_not_cut(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    _, request, given_ = case
    asked = {c.tp: c.offset for c in request.partitions}
    for plan in plan_purge(request, given_):
        facts = given_.facts.get(plan.tp)
        if facts is not None and asked.get(plan.tp, -1) > facts.high_watermark:
            assert plan.error is not None
            assert plan.error.startswith(OFFSET_OUT_OF_RANGE)
            assert plan.records_to_delete == 0


@PROPERTY
@given(case=purge_cases())
def test_purge_plans_each_named_partition_once_in_the_order_given(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    spec, request, given_ = case
    expected = [TopicPartition(p["topic"], p["partition"]) for p in spec["partitions"]]
    for t in spec["topics"]:
        if t["name"] in given_.topic_errors:
            expected.append(TopicPartition(t["name"], -1))  # one entry names the topic error
        else:
            expected += [
                TopicPartition(t["name"], p) for p in sorted(given_.topic_partitions[t["name"]])
            ]
    assert [p.tp for p in plan_purge(request, given_)] == expected


@PROPERTY
@given(case=purge_cases())
def test_purge_timestamp_cut_keeps_every_record_at_or_after_the_time(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    _, request, given_ = case
    at = {t.topic: t.timestamp_ms for t in request.topics if t.timestamp_ms is not None}
    for plan in _planned(plan_purge(request, given_)):
        if plan.tp.topic in at:
            first_kept = given_.facts[plan.tp].offsets_for_times[at[plan.tp.topic]]
            # None: every record is older than the time, so the cut may reach the HW.
            if first_kept is not None:
                assert plan.target <= first_kept


@PROPERTY
@given(case=purge_cases(), data=st.data())
def test_recheck_only_ever_lowers_a_planned_cut_to_the_fresh_ceilings(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput], data: st.DataObject
) -> None:
    spec, request, given_ = case
    for plan in _planned(plan_purge(request, given_)):
        # Anything may have happened since planning: groups rewound, the high watermark
        # dropped (unclean election), the log start moved on.
        fresh = data.draw(partition_facts(plan.tp, guards(spec, plan.tp.topic), []))
        checked = recheck(request, plan, fresh)
        assert checked.target <= plan.target
        assert checked.target <= fresh.high_watermark
        for commit in fresh.committed.values():
            if commit is None:
                assert checked.records_to_delete == 0
            else:
                assert checked.target <= commit


class RefusingKafka:
    """A cluster for dry runs: deleting, or reading anything but record sizes, fails the
    test; record sizes are noted, so a test can check what the estimate asked for."""

    def __init__(self) -> None:
        self.sized: list[Mapping[TopicPartition, tuple[int, int]]] = []

    def offsets(
        self, tps: Iterable[TopicPartition], kind: OffsetKind
    ) -> Mapping[TopicPartition, int | KafkaFailure]:
        raise AssertionError("a dry run read offsets")

    def log_bounds(
        self, tps: Iterable[TopicPartition]
    ) -> tuple[
        Mapping[TopicPartition, int | KafkaFailure], Mapping[TopicPartition, int | KafkaFailure]
    ]:
        raise AssertionError("a dry run read offsets")

    def cluster_features(self) -> ClusterFeatures | None:
        return None  # what it runs is unknown: groups are read as before

    def group_positions(
        self, wanted: Mapping[str, Iterable[TopicPartition]]
    ) -> Mapping[str, GroupRead]:
        raise AssertionError("a dry run read group positions")

    def delete_records(
        self, cuts: Mapping[TopicPartition, int]
    ) -> Mapping[TopicPartition, int | KafkaFailure]:
        raise AssertionError(f"a dry run deleted records: {dict(cuts)}")

    def topic_partitions(self, topics: Iterable[str]) -> Mapping[str, list[int] | KafkaFailure]:
        raise AssertionError("a dry run estimate read topics")

    def topic_configs(
        self, topics: Iterable[str]
    ) -> Mapping[str, Mapping[str, str] | KafkaFailure]:
        raise AssertionError("a dry run estimate read topic configs")

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp_ms: int
    ) -> Mapping[TopicPartition, int | KafkaFailure]:
        raise AssertionError("a dry run estimate read offsets for a time")

    def average_record_bytes(
        self, ranges: Mapping[TopicPartition, tuple[int, int]]
    ) -> Mapping[TopicPartition, float]:
        self.sized.append(dict(ranges))
        return dict.fromkeys(ranges, 100.0)


@PROPERTY
@given(case=purge_cases())
def test_purge_dry_run_deletes_nothing_and_leaves_no_partition_planned(
    case: tuple[dict[str, Any], PurgeRequest, PlanInput],
) -> None:
    _, request, given_ = case
    plans = plan_purge(request, given_)
    entries = [planned(p) for p in plans]
    kafka = RefusingKafka()
    out = estimate(kafka, entries)
    assert [(e.topic, e.partition) for e in out] == [(p.tp.topic, p.tp.partition) for p in plans]
    for plan, before, after in zip(plans, entries, out, strict=True):
        if plan.error is None:
            assert after.state == State.DRY_RUN
            # The cut shown is the plan's, untouched: the dry run reports what would go.
            assert after.requested_offset == plan.target
            assert after.records_to_delete == plan.records_to_delete
        else:
            assert after == before
    # Sizes are sampled only where records would go, from the log start to the cut.
    sampled = {tp: r for ranges in kafka.sized for tp, r in ranges.items()}
    assert sampled == {
        p.tp: (p.log_start, p.target) for p in _planned(plans) if p.records_to_delete > 0
    }


# --- RetentionPolicy planning --------------------------------------------------------------

TP = TopicPartition("orders", 0)


def _duration(seconds: int) -> str:
    return f"{seconds}s"


def _rfc3339(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat()


@st.composite
def policy_specs(
    draw: st.DrawFn, rules: Sequence[str] = ("deleteConsumed", "deleteBefore", "maxRetention")
) -> dict[str, Any]:
    """Valid RetentionPolicy specs with some of `rules` (at least one) and maybe notify."""
    chosen = draw(st.lists(st.sampled_from(list(rules)), unique=True, min_size=1))
    spec = _policy(dryRun=draw(st.booleans()))
    max_s = draw(st.integers(1, 30 * 86_400))
    if "maxRetention" in chosen:
        spec["maxRetention"] = _duration(max_s)
    if "deleteConsumed" in chosen:
        consumed: dict[str, Any] = {
            "groups": draw(st.lists(st.sampled_from(GROUPS), min_size=1, unique=True))
        }
        if draw(st.booleans()):
            # minRetention never above maxRetention: the parser refuses that.
            consumed["minRetention"] = _duration(draw(st.integers(0, max_s)))
        spec["deleteConsumed"] = consumed
    if "deleteBefore" in chosen:
        spec["deleteBefore"] = _rfc3339(NOW_MS - draw(st.integers(-86_400_000, 10**10)))
    if "notify" in chosen or draw(st.booleans()):
        spec["notify"] = {
            "groups": draw(st.lists(st.sampled_from(GROUPS), min_size=1, unique=True))
        }
    return spec


@st.composite
def policy_facts(draw: st.DrawFn, groups: Iterable[str], times: Iterable[int]) -> PartitionFacts:
    """A partition as Kafka reports it for these groups and times: ListOffsets for a later
    time never answers an earlier offset, and once no record is that recent, none is later
    either."""
    log_start = draw(st.integers(0, 5_000))
    hw = draw(st.integers(log_start, log_start + 2_000))
    committed = {g: draw(commits(log_start, hw)) for g in sorted(set(groups))}
    ascending = sorted(set(times))
    found = sorted(
        draw(st.lists(st.integers(log_start, hw), min_size=len(ascending), max_size=len(ascending)))
    )
    none_from = draw(st.integers(0, len(ascending)))
    for_times: dict[int, int | None] = {
        t: (offset if i < none_from else None)
        for i, (t, offset) in enumerate(zip(ascending, found, strict=True))
    }
    return PartitionFacts(TP, log_start, hw, committed, for_times)


@st.composite
def policy_cases(
    draw: st.DrawFn, rules: Sequence[str] = ("deleteConsumed", "deleteBefore", "maxRetention")
) -> tuple[PolicySpec, PartitionFacts]:
    spec = parse_policy_spec(draw(policy_specs(rules)))
    return spec, draw(policy_facts(spec.rules.groups(), spec.rules.lookup_times(NOW_MS)))


@PROPERTY
@given(case=policy_cases())
def test_policy_cut_is_never_below_the_log_start_nor_above_the_high_watermark(
    case: tuple[PolicySpec, PartitionFacts],
) -> None:
    spec, facts = case
    cut = plan_partition(facts, spec.rules, NOW_MS)
    assert facts.log_start <= cut.target <= facts.high_watermark
    assert cut.records_to_delete == cut.target - facts.log_start


@PROPERTY
@given(case=policy_cases(rules=("notify",)))
def test_watch_only_policy_never_cuts(case: tuple[PolicySpec, PartitionFacts]) -> None:
    spec, facts = case
    assert not spec.rules.deletes()
    cut = plan_partition(facts, spec.rules, NOW_MS)
    assert cut.records_to_delete == 0


@PROPERTY
@given(case=policy_cases(rules=("deleteConsumed",)))
def test_delete_consumed_alone_never_deletes_a_record_a_named_group_has_not_read(
    case: tuple[PolicySpec, PartitionFacts],
) -> None:
    spec, facts = case
    cut = plan_partition(facts, spec.rules, NOW_MS)
    for group in spec.rules.consumed_groups:
        commit = facts.committed[group]
        if commit is None:
            assert cut.records_to_delete == 0  # no commit: the group guards everything
        else:
            assert cut.target <= max(commit, facts.log_start)
    consumed = set(spec.rules.consumed_groups)
    assert [i.unconsumed_to_delete for i in cut.groups if i.group in consumed] == [
        0 for _ in consumed
    ]


@PROPERTY
@given(case=policy_cases())
def test_min_retention_keeps_every_record_younger_than_it(
    case: tuple[PolicySpec, PartitionFacts],
) -> None:
    spec, facts = case
    min_ms = spec.rules.min_retention_ms
    cut = plan_partition(facts, spec.rules, NOW_MS)
    if min_ms is not None:
        first_young = facts.offsets_for_times[NOW_MS - min_ms]
        if first_young is not None:
            assert cut.target <= max(first_young, facts.log_start)


@PROPERTY
@given(case=policy_cases())
def test_notify_groups_never_hold_back_a_cut(case: tuple[PolicySpec, PartitionFacts]) -> None:
    spec, facts = case
    unwatched = replace(spec.rules, notify_groups=())
    assert (
        plan_partition(facts, spec.rules, NOW_MS).target
        == plan_partition(facts, unwatched, NOW_MS).target
    )


@PROPERTY
@given(case=policy_cases())
def test_policy_reports_every_unread_record_its_cut_removes(
    case: tuple[PolicySpec, PartitionFacts],
) -> None:
    spec, facts = case
    cut = plan_partition(facts, spec.rules, NOW_MS)
    assert [i.group for i in cut.groups] == sorted(spec.rules.groups())
    for impact in cut.groups:
        commit = facts.committed[impact.group]
        # Counted offset by offset: a record the cut removes that the group has not read
        # (no commit: it has read nothing).
        unread = sum(
            1 for offset in range(facts.log_start, cut.target) if commit is None or offset >= commit
        )
        assert impact.committed_offset == commit
        assert impact.unconsumed_to_delete == unread


@PROPERTY
@given(data=st.data(), count=st.integers(0, 3))
def test_overlapping_policies_apply_the_lowest_cut_of_all(data: st.DataObject, count: int) -> None:
    mine, *others = [parse_policy_spec(data.draw(policy_specs())) for _ in range(count + 1)]
    peers = {f"ns/peer-{i}": Peer(s.rules) for i, s in enumerate(others)}
    every = [mine.rules, *(p.rules for p in peers.values())]
    # One read of the partition carries the commits and times that every rule asks for.
    facts = data.draw(
        policy_facts(
            [g for r in every for g in r.groups()],
            [t for r in every for t in r.lookup_times(NOW_MS)],
        )
    )
    planned = data.draw(st.integers(facts.log_start, facts.high_watermark))
    decision = conservative_cut(planned, facts, mine.rules, peers, NOW_MS)
    theirs = {name: plan_partition(facts, p.rules, NOW_MS).target for name, p in peers.items()}
    mine_now = min(planned, plan_partition(facts, mine.rules, NOW_MS).target)
    assert decision.target == min([mine_now, *theirs.values()])
    # Only peers whose cut is below this policy's are named, and the last one named is
    # the one whose cut applies.
    assert all(theirs[name] < mine_now for name in decision.held_back_by)
    if decision.target < mine_now:
        assert theirs[decision.held_back_by[-1]] == decision.target
    else:
        assert decision.held_back_by == ()


@PROPERTY
@given(
    specs=st.lists(
        policy_specs(("deleteConsumed", "deleteBefore", "maxRetention", "notify")),
        min_size=1,
        max_size=4,
    )
)
def test_dry_run_and_watch_only_policies_never_hold_back_a_peer(
    specs: list[dict[str, Any]],
) -> None:
    parsed = {f"ns/p{i}": parse_policy_spec(s) for i, s in enumerate(specs)}
    holding = PeerIndex(parsed).on_topic("orders", BOOTSTRAP)
    assert set(holding) == {key for key, s in parsed.items() if not s.dry_run and s.rules.deletes()}


@PROPERTY
@given(
    cuts=st.dictionaries(
        st.builds(TopicPartition, st.sampled_from(TOPICS), st.integers(0, 3)),
        st.tuples(st.integers(0, 1_000), st.integers(0, 1_000)),
        max_size=8,
    )
)
def test_dry_run_policy_issues_no_delete_records(
    cuts: dict[TopicPartition, tuple[int, int]],
) -> None:
    moved, failures = _delete(RefusingKafka(), cuts, dry_run=True)
    # Every partition stays where it was: log start before == after.
    assert moved == {tp: (before, before) for tp, (before, _) in cuts.items()}
    assert failures == []


def test_refusing_kafka_fails_a_run_that_deletes() -> None:
    # The dry-run properties rest on this fake: it must notice a delete when there is one.
    with pytest.raises(AssertionError, match="deleted records"):
        _delete(RefusingKafka(), {TopicPartition("orders", 0): (0, 10)}, dry_run=False)


# --- internal and compact-only topics ------------------------------------------------------


@PROPERTY
@given(suffix=st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True), allow=st.booleans())
def test_internal_topics_are_purged_only_when_allowed_explicitly(suffix: str, allow: bool) -> None:
    topic = "__" + suffix
    spec = _purge(
        partitions=[{"topic": topic, "partition": 0, "offset": 1}], allowInternalTopics=allow
    )
    result = parsed_or_refused("RecordPurge", spec)
    if allow:
        assert isinstance(result, PurgeRequest)
        assert result.topic_names() == {topic}
    else:
        assert isinstance(result, SpecError)
        assert result.field == "spec.partitions[0].topic"


TOPIC_NAMES = st.from_regex(r"(__)?[a-z][a-z0-9._-]{0,12}", fullmatch=True)


@PROPERTY
@given(
    names=st.lists(TOPIC_NAMES, max_size=4),
    pattern=st.none() | st.sampled_from([".*", "__.*", "_.*", "o.*", ".*s", "[a-z_]+"]),
    exclude=st.lists(TOPIC_NAMES, max_size=3),
    existing=st.lists(TOPIC_NAMES, max_size=8),
)
def test_policy_never_selects_an_internal_or_excluded_topic(
    names: list[str], pattern: str | None, exclude: list[str], existing: list[str]
) -> None:
    topics: dict[str, Any] = {"names": names, "exclude": exclude}
    if pattern is not None:
        topics["pattern"] = pattern
    result = parsed_or_refused("RetentionPolicy", _policy(topics=topics, maxRetention="1d"))
    if isinstance(result, SpecError):
        assert result.field == "spec.topics"  # only when neither names nor a pattern
        assert not names
        assert pattern is None
        return
    assert isinstance(result, PolicySpec)
    chosen = result.topics.select(existing)
    assert [t for t in chosen if t.startswith("__") or t in exclude] == []
    # Every name listed (and not excluded or internal) is chosen, existing or not.
    assert {n for n in names if not n.startswith("__") and n not in exclude} <= set(chosen)


@PROPERTY
@given(
    configs=st.dictionaries(
        TOPIC_NAMES,
        st.fixed_dictionaries(
            {},
            optional={
                "cleanup.policy": st.lists(
                    st.sampled_from(["delete", "compact", " compact", "delete "]),
                    min_size=1,
                    max_size=2,
                ).map(",".join)
            },
        ),
        max_size=6,
    )
)
def test_compact_only_topic_is_never_planned_for_delete_records(
    configs: dict[str, dict[str, str]],
) -> None:
    classes = topic_rules.classify_topics(configs)
    for topic, config in configs.items():
        policies = {p.strip() for p in config.get("cleanup.policy", "delete").split(",")}
        if "delete" in policies:
            assert topic in classes.deletable
            assert topic not in classes.problems
        else:
            # Said in status before trying: the broker would answer POLICY_VIOLATION.
            assert topic not in classes.deletable
            assert classes.problems[topic].startswith(topic_rules.POLICY_VIOLATION)
