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
from typing import Any

import promql_parser
import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from kafka_retention import metrics
from tests.helpers.monitoring import (
    BUCKET_LABEL,
    DASHBOARD,
    MONITORING,
    RULES,
    all_queries,
    analyse,
    dashboard_queries,
    grafana_to_promql,
    nested_panels,
    problems,
    sample_names,
    variable_query,
)


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
    panels = list(nested_panels(dashboard["panels"]))
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
