"""manifests/monitoring against the real thing: the dashboard and the alert rules read only
series that a running operator serves on /metrics, with the labels those series carry;
and the PrometheusRule, PodMonitor and dashboard ConfigMap are accepted by the real API
server.

Labelled metric families have no series in /metrics until their first observation, but
prometheus_client prints their `# HELP`/`# TYPE` lines from the start. Whether a metric
exists is judged by those lines (so a family that has not been observed yet still counts
as exported); its labels only by real series. So the test makes the operator produce every
series the queries read, for real: a RecordPurge, policies that delete past a lagging
group (deleteConsumed, maxRetention, notify), watch a compacted topic's tombstones, remove
an orphan directory planted on a broker's volume, and fail for a missing Secret. Then every
metric name and label of every query must be on /metrics."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devstack.kafka import KafkaCluster
from devstack.operator import OperatorProcess, free_port
from devstack.stack import Stack
from tests.helpers.commits import commit_groups
from tests.helpers.kafka import Kafka
from tests.helpers.kube import get
from tests.helpers.monitoring import (
    BUCKET_LABEL,
    MONITORING,
    all_queries,
    analyse,
    problems,
    sample_names,
)
from tests.helpers.orphans import HEX
from tests.helpers.policies import apply_policy_on
from tests.helpers.purges import apply_purge, cuts, purge_finished
from tests.helpers.records import HOUR, old_then_new, produce
from tests.helpers.topics import NO_RETENTION, compacted, create_on

pytestmark = pytest.mark.stack

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "tests" / "fixtures" / "prometheusrule-crd.yaml"
MINUTE = 60_000


@pytest.fixture
def metrics_operator(stack: Stack, namespace: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """An operator of the test's own serving /metrics (the session's e2e operator serves
    none), watching only the test's namespace: (namespace, metrics URL)."""
    port = free_port()
    proc = OperatorProcess(
        stack,
        [namespace],
        tmp_path / "operator.log",
        extra_args=(
            "--metrics-port",
            str(port),
            "--metrics-addr",
            "127.0.0.1",
            "--local-broker-volumes",
        ),
    ).start()
    try:
        yield namespace, f"http://127.0.0.1:{port}/metrics"
    finally:
        # Policies and purges go while their operator is there to see them go.
        for kind in ("retentionpolicies", "recordpurges"):
            stack.kubectl("delete", kind, "--all", "-n", namespace, "--timeout=60s", check=False)
        code = proc.stop()
        assert code == 0, proc.tail()


def scrape(url: str) -> dict[str, frozenset[str] | None]:
    """Series name -> the label names its series carry on /metrics; None for a family
    that /metrics declares (`# TYPE`) but has no series of yet."""
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback
        text = answer.read().decode()
    out: dict[str, frozenset[str] | None] = {}
    for family in text_string_to_metric_families(text):
        for name in sample_names(family.name, family.type):
            labels = [frozenset(s.labels) for s in family.samples if s.name == name]
            out[name] = frozenset().union(*labels) if labels else None
    return out


def read_by_queries() -> set[str]:
    """Every series name a dashboard or rule query reads (by name, not by pattern)."""
    return {
        s.name for _, expr in all_queries() for s in analyse(expr).selectors if s.name is not None
    }


def lagging(
    kafka: Kafka, config: dict[str, str], old: int, age_ms: int, read: int
) -> tuple[str, str]:
    """A one-partition topic with `old` keyed records written `age_ms` ago and ten new
    ones, and a group that has read the first `read`: (topic, group)."""
    stamps = old_then_new(old, age_ms)
    topic = kafka.topic({0: old + 10}, config, timestamps={0: stamps}, key=lambda p, i: b"k%d" % i)
    # Through the admin API, retried: on a fresh cluster the group coordinators are still
    # loading (a consumer's commit fails with NOT_COORDINATOR then).
    commit_groups(kafka.admin, {topic: read}, suffix="-behind")
    return topic, f"{topic}-behind"


