"""RecordErasure's spec parser: every refusal names its field, and no refusal, repr or
digest ever carries a key's own bytes or text."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from kafka_retention.core.erasure import (
    DEFAULT_DEADLINE_MS,
    ERASURE_FIELDS,
    MAX_KEYS,
    key_digest,
    parse_digest,
    parse_erasure_spec,
)
from kafka_retention.core.specs import SpecError

EMAIL = "alice.secret@example.com"
DIGEST = hashlib.sha256(EMAIL.encode()).hexdigest()


def erasure(**more: Any) -> dict[str, Any]:
    return {
        "cluster": {"clusterRef": "orders-prod"},
        "topics": {"names": ["customers"]},
        "keys": [{"sha256": DIGEST}],
        **more,
    }


def refusal(spec: dict[str, Any]) -> SpecError:
    with pytest.raises(SpecError) as refused:
        parse_erasure_spec(spec)
    return refused.value


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (DIGEST[:63], "it has 63 characters"),
        (DIGEST[:63] + "g", "a character is not hex"),
        (EMAIL, f"it has {len(EMAIL)} characters"),
        # A pasted key of exactly 64 characters: refused as not hex, still not quoted.
        (EMAIL.ljust(64, "x"), "a character is not hex"),
    ],
)
def test_a_bad_digest_is_refused_at_its_field_without_quoting_it(value: str, why: str) -> None:
    err = refusal(erasure(keys=[{"sha256": DIGEST}, {"sha256": value}]))
    assert err.field == "spec.keys[1].sha256"
    assert why in err.message
    assert value not in str(err)
    assert "alice" not in str(err)


def test_a_digest_that_is_not_a_string_is_refused_by_type_only() -> None:
    err = refusal(erasure(keys=[{"sha256": 12345}]))
    assert err.field == "spec.keys[0].sha256"
    assert "12345" not in str(err)


def test_an_upper_case_digest_is_the_same_key_in_lower_case() -> None:
    assert parse_digest(DIGEST.upper(), "f") == DIGEST


@pytest.mark.parametrize(
    "key",
    [{"sha256": DIGEST, "string": EMAIL}, {}, {"string": EMAIL, "base64": "YQ=="}],
)
def test_a_key_needs_exactly_one_form(key: dict[str, Any]) -> None:
    err = refusal(erasure(keys=[key]))
    assert err.field == "spec.keys[0]"
    assert EMAIL not in str(err)


def test_a_key_written_bare_instead_of_as_an_object_is_refused_without_quoting_it() -> None:
    err = refusal(erasure(keys=[EMAIL]))
    assert err.field == "spec.keys[0]"
    assert EMAIL not in str(err)
    err = refusal(erasure(keys=EMAIL))
    assert err.field == "spec.keys"
    assert EMAIL not in str(err)


def test_bad_base64_is_refused_without_quoting_it() -> None:
    err = refusal(erasure(keys=[{"base64": "alice@example.com"}]))
    assert err.field == "spec.keys[0].base64"
    assert "alice" not in str(err)


@pytest.mark.parametrize("key", [{"string": ""}, {"base64": ""}])
def test_an_empty_key_is_refused(key: dict[str, Any]) -> None:
    assert refusal(erasure(keys=[key])).field.startswith("spec.keys[0].")


def test_every_form_gives_the_same_digest_for_the_same_bytes() -> None:
    raw = EMAIL.encode()
    spec = erasure(
        keys=[
            {"sha256": DIGEST},
            {"string": EMAIL},
            {"base64": base64.b64encode(raw).decode()},
        ]
    )
    request = parse_erasure_spec(spec)
    assert key_digest(raw) == DIGEST
    # The three spell one key: kept once, as given first.
    assert request.digests() == {DIGEST}
    assert [k.form for k in request.keys] == ["sha256"]


def test_a_plain_key_is_kept_for_the_writer_but_never_shown() -> None:
    request = parse_erasure_spec(erasure(keys=[{"string": EMAIL}]))
    (key,) = request.keys
    assert key.raw == EMAIL.encode()
    assert key.digest == DIGEST
    for shown in (repr(request), str(request), repr(key)):
        assert EMAIL not in shown
        assert "alice" not in shown


@pytest.mark.parametrize("keys", [[], None])
def test_an_erasure_needs_keys(keys: Any) -> None:
    spec = erasure(keys=keys)
    if keys is None:
        del spec["keys"]
    assert refusal(spec).field == "spec.keys"


def test_more_than_the_maximum_of_keys_is_refused() -> None:
    keys = [{"sha256": key_digest(str(i).encode())} for i in range(MAX_KEYS + 1)]
    err = refusal(erasure(keys=keys))
    assert err.field == "spec.keys"
    assert str(MAX_KEYS) in err.message
    assert len(parse_erasure_spec(erasure(keys=keys[:MAX_KEYS])).keys) == MAX_KEYS


def test_topics_need_names_or_a_pattern() -> None:
    assert refusal(erasure(topics={})).field == "spec.topics"
    assert parse_erasure_spec(erasure(topics={"pattern": "customers-.*"})).pattern


def test_an_internal_topic_is_refused_at_its_name() -> None:
    err = refusal(erasure(topics={"names": ["customers", "__consumer_offsets"]}))
    assert err.field == "spec.topics.names[1]"
    assert "internal" in err.message


def test_a_bad_pattern_is_refused_at_the_pattern() -> None:
    assert refusal(erasure(topics={"pattern": "(?=x)"})).field == "spec.topics.pattern"


def test_a_topic_listed_twice_is_refused_at_the_second() -> None:
    err = refusal(erasure(topics={"names": ["a", "b", "a"]}))
    assert err.field == "spec.topics.names[2]"


def test_cut_without_accepting_the_collateral_is_refused_at_accept_collateral() -> None:
    err = refusal(erasure(onDeleteTopics="cut"))
    assert err.field == "spec.acceptCollateral"
    assert "dryRun" in err.message


def test_a_dry_run_of_cut_is_accepted_so_the_collateral_can_be_seen() -> None:
    request = parse_erasure_spec(erasure(onDeleteTopics="cut", dryRun=True))
    assert request.on_delete_topics == "cut"
    assert request.dry_run
    accepted = parse_erasure_spec(erasure(onDeleteTopics="cut", acceptCollateral=True))
    assert accepted.accept_collateral


def test_an_unknown_on_delete_topics_is_refused() -> None:
    assert refusal(erasure(onDeleteTopics="delete")).field == "spec.onDeleteTopics"


def test_defaults_report_thirty_days_no_dry_run() -> None:
    request = parse_erasure_spec(erasure())
    assert request.on_delete_topics == "report"
    assert request.deadline_ms == DEFAULT_DEADLINE_MS == 30 * 86_400_000
    assert not request.dry_run
    assert not request.accept_collateral
    assert request.binding == "orders-prod"
    assert request.named_topics() == [("spec.topics.names[0]", "customers")]


def test_deadline_and_groups_are_read() -> None:
    request = parse_erasure_spec(erasure(deadline="7d", protectGroups=["b", "a", "b"]))
    assert request.deadline_ms == 7 * 86_400_000
    assert request.protect_groups == ("a", "b")
    assert refusal(erasure(deadline="0s")).field == "spec.deadline"
    assert refusal(erasure(deadline="soon")).field == "spec.deadline"


def test_an_unknown_field_is_refused_naming_it() -> None:
    assert refusal(erasure(keys=[{"sha": DIGEST}])).field == "spec.keys[0].sha"
    assert refusal(erasure(dryrun=True)).field == "spec.dryrun"


def test_every_field_of_the_shape_is_read() -> None:
    """ERASURE_FIELDS round trip: a spec setting every field the shape names parses, and
    each field changes the request (a field in the shape the parser ignored would not)."""
    full = {
        "cluster": {"bootstrapServers": "k:9092", "clientConfigSecret": "s"},
        "topics": {"names": ["t"], "pattern": "t-.*"},
        "keys": [{"sha256": DIGEST}, {"string": "k2"}, {"base64": "azM="}],
        "onDeleteTopics": "cut",
        "acceptCollateral": True,
        "maxCollateralRecords": 12,
        "protectGroups": ["g"],
        "deadline": "1d",
        "dryRun": True,
    }
    assert set(full) == set(ERASURE_FIELDS)
    request = parse_erasure_spec(full)
    assert request.names == ("t",)
    assert request.pattern == "t-.*"
    assert [k.form for k in request.keys] == ["sha256", "string", "base64"]
    assert request.keys[2].raw == b"k3"
    assert request.on_delete_topics == "cut"
    assert request.accept_collateral
    assert request.protect_groups == ("g",)
    assert request.deadline_ms == 86_400_000
    assert request.max_collateral_records == 12
    assert request.dry_run
    assert request.cluster.bootstrap_servers == "k:9092"
    assert request.cluster.client_config_secret == "s"
