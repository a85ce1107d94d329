"""The queries of manifests/monitoring (the Grafana dashboard and the PrometheusRule), read
with a real PromQL parser (promql-parser, Prometheus's grammar): which series and labels
each reads, and what of that a set of exported series lacks. The unit tests hold them
against the operator's declared metrics, the e2e test against a running operator's
/metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import promql_parser
import yaml

from tests.helpers.paths import MANIFESTS

MONITORING = MANIFESTS / "monitoring"
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


def nested_panels(panels: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for panel in panels:
        yield panel
        yield from nested_panels(panel.get("panels", ()))  # a collapsed row holds its panels


def dashboard_queries(dashboard: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and query variable of a dashboard."""
    out: list[tuple[str, str]] = []
    for panel in nested_panels(dashboard.get("panels", ())):
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