def test_dashboard_and_rules_read_only_series_a_working_operator_exports(
    stack: Stack,
    metrics_operator: tuple[str, str],
    kafka: Kafka,
    isolated_cluster: KafkaCluster,
    isolated_kafka: Kafka,
) -> None:
    ns, url = metrics_operator

    # A RecordPurge: records deleted, partitions purged (and failed: none), run duration.
    purged = kafka.topic({0: 20, 1: 20})
    apply_purge(stack, ns, "cut", partitions=cuts(purged, {0: 10}))

    # A policy whose maxRetention cuts past what its group has read: records deleted,
    # bytes reclaimed, unread records deleted and lost.
    capped, idle = lagging(
        kafka,
        NO_RETENTION,
        old=20,
        age_ms=3 * HOUR,
        read=5,
    )
    # One run each (interval 1h): a second run could clear a series before the scrape.
    apply_policy_on(
        stack,
        ns,
        "caps",
        capped,
        interval="1h",
        deleteConsumed={"groups": [idle]},
        maxRetention="1h",
        notify={"groups": [idle]},
    )

    # Records a group has not read that the broker's 2h retention reaches in about 10
    # minutes: unread records at risk.
    two_hours = {"retention.ms": str(2 * HOUR)}
    risky, behind = lagging(
        kafka,
        two_hours,
        20,
        2 * HOUR - 10 * MINUTE,
        read=5,
    )
    apply_policy_on(stack, ns, "at-risk", risky, interval="1h", notify={"groups": [behind]})

    # A group 55 minutes behind on a compacted topic whose delete.retention.ms is an hour:
    # tombstones at risk, and delete.retention.ms raised.
    tombstoned, slow = lagging(kafka, compacted(60 * MINUTE), old=10, age_ms=55 * MINUTE, read=2)
    apply_policy_on(
        stack,
        ns,
        "tombstones",
        tombstoned,
        interval="1h",
        tombstones={"groups": [slow], "raiseDeleteRetention": {"enabled": True, "max": "3h"}},
    )

    # A policy whose runs fail: its client Secret does not exist.
    apply_policy_on(
        stack,
        ns,
        "no-secret",
        capped,
        interval="1h",
        cluster={"bootstrapServers": kafka.bootstrap, "clientConfigSecret": "absent"},
        notify={"groups": [idle]},
    )

    # A copy of a partition that only broker 2 hosts, on broker 1 under the name a KRaft
    # broker gives a stray replica: an orphan, removed once its removalDelay passed. On
    # the isolated cluster, where the tests that plant orphans run one after another: its
    # policy removes any other orphan on those brokers too.
    elsewhere = f"orphan-{ns[-6:]}"
    create_on(isolated_kafka.admin, elsewhere, [2])
    produce(isolated_kafka.bootstrap, elsewhere, {0: 10})
    stray = isolated_cluster.node(1).log_dir / f"{elsewhere}-0.{HEX}-stray"
    shutil.copytree(isolated_cluster.node(2).log_dir / f"{elsewhere}-0", stray)
    try:
        cluster = {"bootstrapServers": isolated_kafka.bootstrap, "brokers": {"access": "local"}}
        body = {
            "apiVersion": "kafka-retention.io/v1alpha1",
            "kind": "RetentionPolicy",
            "metadata": {"name": "orphans", "namespace": ns},
            "spec": {
                "cluster": cluster,
                "interval": "10s",
                "orphanPartitions": {"enabled": True, "removalDelay": "10s", "minAge": "1s"},
            },
        }
        stack.kubectl("apply", "-f", "-", stdin=json.dumps(body))
        assert purge_finished(stack, ns, "cut")["status"]["phase"] == "Succeeded"

        wanted = read_by_queries()
        deadline = time.monotonic() + 180
        exported = scrape(url)
        while any(exported.get(name) is None for name in wanted):
            if time.monotonic() > deadline:
                missing = sorted(n for n in wanted if exported.get(n) is None)
                status = {
                    n: get(stack, "retentionpolicy", ns, n).get("status", {}).get("conditions")
                    for n in ("caps", "at-risk", "tombstones", "no-secret", "orphans")
                }
                raise AssertionError(f"no series yet for {missing}; policies: {status}")
            time.sleep(1)
            exported = scrape(url)
        assert not stray.exists()  # the orphan policy removed it
    finally:
        if stray.exists():
            shutil.rmtree(stray)

    # Every metric and label the queries read is what the operator serves, and the
    # series say what happened in this namespace.
    assert problems(all_queries(), exported) == []
    assert exported["kafka_retention_run_duration_seconds_bucket"] == frozenset(
        {"kind", BUCKET_LABEL}
    )
    assert exported["kafka_retention_unconsumed_lost_records_total"] == frozenset(
        {
            "namespace",
            "name",
            "group",
            "topic",
            "cause",
        }
    )


def test_a_metric_the_operator_does_not_export_is_named(
    stack: Stack, metrics_operator: tuple[str, str]
) -> None:
    # The same check on the same scrape fails for a query with a misspelt metric or label:
    # a dashboard naming something the operator lacks cannot pass.
    _, url = metrics_operator
    exported = scrape(url)
    assert exported["kafka_retention_acting"] == frozenset()
    assert exported["kafka_retention_records_deleted_total"] is None  # declared, no series
    found = problems(
        [
            ("typo", "sum(rate(kafka_retention_record_deleted_total[5m]))"),
            ("label", 'kafka_retention_acting{policy="x"}'),
        ],
        exported,
    )
    assert found == [
        "typo: kafka_retention_record_deleted_total is not exported",
        "label: kafka_retention_acting has no label ['policy']",
    ]


@pytest.mark.serial  # applies and deletes in kafka-retention-system
def test_monitoring_manifests_are_accepted_by_the_api_server(stack: Stack) -> None:
    stack.kubectl("apply", "--server-side", "-f", str(CRDS))
    for crd in ("prometheusrules", "podmonitors"):
        stack.kubectl(
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            f"crd/{crd}.monitoring.coreos.com",
        )
    stack.kubectl("apply", "-f", str(REPO / "manifests" / "base" / "namespace.yaml"))
    rendered = stack.kubectl("kustomize", str(MONITORING)).stdout
    ns = "kafka-retention-system"
    try:
        # A plain apply: strict field validation refuses any field the schemas lack.
        done = stack.kubectl("apply", "-f", "-", stdin=rendered, check=False)
        assert done.returncode == 0, done.stderr
        assert "Warning" not in done.stderr, done.stderr
        rule = get(stack, "prometheusrule", ns, "kafka-retention-operator")
        alerts = [r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]]
        assert "KafkaRetentionDataLoss" in alerts
        cm = get(stack, "configmap", ns, "kafka-retention-grafana-dashboard")
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        stored = json.loads(cm["data"]["kafka-retention-operator.json"])
        assert stored == json.loads((MONITORING / "grafana-dashboard.json").read_text())
        monitor = get(stack, "podmonitor", ns, "kafka-retention-operator")
        assert monitor["spec"]["podMetricsEndpoints"][0]["honorLabels"] is True
    finally:
        stack.kubectl("delete", "-f", "-", stdin=rendered, check=False)
