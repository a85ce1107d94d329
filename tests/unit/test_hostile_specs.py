"""Every hostile spec of the corpus is refused by its kind's parser, naming the field.

The operator acts on a spec only after the parser accepted it, and it tells the user what
to fix through SpecError.field (the InvalidSpec condition). Any other exception escaping
a parser is a crash: Kopf retries it forever and a RetentionPolicy batch fails with it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kafka_retention.core.erasure import ErasureRequest, parse_erasure_spec
from kafka_retention.core.policy_spec import PolicySpec, parse_policy_spec
from kafka_retention.core.purge import PurgeRequest, parse_spec
from kafka_retention.core.specs import SpecError
from kafka_retention.services.tenancy import Refused, Tenancy
from tests.helpers.hostile import (
    API_VERSION,
    BINDING_NAME,
    BOOTSTRAP,
    CORPUS,
    ERASURE,
    PASTED_64,
    PASTED_EMAIL,
    POLICY,
    PURGE,
    REFUSED,
    TENANCY,
    Hostile,
    Kind,
    manifest,
    tenancy_binding,
)

PARSERS: dict[Kind, Callable[[Mapping[str, Any]], object]] = {
    PURGE: parse_spec,
    POLICY: parse_policy_spec,
    ERASURE: parse_erasure_spec,
}
DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# What the e2e test may send in one object: etcd takes at most 1.5 MiB a request.
MAX_OBJECT_BYTES = 1_400_000


def _param(entry: Hostile) -> Any:
    marks = [] if entry.gap is None else [pytest.mark.xfail(strict=True, reason=entry.gap)]
    return pytest.param(entry, id=entry.name, marks=marks)


@pytest.mark.parametrize("entry", [_param(e) for e in CORPUS])
def test_hostile_spec_is_refused_naming_its_field(entry: Hostile) -> None:
    # pytest.raises(SpecError) lets any other exception through, which fails the test:
    # a parser must never crash on input, however wrong.
    with pytest.raises(SpecError) as refused:
        PARSERS[entry.kind](entry.spec)
    # Exact, not a prefix: the field is what the user is told to fix.
    assert refused.value.field == entry.field
    assert refused.value.message


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in REFUSED])
def test_refusing_a_spec_leaves_it_as_it_was(entry: Hostile) -> None:
    # The corpus is shared by every test (and the e2e test): a parser that normalised its
    # input in place would change what later tests see, and what status reports.
    before = json.dumps(entry.spec, sort_keys=True)
    with pytest.raises(SpecError):
        PARSERS[entry.kind](entry.spec)
    assert json.dumps(entry.spec, sort_keys=True) == before


def test_corpus_is_large_and_covers_every_kind() -> None:
    by_kind = Counter(e.kind for e in CORPUS)
    refused_by_kind = Counter(e.kind for e in REFUSED)
    assert len(CORPUS) >= 45
    assert by_kind[PURGE] >= 15
    assert by_kind[POLICY] >= 15
    # The known gaps do not count towards the promise: enough is refused today.
    assert len(REFUSED) >= 45
    assert refused_by_kind[PURGE] >= 15
    assert refused_by_kind[ERASURE] >= 15
    assert refused_by_kind[POLICY] >= 15


def test_corpus_names_are_unique_dns_labels() -> None:
    names = [e.name for e in CORPUS]
    duplicates = sorted(n for n, count in Counter(names).items() if count > 1)
    assert duplicates == []
    assert [n for n in names if not DNS_1123_LABEL.fullmatch(n)] == []


def test_corpus_fields_name_spec_paths() -> None:
    # The form SpecError uses: spec, then dotted names and [index] steps.
    path = re.compile(r"spec(\.[A-Za-z][A-Za-z0-9]*(\[\d+\])*)*")
    assert [e.field for e in CORPUS if not path.fullmatch(e.field)] == []


def test_corpus_entries_reach_the_test_cluster_unless_the_cluster_is_the_point() -> None:
    # An entry refused for its cluster is the only one allowed to differ: every other one
    # must be refused for its own hostile part, with a cluster that would work.
    wrong = [
        e.name
        for e in CORPUS
        if not e.field.startswith("spec.cluster")
        and e.spec.get("cluster", {}).get("bootstrapServers") != BOOTSTRAP
    ]
    assert wrong == []


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in CORPUS])
def test_manifest_is_an_object_the_api_server_can_take(entry: Hostile) -> None:
    body = manifest(entry, "hostile-ns")
    assert body["apiVersion"] == API_VERSION
    assert body["kind"] == entry.kind
    assert body["metadata"] == {"name": entry.name, "namespace": "hostile-ns"}
    # Strict JSON (no NaN or Infinity), and small enough for one etcd request.
    text = json.dumps(body, allow_nan=False)
    assert len(text.encode()) < MAX_OBJECT_BYTES
    assert json.loads(text)["spec"] == entry.spec


def test_manifest_spec_is_a_copy() -> None:
    entry = CORPUS[0]
    body = manifest(entry, "ns")
    body["spec"]["injected"] = True
    assert "injected" not in entry.spec


def _strict() -> Tenancy:
    binding = tenancy_binding("tenant", "hostile-cluster")
    return Tenancy(
        "strict",
        lambda name: {"spec": binding} if name == BINDING_NAME else None,
        lambda _: None,
        lambda _: pytest.fail("a refused spec must not be connected"),
    )


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in TENANCY])
def test_tenancy_entry_is_refused_naming_its_field_before_anything_is_contacted(
    entry: Hostile,
) -> None:
    """As the handlers run them: strict tenancy on the raw spec, the parser, then the
    binding's admission (which contacts nothing; `resolve` fails the test if asked)."""
    with pytest.raises((Refused, SpecError)) as refused:
        _admit(_strict(), entry)
    assert isinstance(refused.value, Refused | SpecError)
    assert refused.value.field == entry.field


def _admit(rules: Tenancy, entry: Hostile) -> None:
    rules.check_spec(entry.spec)
    parsed = PARSERS[entry.kind](entry.spec)
    if isinstance(parsed, PurgeRequest):
        rules.admit_purge("tenant", parsed)
    elif isinstance(parsed, ErasureRequest):
        rules.admit_erasure("tenant", parsed)
    else:
        assert isinstance(parsed, PolicySpec)
        rules.admit_policy("tenant", parsed)


def test_tenancy_entries_are_accepted_once_the_attack_is_taken_out() -> None:
    # The binding itself admits the namespace: an entry refused for its one wrong thing
    # proves that thing, not a binding that refuses everything.
    policy = parse_policy_spec(
        {
            "cluster": {"clusterRef": BINDING_NAME},
            "topics": {"names": ["orders"]},
            "maxRetention": "1d",
        }
    )
    assert _strict().admit_policy("tenant", policy).cluster_id == "hostile-cluster"


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in CORPUS if e.kind == ERASURE])
def test_an_erasure_refusal_never_quotes_what_was_pasted_for_a_key(entry: Hostile) -> None:
    # The refusal becomes a condition, an event and a log line: a person's e-mail address
    # pasted into sha256 must not travel there.
    with pytest.raises(SpecError) as refused:
        parse_erasure_spec(entry.spec)
    for pasted in (PASTED_EMAIL, PASTED_64, "customer-4711"):
        assert pasted not in str(refused.value)
