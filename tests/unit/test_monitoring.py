"""manifests/monitoring: the Grafana dashboard and the PrometheusRule query only series the
operator exports, with labels those series carry; every alert is labelled and explained.

The PromQL is read with a real parser (promql-parser, Prometheus's grammar), never with
regexes: a metric name is what the parser calls a selector's name (or its `__name__`
matcher), so function names, keywords, label matchers, strings and `by (...)` lists are
never mistaken for metrics. Here the operator's metrics come from its own module
(kafka_retention.metrics); tests/e2e/test_observability.py checks the same queries
against what a running operator serves on /metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from kafka_retention import metrics

REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "manifests" / "monitoring"
DASHBOARD = MONITORING / "grafana-dashboard.json"
RULES = MONITORING / "prometheusrule.yaml"

# Labels Prometheus adds to every scraped series (target labels), and the one that only
# histogram buckets carry. Only grouping clauses (by, without, on, ignoring) may name the
# target labels: a matcher on them would filter on where a replica runs.
TARGET_LABELS = frozenset({"instance", "job", "pod", "namespace", "container", "endpoint"})
BUCKET_LABEL = "le"

# Grafana's interval variables stand where PromQL wants a duration; any other `$name`
# may only appear inside a label matcher's string, where the parser takes it as text.
GRAFANA_DURATION = re.compile(
    r"\$(?:__(?:rate_interval|interval|range)\b|\{__(?:rate_interval|interval|range)\})"
)
LABEL_VALUES = re.compile(r"^\s*label_values\((?P<selector>.+),\s*(?P<label>[A-Za-z_]\w*)\s*\)\s*$")


@dataclass(frozen=True)
class Selector:
    """One vector selector: its metric name (or `__name__` regex) and the labels its
    matchers name."""

    name: str | None
    name_pattern: str | None
    labels: frozenset[str]


@dataclass
class Usage:
    """What one PromQL expression reads: its selectors and the labels its grouping
    clauses name."""

    selectors: list[Selector] = field(default_factory=list)
    grouping: set[str] = field(default_factory=set)


def grafana_to_promql(expr: str) -> str:
    """A dashboard query as Prometheus receives it: Grafana's interval variables become a
    duration (the value does not matter to what the query reads)."""
    return GRAFANA_DURATION.sub("5m", expr)


def analyse(expr: str) -> Usage:
    """The selectors and grouping labels of an expression; ValueError if it does not parse."""
    usage = Usage()

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            name, pattern, labels = node.name, None, set()
            matchers = [*node.matchers.matchers]
            for alternative in node.matchers.or_matchers:
                matchers += alternative
            for m in matchers:
                if m.name != "__name__":
                    labels.add(m.name)
                elif m.op == promql_parser.MatchOp.Equal:
                    name = m.value
                elif m.op == promql_parser.MatchOp.Re:
                    pattern = m.value
                else:  # != or !~ on the name selects "anything else": never meant here
                    raise ValueError(f"negative __name__ matcher in {expr!r}")
            usage.selectors.append(Selector(name, pattern, frozenset(labels)))
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            usage.grouping.update(node.modifier.labels)
        elif isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
            if node.modifier.matching is not None:
                usage.grouping.update(node.modifier.matching.labels)
            usage.grouping.update(node.modifier.group_labels or ())

    promql_parser.walk(promql_parser.parse(expr), visit)
    return usage


def variable_query(query: str) -> str:
    """A Grafana template variable's `label_values(selector, label)` as the PromQL that
    reads the same series and label."""
    match = LABEL_VALUES.match(query)
    if match is None:
        raise ValueError(f"variable query not understood: {query!r}")
    return f"count by ({match['label']}) ({match['selector']})"


def _panels(panels: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", ()))  # a collapsed row holds its panels


def dashboard_queries(dashboard: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and query variable of a dashboard."""
    out: list[tuple[str, str]] = []
    for panel in _panels(dashboard.get("panels", ())):
        for target in panel.get("targets", ()):
            out.append((f"panel {panel['title']!r} {target.get('refId')}", target["expr"]))
    for var in dashboard.get("templating", {}).get("list", ()):
        if var.get("type") == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            out.append((f"variable {var['name']!r}", variable_query(query)))
    return [(where, grafana_to_promql(expr)) for where, expr in out]


def rule_queries(rule: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (f"rule {r.get('alert') or r.get('record')!r}", str(r["expr"]))
        for group in rule["spec"]["groups"]
        for r in group["rules"]
    ]


def all_queries() -> list[tuple[str, str]]:
    return dashboard_queries(json.loads(DASHBOARD.read_text())) + rule_queries(
        yaml.safe_load(RULES.read_text())
    )


