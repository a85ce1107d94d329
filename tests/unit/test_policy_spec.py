"""RetentionPolicy specs: what is refused (naming the field) and which topics match."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_retention.core.policy_spec import TopicSelector, parse_policy_spec
from kafka_retention.core.specs import SpecError

BASE: dict[str, Any] = {
    "cluster": {"bootstrapServers": "k:9092"},
    "topics": {"names": ["a"]},
    "deleteConsumed": {"groups": ["g"]},
}


def with_(**fields: Any) -> dict[str, Any]:
    return {**BASE, **fields}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (with_(topics={}), "spec.topics"),
        (with_(topics={"pattern": "(unclosed"}), "spec.topics.pattern"),
        (with_(topics={"names": ["bad name"]}), "spec.topics.names[0]"),
        (with_(deleteConsumed={"groups": []}), "spec.deleteConsumed.groups"),
        (
            with_(deleteConsumed={"groups": ["g"], "minRetention": "soon"}),
            "spec.deleteConsumed.minRetention",
        ),
        (with_(deleteBefore="yesterday"), "spec.deleteBefore"),
        (with_(maxRetention="0s"), "spec.maxRetention"),
        (with_(interval="1s"), "spec.interval"),
        (with_(notify={"groups": []}), "spec.notify.groups"),
        (
            with_(deleteConsumed={"groups": ["g"], "minRetention": "2d"}, maxRetention="1d"),
            "spec.deleteConsumed.minRetention",
        ),
        ({"cluster": {"bootstrapServers": "k:1"}, "topics": {"names": ["a"]}}, "spec"),
    ],
)
def test_invalid_policy_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_policy_spec(spec)
    assert err.value.field == field


def test_rules_and_interval_are_parsed() -> None:
    parsed = parse_policy_spec(
        with_(
            interval="30s",
            maxRetention="7d",
            deleteBefore="2026-11-01T00:00:00Z",
            deleteConsumed={"groups": ["b", "a"], "minRetention": "15m"},
        )
    )
    assert parsed.interval_ms == 30_000
    assert parsed.rules.consumed_groups == ("a", "b")
    assert parsed.rules.min_retention_ms == 900_000
    assert parsed.rules.max_retention_ms == 7 * 86_400_000
    assert parsed.rules.delete_before_ms == 1_793_491_200_000  # 2026-11-01T00:00:00Z


def test_selector_matches_whole_names_excludes_and_never_internal_topics() -> None:
    selector = TopicSelector(
        names=("__consumer_offsets", "named"),
        pattern=r"app-.*-repartition",
        exclude=("app-x-repartition",),
    )
    topics = [
        "app-a-repartition",
        "app-x-repartition",
        "app-a-repartition-old",
        "named",
        "__app-b-repartition",
        "other",
    ]
    assert selector.select(topics) == ["app-a-repartition", "named"]


def test_a_backtracking_pattern_matches_long_topic_names_without_stalling() -> None:
    """`(a+)+$` against 64 a's and a `!`: Python's `re` would try about 2**64 ways to
    split the a's before saying no, so this test would never end with it (pytest's
    timeout fails it). RE2 answers in time linear in the name."""
    selector = TopicSelector(pattern=r"(a+)+$")
    hostile = ["a" * 64 + "!", "a" * 200 + "!"]
    assert selector.select([*hostile, "aaaa"]) == ["aaaa"]


def test_a_short_pattern_that_compiles_to_a_huge_program_is_refused_at_parse_time() -> None:
    """720 characters, within the CRD's 1,024, yet 320,000 RE2 instructions (about 5 MiB,
    within RE2's default limit, and kept by the pattern cache) before patterns were
    bounded."""
    hostile = "(?:(?:.{100}){10})" * 40
    with pytest.raises(SpecError) as err:
        parse_policy_spec(with_(topics={"pattern": hostile}))
    assert err.value.field == "spec.topics.pattern"
    message = str(err.value)
    assert "RE2" in message
    assert "20,000" in message
    assert "spec.topics.names" in message
    assert len(message) < 600  # the pattern is cut in the message, not quoted whole
    with pytest.raises(SpecError, match="longer than 1024 characters"):
        parse_policy_spec(with_(topics={"pattern": "a" * 1025}))
    # What topic patterns need stays well within the bound.
    for fine in (".{249}", "[^.]{1,249}", "(?i)app-[a-z0-9]+-(orders|payments)-v[0-9]+"):
        assert parse_policy_spec(with_(topics={"pattern": fine})).topics.pattern == fine


def test_a_notify_only_policy_watches_its_groups_and_plans_no_cut() -> None:
    spec = parse_policy_spec(
        {"cluster": BASE["cluster"], "topics": BASE["topics"], "notify": {"groups": ["b", "a"]}}
    )
    assert spec.rules.notify_groups == ("a", "b")
    assert spec.rules.groups() == ("a", "b")
    assert not spec.rules.deletes()
    # Watched groups are read by the plan but never hold a cut back.
    assert spec.rules.consumed_groups == ()
