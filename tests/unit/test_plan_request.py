"""A plan request crosses to a Spark pod as JSON: every field of every rule, selector and
scan setting must arrive as the operator sent it, with no codec edit for a new field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_retention.core.plan_request import Connection, PlanRequest, Scans
from kafka_retention.core.typed_json import decode
from tests.helpers.non_default import non_default


def _paths(raw: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every object key of `raw` (as json.loads gives it), as a path from the top."""
    found: list[tuple[Any, ...]] = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            found.append((*prefix, key))
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(raw, list):
        for i, value in enumerate(raw):
            found.extend(_paths(value, (*prefix, i)))
    return found


def test_every_field_of_a_request_survives_the_round_trip() -> None:
    request = non_default(PlanRequest)
    assert request.policies  # the rules and selector fields are in it
    assert PlanRequest.from_json(request.to_json()) == request


def test_the_round_trip_gives_tuples_back_where_the_fields_hold_tuples() -> None:
    back = PlanRequest.from_json(non_default(PlanRequest).to_json())
    policy = back.policies[0]
    assert isinstance(back.policies, tuple)
    assert isinstance(policy.rules.consumed_groups, tuple)
    assert isinstance(policy.topics.names, tuple)
    # Hashable again, as the planner's lru_cache on rule groups needs.
    assert policy.rules.groups()


def test_a_field_missing_from_the_json_would_be_caught() -> None:
    """Each field's test value differs from its default: a codec that lost any one field
    would fail the round trip above (or refuse the request, for a field with no default)."""
    request = non_default(PlanRequest)
    paths = _paths(json.loads(request.to_json()))
    assert ("policies", 0, "rules", "notify_groups") in paths
    assert ("policies", 0, "topics", "protect") in paths
    for path in paths:
        dropped = json.loads(request.to_json())
        holder = dropped
        for key in path[:-1]:
            holder = holder[key]
        del holder[path[-1]]
        try:
            back = PlanRequest.from_json(json.dumps(dropped))
        except ValueError:  # a required field: the decoder refuses the request, naming it
            continue
        assert back != request, path


def test_a_request_from_before_a_field_existed_takes_its_default() -> None:
    raw = json.loads(PlanRequest(Connection("kafka:9092"), (), 5).to_json())
    del raw["scans"]["time_limit_s"]
    assert PlanRequest.from_json(json.dumps(raw)).scans == Scans()


def test_a_field_the_job_does_not_know_is_refused_not_dropped() -> None:
    raw = json.loads(non_default(PlanRequest).to_json())
    raw["policies"][0]["rules"]["keep_forever"] = True
    with pytest.raises(ValueError, match="keep_forever"):
        PlanRequest.from_json(json.dumps(raw))


def test_a_value_of_the_wrong_type_is_refused() -> None:
    raw = json.loads(PlanRequest(Connection("kafka:9092"), (), 5).to_json())
    raw["now_ms"] = "soon"
    with pytest.raises(ValueError, match="soon"):
        PlanRequest.from_json(json.dumps(raw))


def test_a_whole_number_of_seconds_reads_as_a_float_limit() -> None:
    assert decode(Scans, {"time_limit_s": 60}).time_limit_s == pytest.approx(60.0)
    assert isinstance(decode(Scans, {"time_limit_s": 60}).time_limit_s, float)