def sample_names(family: str, type_: str) -> list[str]:
    """The series names prometheus_client writes for a family (its text format)."""
    if type_ == "counter":
        return [f"{family}_total"]
    if type_ == "histogram":
        return [f"{family}_bucket", f"{family}_count", f"{family}_sum"]
    return [family]


def problems(
    queries: Iterable[tuple[str, str]],
    exported: Mapping[str, frozenset[str] | None],
) -> list[str]:
    """What the queries read that `exported` (series name -> its labels, or None when
    they are unknown) lacks: unknown metrics, `__name__` patterns matching none,
    matchers on labels the series lack, grouping labels no series in the query has."""
    found: list[str] = []
    for where, expr in queries:
        try:
            usage = analyse(expr)
        except ValueError as err:
            found.append(f"{where}: does not parse: {err}")
            continue
        if not usage.selectors:
            found.append(f"{where}: reads no metric")
        in_query: set[str] = set()
        labels_known = True
        for sel in usage.selectors:
            if sel.name is not None:
                names = [sel.name] if sel.name in exported else []
                if not names:
                    found.append(f"{where}: {sel.name} is not exported")
                    labels_known = False
            elif sel.name_pattern is not None:
                names = [n for n in exported if re.fullmatch(sel.name_pattern, n)]
                if not names:
                    found.append(f"{where}: {sel.name_pattern!r} matches no exported metric")
                    labels_known = False
            else:
                found.append(f"{where}: a selector without a metric name")
                continue
            for name in names:
                labels = exported[name]
                if labels is None:
                    labels_known = False
                    continue
                in_query |= labels
                missing = sel.labels - labels
                if missing:
                    found.append(f"{where}: {name} has no label {sorted(missing)}")
        unknown = usage.grouping - in_query - TARGET_LABELS
        if unknown and labels_known:
            found.append(f"{where}: groups by {sorted(unknown)}, which no series it reads has")
    return found


def declared_series() -> dict[str, frozenset[str] | None]:
    """Series name -> labels, as kafka_retention.metrics declares them."""
    out: dict[str, frozenset[str] | None] = {}
    for value in vars(metrics).values():
        if not isinstance(value, MetricWrapperBase):
            continue
        (family,) = value.describe()
        labels = frozenset(value._labelnames)
        for name in sample_names(family.name, family.type):
            out[name] = labels | {BUCKET_LABEL} if name.endswith("_bucket") else labels
    return out


# --- the extractor itself ------------------------------------------------------------------


def test_metric_names_come_from_selectors_not_functions_keywords_or_strings() -> None:
    usage = analyse(
        'histogram_quantile(0.95, sum by (kind, le) (rate(a_bucket{kind="rate"}[5m])))'
        " > on (instance) group_left (pod) b unless c offset 15m"
        ' and label_replace(d, "dst", "$1", "src", "e_total")'
        ' and count_values("f", g) and topk(3, h{sum="by"})'
    )
    assert [s.name for s in usage.selectors] == ["a_bucket", "b", "c", "d", "g", "h"]
    assert usage.selectors[0].labels == {"kind"}
    assert usage.selectors[-1].labels == {"sum"}
    assert usage.grouping == {"kind", "le", "instance", "pod"}


def test_a_name_matcher_is_a_metric_name_or_pattern() -> None:
    usage = analyse('{__name__="x_total", a="1"} or {__name__=~"y_.*"}')
    assert [(s.name, s.name_pattern, s.labels) for s in usage.selectors] == [
        ("x_total", None, {"a"}),
        (None, "y_.*", frozenset()),
    ]
    with pytest.raises(ValueError, match="negative __name__"):
        analyse('{__name__!="x", a="1"}')


def test_a_broken_expression_is_refused() -> None:
    with pytest.raises(ValueError, match="unclosed"):
        analyse("sum(rate(x[5m])")
    # A Grafana variable where PromQL wants a duration.
    with pytest.raises(ValueError, match="unexpected character"):
        analyse("rate(x[$__rate_interval])")


def test_grafana_variables_become_what_prometheus_receives() -> None:
    expr = grafana_to_promql('rate(x{ns=~"$namespace"}[$__rate_interval]) / ${__range}')
    assert expr == 'rate(x{ns=~"$namespace"}[5m]) / 5m'
    assert variable_query('label_values({__name__=~"a|b", ns=~"$ns"}, name)') == (
        'count by (name) ({__name__=~"a|b", ns=~"$ns"})'
    )
    with pytest.raises(ValueError, match="not understood"):
        variable_query("query_result(up)")


