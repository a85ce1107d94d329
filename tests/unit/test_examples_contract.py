"""The first-line contract of examples and docs blocks (tests/helpers/examples.py): the
marker parser, the markdown collector (on tests/fixtures/markdown, a README and a docs
page as other helpers write them), the fragment field check, and what the repository's
examples and blocks say today. tests/e2e/test_examples_accepted.py applies them."""

from __future__ import annotations

import pytest

from kafka_retention.core.bindings import strict_refusal
from kafka_retention.core.conditions import Reason
from tests.helpers.examples import (
    ADMISSION,
    Expectation,
    all_snippets,
    docs_snippets,
    example_snippets,
    expectation,
    fenced_blocks,
    unknown_fields,
)
from tests.helpers.paths import FIXTURES

PAGES = FIXTURES / "markdown"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apiVersion: kafka-retention.io/v1alpha1\n", Expectation()),
        ("# Trim a pipeline's topics\napiVersion: x\n", Expectation()),
        ("# tenancy: open\n# why\n", Expectation(tenancy="open")),
        ("# expect: refused NotPermitted\n", Expectation(refused="NotPermitted")),
        ("#expect: refused   admission  \n", Expectation(refused="admission")),
        (
            "# tenancy: open\n# expect: refused SecretUnavailable\n",
            Expectation(tenancy="open", refused="SecretUnavailable"),
        ),
        ("# fragment\nspec: {}\n", Expectation(fragment=True)),
        ("\n# fragment\n", Expectation(fragment=True)),
        # A marker counts on the first line only.
        ("# A purge.\n# expect: refused NotPermitted\n", Expectation()),
    ],
)
def test_the_first_line_says_how_a_snippet_must_end(text: str, expected: Expectation) -> None:
    assert expectation(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "# tenancy: strict\n",
        "# tenancy: opn\n",
        "# expect: accepted\n",
        "# expect: refused\n",
        "# expect: refused Not Permitted\n",
    ],
)
def test_a_misspelt_marker_is_an_error_not_silently_strict(text: str) -> None:
    with pytest.raises(ValueError, match="marker"):
        expectation(text)


def test_the_collector_keeps_our_yaml_blocks_with_their_page_and_line() -> None:
    found = docs_snippets(PAGES)
    page = "tests/fixtures/markdown/docs/how-to/multi-tenant.md"
    assert [s.where for s in found] == [
        "tests/fixtures/markdown/README.md:8",
        "tests/fixtures/markdown/README.md:36",
        f"{page}:5",
        f"{page}:18",
        f"{page}:31",
    ]
    assert found[2].source == page
    policy, fragment, inline, refused, before_1970 = found
    assert policy.expect == Expectation()
    assert policy.objects()[0]["spec"]["cluster"] == {"clusterRef": "orders-prod"}
    assert fragment.expect == Expectation(fragment=True)
    assert fragment.objects() == []
    # A block indented under a list item loses the indent, ~~~ fences count too.
    assert inline.expect == Expectation(tenancy="open")
    assert inline.objects()[0]["metadata"] == {"name": "inline"}
    assert refused.expect == Expectation(refused="NotPermitted")
    assert refused.text.startswith("# expect: refused NotPermitted\napiVersion:")
    assert before_1970.expect == Expectation(refused="admission")


def test_a_longer_fence_holds_shorter_ones_as_text() -> None:
    page = "````markdown\n```yaml\nkind: X\n```\n````\n```yaml\na: 1\n```\n"
    assert list(fenced_blocks(page)) == [
        (1, "markdown", "```yaml\nkind: X\n```\n"),
        (6, "yaml", "a: 1\n"),
    ]


def test_fragments_may_sit_anywhere_in_an_object_but_name_only_crd_fields() -> None:
    assert unknown_fields({"spec": {"deleteConsumed": {"groups": ["g"]}}}) == []
    assert unknown_fields({"deleteConsumed": {"groups": ["g"], "minRetention": "1h"}}) == []
    assert unknown_fields([{"name": "t", "before": {"highWatermark": True}}]) == []
    assert unknown_fields({"metadata": {"labels": {"any": "thing"}}, "kind": "X"}) == []
    assert unknown_fields({"deleteConsumed": {"group": ["g"]}}) == ["deleteConsumed.group"]
    assert unknown_fields({"spec": {"cluster": {"bootstrap": "k:9092"}}}) == [
        "spec.cluster.bootstrap"
    ]
    assert unknown_fields("just text") != []


def test_every_snippet_of_the_repository_follows_the_contract() -> None:
    """Markers parse, name a reason the operator gives (or admission), and whole objects
    are there; every fragment names CRD fields only. Pure: the e2e test applies them."""
    reasons = {str(r) for r in Reason} | {ADMISSION}
    for snippet in all_snippets():
        expect = snippet.expect
        assert expect.refused in reasons | {None}, snippet.where
        if expect.fragment:
            for doc in snippet.documents():
                assert unknown_fields(doc) == [], snippet.where
        else:
            assert snippet.objects(), f"{snippet.where}: no kafka-retention.io object"


def test_strict_examples_name_a_binding_and_open_ones_need_open_tenancy() -> None:
    """What the first line says agrees with the spec: under strict tenancy an example
    names only spec.cluster.clusterRef (unless it is meant to be refused); one that says
    `# tenancy: open` types something in that strict tenancy refuses."""
    snippets = example_snippets()
    assert len(snippets) >= 15
    for snippet in snippets:
        expect = snippet.expect
        namespaced = [o for o in snippet.objects() if o["kind"] != "KafkaClusterBinding"]
        refusals = [strict_refusal(o["spec"]) for o in namespaced]
        if expect.tenancy == "open":
            assert any(refusals), f"{snippet.where} does not need --tenancy=open"
        elif expect.refused is None:
            assert not any(refusals), f"{snippet.where}: {refusals}"