def test_problems_names_unknown_metrics_labels_and_groupings() -> None:
    exported: dict[str, frozenset[str] | None] = {
        "known_total": frozenset({"namespace", "name"}),
        "unlabelled": None,
    }
    found = problems(
        [
            ("a", 'sum by (name) (rate(known_total{name="x"}[5m]))'),
            ("b", "rate(missing_total[5m])"),
            ("c", 'known_total{topic="t"}'),
            ("d", "sum by (group) (known_total)"),
            ("e", "sum by (instance) (known_total) and unlabelled"),
            ("f", '{__name__=~"nothing_.*"}'),
            ("g", "sum(x"),
            ("h", "1 + 1"),
        ],
        exported,
    )
    assert found == [
        "b: missing_total is not exported",
        "c: known_total has no label ['topic']",
        "d: groups by ['group'], which no series it reads has",
        "f: 'nothing_.*' matches no exported metric",
        "g: does not parse: unclosed left parenthesis",
        "h: reads no metric",
    ]


# --- the shipped files -------------------------------------------------------------------


def test_dashboard_and_rules_read_only_declared_metrics_and_labels() -> None:
    queries = all_queries()
    assert len(queries) > 30  # every panel and rule was found
    assert problems(queries, declared_series()) == []


def test_dashboard_covers_what_an_operator_team_watches() -> None:
    read = {
        s.name
        for _, expr in dashboard_queries(json.loads(DASHBOARD.read_text()))
        for s in analyse(expr).selectors
    }
    assert {
        "kafka_retention_records_deleted_total",
        "kafka_retention_bytes_reclaimed_estimate_total",
        "kafka_retention_orphan_bytes_reclaimed_total",
        "kafka_retention_unconsumed_lost_records_total",
        "kafka_retention_unconsumed_records_deleted_total",
        "kafka_retention_unread_at_risk_seconds",
        "kafka_retention_tombstone_margin_seconds",
        "kafka_retention_orphan_partitions",
        "kafka_retention_orphan_partition_bytes",
        "kafka_retention_run_duration_seconds_bucket",
        "kafka_retention_run_failures_total",
        "kafka_retention_policies_late",
        "kafka_retention_policy_start_lateness_seconds_bucket",
        "kafka_retention_acting",
        "kafka_retention_partitions_purged_total",
        "kafka_retention_partition_failures_total",
    } <= read


def test_panel_ids_are_unique_and_panels_use_the_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = list(_panels(dashboard["panels"]))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert panel.get("description"), panel["title"]


def test_panels_fit_the_grid_without_overlapping() -> None:
    taken: dict[tuple[int, int], str] = {}
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]  # Grafana's grid is 24 wide
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken[(x, y)]}"
                taken[(x, y)] = panel["title"]


def test_every_alert_has_a_severity_and_names_what_it_is_about() -> None:
    rule = yaml.safe_load(RULES.read_text())
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    alerts = [r for group in rule["spec"]["groups"] for r in group["rules"]]
    assert {
        "KafkaRetentionDataLoss",
        "KafkaRetentionUnreadRecordsAtRisk",
        "KafkaRetentionTombstonesAtRisk",
        "KafkaRetentionRunFailed",
        "KafkaRetentionPoliciesLate",
        "KafkaRetentionOperatorDown",
        "KafkaRetentionNoActingReplica",
    } <= {a["alert"] for a in alerts}
    for alert in alerts:
        assert alert["labels"]["severity"] in {"critical", "warning", "info"}, alert["alert"]
        assert alert["annotations"]["summary"], alert["alert"]
        assert alert["annotations"]["description"], alert["alert"]
        # Every label an annotation names survives the expression's aggregation.
        kept = _kept_labels(str(alert["expr"]))
        text = alert["annotations"]["summary"] + alert["annotations"]["description"]
        for label in re.findall(r"\$labels\.(\w+)", text):
            assert label in kept, f"{alert['alert']} names {label}, its expression keeps {kept}"
        if kept >= {"namespace", "name"}:
            assert "{{ $labels.namespace }}/{{ $labels.name }}" in text, alert["alert"]


def _kept_labels(expr: str) -> set[str]:
    """Labels of an alert expression's result: the outermost aggregation's `by` list
    (every alert here aggregates; `absent` keeps none)."""
    node: Any = promql_parser.parse(expr)
    while True:
        if isinstance(node, promql_parser.AggregateExpr):
            modifier = node.modifier
            assert modifier is not None
            assert modifier.type == promql_parser.AggModifierType.By
            return set(modifier.labels)
        if isinstance(node, promql_parser.BinaryExpr):
            node = node.lhs
        elif isinstance(node, promql_parser.ParenExpr):
            node = node.expr
        elif isinstance(node, promql_parser.Call):
            return set()
        else:
            raise AssertionError(f"not an aggregation: {expr}")


def test_dashboard_configmap_carries_the_dashboard_file_verbatim() -> None:
    cm = yaml.safe_load((MONITORING / "grafana-dashboard-configmap.yaml").read_text())
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    (content,) = cm["data"].values()
    assert content == DASHBOARD.read_text()


def test_kustomization_lists_every_manifest_of_the_folder() -> None:
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    manifests = {p.name for p in MONITORING.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == manifests
