"""Strict tenancy on the real stack: the operator as shipped (--tenancy=strict, its
default) against tenants who try to reach past their KafkaClusterBinding.

Each attack is played by a namespace with `create` on RecordPurges and RetentionPolicies
only; each test checks the refusal names the field and that no record was removed (the
log start offsets, read from the brokers, do not move). The positive path shows a bound
namespace purging and cutting on its own cluster, within the topics its binding allows.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from devstack.kafka import KafkaCluster
from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers import tenancy
from tests.helpers.commits import commit
from tests.helpers.conditions import ready, with_reason
from tests.helpers.hostile import BINDING_NAME, TENANCY, manifest, tenancy_binding
from tests.helpers.kafka import Kafka
from tests.helpers.kube import apply, create_watched_namespace, get, resource, wait_for
from tests.helpers.offsets import log_starts
from tests.helpers.orphans import digest, orphan_copy
from tests.helpers.policies import apply_policy, apply_policy_on, completed
from tests.helpers.purges import apply_purge, cuts, purge_all, purge_finished
from tests.helpers.records import produce
from tests.helpers.topics import cluster_id

pytestmark = pytest.mark.stack

# A pytest-xdist worker adds its number, as tests/e2e/conftest.py's prefix does: this
# file's tests may run on two workers at once (the orphan one on the isolated cluster's),
# each with a strict operator that must watch only its own namespaces.
PREFIX = "tenancy" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
# The topic the corpus aims at (tests/helpers/hostile.py: `orders`, which the binding
# allows), made to hold records so a wrong delete would show.
TOPIC = "orders"
# A deleteBefore past every record's time: the cut takes everything the rule may take.
EVERYTHING = "2100-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def strict_operator(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("tenancy") / "operator.log"
    # The brokers' log dirs are on this machine: a binding may say access local.
    yield from tenancy.strict_operator(stack, log, PREFIX, "--local-broker-volumes")


@pytest.fixture
def teams(stack: Stack, strict_operator: OperatorProcess) -> Iterator[tuple[str, ...]]:
    """Two tenant namespaces, team A and team B."""
    suffix = uuid.uuid4().hex[:6]
    spaces = (f"{PREFIX}-a-{suffix}", f"{PREFIX}-b-{suffix}")
    yield from tenancy.watched_namespaces(stack, strict_operator, spaces)


@pytest.fixture
def bindings(stack: Stack) -> Iterator[list[str]]:
    """KafkaClusterBindings the test made."""
    yield from tenancy.made_bindings(stack)


def bind(
    stack: Stack,
    made: list[str],
    namespace: str,
    cluster: str,
    bootstrap: str | None = None,
    **spec: Any,
) -> str:
    """A binding of the cluster at `bootstrap` (the shared cluster unless said), whose id is
    `cluster`, to `namespace`."""
    name = f"{PREFIX}-{uuid.uuid4().hex[:6]}"
    servers = bootstrap or stack.kafka.bootstrap_servers
    apply(stack, tenancy.binding(name, cluster, servers, namespace, **spec))
    made.append(name)
    return name


def own_topics(namespace: str, operations: list[str], *topics: str) -> list[dict[str, Any]]:
    """spec.tenants with one entry: `namespace` may run `operations` on these topics."""
    allow = [re.escape(t) for t in topics]
    return [{"namespaces": [namespace], "operations": operations, "topics": {"allow": allow}}]


def cut_all(stack: Stack, ns: str, name: str, cluster: dict[str, Any], topic: str) -> None:
    """A RetentionPolicy that deletes every record of `topic` now and every 10s."""
    apply_policy_on(stack, ns, name, topic, cluster=cluster, deleteBefore=EVERYTHING)


def policy_refused(stack: Stack, ns: str, name: str, reason: str) -> dict[str, Any]:
    """The policy's Ready condition, once it gives this reason."""
    refused = with_reason(reason, "Ready")
    return ready(wait_for(stack, "retentionpolicy", ns, name, refused, timeout=90))


def test_an_inline_cluster_is_refused_naming_the_field_and_nothing_is_deleted(
    stack: Stack, teams: tuple[str, str], kafka: Kafka
) -> None:
    """Team A types in the brokers of a cluster nobody bound to it."""
    team_a, _ = teams
    topic = kafka.topic({0: 30, 1: 30})
    inline = {"bootstrapServers": kafka.bootstrap}
    purge_all(stack, team_a, "wipe", inline, topic)
    cut_all(stack, team_a, "wipe", inline, topic)
    purge = purge_finished(stack, team_a, "wipe")
    assert purge["status"]["phase"] == "Failed"
    assert ready(purge)["reason"] == "NotPermitted"
    assert "spec.cluster.bootstrapServers" in ready(purge)["message"]
    condition = policy_refused(stack, team_a, "wipe", "NotPermitted")
    assert "spec.cluster.bootstrapServers" in condition["message"]
    assert log_starts(kafka.admin, topic, 2) == [0, 0]


def test_a_namespace_cannot_use_a_binding_made_for_another(
    stack: Stack, teams: tuple[str, str], bindings: list[str], kafka: Kafka
) -> None:
    """Team B names team A's binding; the binding admits only team A."""
    team_a, team_b = teams
    binding = bind(stack, bindings, team_a, cluster_id(kafka.admin))
    topic = kafka.topic({0: 30})
    purge_all(stack, team_b, "steal", {"clusterRef": binding}, topic)
    cut_all(stack, team_b, "steal", {"clusterRef": binding}, topic)
    purge = purge_finished(stack, team_b, "steal")
    assert (purge["status"]["phase"], ready(purge)["reason"]) == ("Failed", "NotPermitted")
    assert f"does not admit namespace {team_b}" in ready(purge)["message"]
    condition = policy_refused(stack, team_b, "steal", "NotPermitted")
    assert "spec.cluster.clusterRef" in condition["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_a_cluster_answering_with_another_id_than_the_bindings_is_never_acted_on(
    stack: Stack, teams: tuple[str, str], bindings: list[str], kafka: Kafka
) -> None:
    """The binding names the cluster by id; a listener that leads elsewhere (here: the
    same brokers, but the binding expects another cluster) must stop everything."""
    team_a, _ = teams
    binding = bind(stack, bindings, team_a, "NotThisClusterAtAll0")
    topic = kafka.topic({0: 30})
    purge_all(stack, team_a, "elsewhere", {"clusterRef": binding}, topic)

    mismatch = with_reason("ClusterIdMismatch")
    purge = wait_for(stack, "recordpurge", team_a, "elsewhere", mismatch, timeout=60)
    assert purge["status"]["phase"] not in ("Succeeded", "PartiallySucceeded")
    assert "NotThisClusterAtAll0" in ready(purge)["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_a_bound_namespace_purges_and_cuts_its_allowed_topics_only(
    stack: Stack, teams: tuple[str, str], bindings: list[str], kafka: Kafka
) -> None:
    team_a, _ = teams
    mine, theirs = kafka.topic({0: 40, 1: 40}), kafka.topic({0: 40})
    entry = own_topics(team_a, ["purge", "retention"], mine)
    ref = {"clusterRef": bind(stack, bindings, team_a, cluster_id(kafka.admin), tenants=entry)}
    apply_purge(stack, team_a, "trim", cluster=ref, partitions=cuts(mine, {0: 25}))
    apply_purge(stack, team_a, "reach", cluster=ref, partitions=cuts(theirs, {0: 25}))
    # A pattern matching every topic cuts only what the binding allows.
    apply_policy(
        stack, team_a, "all", cluster=ref, topics={"pattern": ".*"}, deleteBefore=EVERYTHING
    )
    trim = purge_finished(stack, team_a, "trim")
    assert trim["status"]["phase"] == "Succeeded", trim["status"]
    reach = purge_finished(stack, team_a, "reach")
    assert (reach["status"]["phase"], ready(reach)["reason"]) == ("Failed", "NotPermitted")
    assert "spec.partitions[0].topic" in ready(reach)["message"]

    policy = wait_for(stack, "retentionpolicy", team_a, "all", completed, timeout=120)
    assert ready(policy)["status"] == "True", policy["status"]
    assert log_starts(kafka.admin, mine, 2) == [40, 40]
    assert log_starts(kafka.admin, theirs, 1) == [0]
    assert get(stack, "retentionpolicy", team_a, "all")["status"]["topicCount"] == 1


def test_the_hostile_tenancy_corpus_is_refused_naming_each_field_and_deletes_nothing(
    stack: Stack, teams: tuple[str, str], kafka: Kafka
) -> None:
    """tests/helpers/hostile.py's TENANCY entries, applied in a namespace its binding
    admits: the API server refuses some (CEL), the strict operator the rest, each naming
    the field; the topic they aim at keeps every record."""
    team_a, _ = teams
    spec = {
        **tenancy_binding(team_a, cluster_id(kafka.admin)),
        "connection": {"bootstrapServers": kafka.bootstrap},
    }
    apply(stack, resource("KafkaClusterBinding", BINDING_NAME, spec=spec))
    try:
        if TOPIC not in kafka.admin.list_topics(timeout=10).topics:
            # As test_hostile_specs makes it (3 partitions): whichever runs first.
            kafka.admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(timeout=30)
        produce(kafka.bootstrap, TOPIC, {0: 20})
        before = log_starts(kafka.admin, TOPIC, 1)
        accepted: dict[str, tuple[str, str]] = {}
        for entry in TENANCY:
            done = stack.kubectl(
                "apply", "-f", "-", stdin=json.dumps(manifest(entry, team_a)), check=False
            )
            if done.returncode != 0:
                assert "spec" in done.stderr, (entry.name, done.stderr)
            else:
                accepted[entry.name] = (entry.kind, entry.field)

        def named(kind: str, name: str, field: str) -> bool:
            obj = get(stack, kind.lower(), team_a, name)
            conditions = obj.get("status", {}).get("conditions") or []
            return any(
                c["type"] == "Ready" and c["reason"] == "NotPermitted" and field in c["message"]
                for c in conditions
            )

        deadline = time.monotonic() + 120
        waiting = dict(accepted)
        while waiting and time.monotonic() < deadline:
            for name, (kind, field) in list(waiting.items()):
                if named(kind, name, field):
                    del waiting[name]
            time.sleep(1)
        assert waiting == {}, "accepted by the API server and not refused naming the field"
        assert log_starts(kafka.admin, TOPIC, 1) == before
        print(f"tenancy corpus: {len(TENANCY)} specs, {len(accepted)} refused by the operator")
    finally:
        stack.kubectl("delete", "kafkaclusterbinding", BINDING_NAME, check=False)


def test_a_bound_namespace_cleans_orphans_on_the_brokers_its_binding_names(
    stack: Stack,
    teams: tuple[str, str],
    bindings: list[str],
    isolated_cluster: KafkaCluster,
    isolated_kafka: Kafka,
    planted: list[Path],
) -> None:
    """The positive path of orphan cleanup under strict tenancy: the binding says where
    the log dirs are (here the brokers' own, access local) and the floors; the policy
    says only how long to wait. The copy on broker 2 goes, after its log dir's
    meta.properties named the binding's cluster id; the live partition stays. On the
    isolated cluster: its policy removes any orphan on the brokers."""
    team_a, _ = teams
    kafka = isolated_kafka
    topic = f"tenancy-orphan-{uuid.uuid4().hex[:6]}"
    copy, live = orphan_copy(isolated_cluster, kafka, topic, 30, planted)
    binding = bind(
        stack,
        bindings,
        team_a,
        cluster_id(kafka.admin),
        kafka.bootstrap,
        tenants=[
            {
                "namespaces": [team_a],
                "operations": ["orphanCleanup"],
                "topics": {"allow": ["tenancy-orphan-.*"]},
            }
        ],
        brokers={"access": "local"},
        orphanCleanup={"minRemovalDelay": "5s", "minAge": "1s"},
    )
    apply_policy(
        stack,
        team_a,
        "orphans",
        cluster={"clusterRef": binding},
        orphanPartitions={"enabled": True, "removalDelay": "5s", "minAge": "1s"},
    )

    def removed(o: dict[str, Any]) -> bool:
        return any(
            e["broker"] == 2 and e["name"] == copy.name and e["state"] == "Removed"
            for e in o.get("status", {}).get("orphans", [])
        )

    wait_for(stack, "retentionpolicy", team_a, "orphans", removed, timeout=120)
    assert not copy.exists()
    planted.remove(copy)
    assert digest(isolated_cluster.node(1).log_dir / f"{topic}-0") == live


def test_a_policy_refused_by_its_binding_freezes_no_other_tenants_cuts(
    stack: Stack, teams: tuple[str, str], bindings: list[str], kafka: Kafka
) -> None:
    """Team A names team B's binding with a pattern matching every topic and a group that
    never commits: were it counted as an overlapping policy, team B's cuts would be held
    at the log start. Refused, it holds nobody back, and team B's status never names it."""
    team_a, team_b = teams
    binding = bind(stack, bindings, team_b, cluster_id(kafka.admin))
    topic = kafka.topic({0: 30})
    apply_policy(
        stack,
        team_a,
        "freeze",
        cluster={"clusterRef": binding},
        topics={"pattern": ".*"},
        deleteConsumed={"groups": ["never-commits"]},
    )
    policy_refused(stack, team_a, "freeze", "NotPermitted")
    cut_all(stack, team_b, "trim", {"clusterRef": binding}, topic)

    trimmed = wait_for(stack, "retentionpolicy", team_b, "trim", completed, timeout=120)
    assert log_starts(kafka.admin, topic, 1) == [30]
    assert team_a not in json.dumps(trimmed["status"])


def test_client_properties_that_reach_beyond_kafka_are_refused_by_name(
    stack: Stack, e2e_ns: str, kafka: Kafka
) -> None:
    """Open tenancy (the session's operator): a tenant's own Secret asks librdkafka to
    fetch tokens from a URL and to load a provider. Refused naming the property, before
    any connection; nothing is deleted."""
    topic = kafka.topic({0: 20})
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "reach-out", "namespace": e2e_ns},
        "stringData": {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.oauthbearer.token.endpoint.url": "http://169.254.169.254/token",
        },
    }
    apply(stack, secret)
    cluster = {"bootstrapServers": kafka.bootstrap, "clientConfigSecret": "reach-out"}
    purge_all(stack, e2e_ns, "reach-out", cluster, topic)
    refused = with_reason("SecretUnavailable")
    purge = wait_for(stack, "recordpurge", e2e_ns, "reach-out", refused, timeout=60)
    assert "sasl.oauthbearer.token.endpoint.url" in ready(purge)["message"]
    assert log_starts(kafka.admin, topic, 1) == [0]


def test_tenant_entries_own_their_topics_and_a_reader_holds_by_its_groups_named(
    stack: Stack,
    teams: tuple[str, str],
    bindings: list[str],
    strict_operator: OperatorProcess,
    kafka: Kafka,
) -> None:
    """One binding, three namespaces: team A owns topic A, team B topic B, and a reader
    namespace may protect topic A. Team B's pattern over every topic cuts only topic B.
    The reader cannot delete from topic A (maxRetention refused), its group that never
    committed does not freeze team A, and its group that read 10 records holds team A's
    cut at 10, which team A's status says by namespace and group."""
    team_a, team_b = teams
    reader = f"{PREFIX}-r-{uuid.uuid4().hex[:6]}"
    create_watched_namespace(stack, strict_operator, reader)
    try:
        topic_a, topic_b = kafka.topic({0: 30}), kafka.topic({0: 30})
        group = f"reader-{uuid.uuid4().hex[:6]}"
        commit(kafka.bootstrap, group, topic_a, {0: 10})
        tenants = [
            *own_topics(team_a, ["retention"], topic_a),
            *own_topics(team_b, ["retention"], topic_b),
            *own_topics(reader, ["protect"], topic_a),
        ]
        ref = {
            "clusterRef": bind(stack, bindings, team_a, cluster_id(kafka.admin), tenants=tenants)
        }
        apply_policy(
            stack, reader, "wipe", cluster=ref, topics={"names": [topic_a]}, maxRetention="1ms"
        )
        apply_policy(
            stack,
            reader,
            "freeze",
            cluster=ref,
            topics={"names": [topic_a]},
            deleteConsumed={"groups": ["never-commits"]},
        )
        condition = policy_refused(stack, reader, "wipe", "NotPermitted")
        assert "spec.maxRetention" in condition["message"]
        apply_policy(
            stack, team_b, "all", cluster=ref, topics={"pattern": ".*"}, deleteBefore=EVERYTHING
        )
        wait_for(stack, "retentionpolicy", team_b, "all", completed, timeout=120)
        assert log_starts(kafka.admin, topic_b, 1) == [30]
        assert log_starts(kafka.admin, topic_a, 1) == [0]

        # The reader's group that never committed holds nothing: team A cuts everything.
        # (Its policy ran first, so the operator knows it when team A's runs.)
        wait_for(stack, "retentionpolicy", reader, "freeze", completed, timeout=120)
        cut_all(stack, team_a, "trim", ref, topic_a)
        wait_for(stack, "retentionpolicy", team_a, "trim", completed, timeout=120)
        assert log_starts(kafka.admin, topic_a, 1) == [30]

        # A fresh topic A' the reader's group has read 10 records of: held at 10, named.
        topic_c = kafka.topic({0: 30})
        commit(kafka.bootstrap, group, topic_c, {0: 10})
        tenants[0]["topics"]["allow"].append(re.escape(topic_c))
        tenants[2]["topics"]["allow"].append(re.escape(topic_c))
        apply(
            stack,
            tenancy.binding(
                ref["clusterRef"],
                cluster_id(kafka.admin),
                stack.kafka.bootstrap_servers,
                team_a,
                tenants=tenants,
            ),
        )
        apply_policy(
            stack,
            reader,
            "reads",
            cluster=ref,
            topics={"names": [topic_c]},
            deleteConsumed={"groups": [group]},
        )
        # The reader's own policy deleted nothing and says why.
        reads = wait_for(stack, "retentionpolicy", reader, "reads", completed, timeout=120)
        assert "deletes nothing" in ready(reads)["message"]
        cut_all(stack, team_a, "trim-c", ref, topic_c)

        def held(o: dict[str, Any]) -> bool:
            return any(t.get("heldBackBy") for t in o.get("status", {}).get("topics") or [])

        trimmed = wait_for(stack, "retentionpolicy", team_a, "trim-c", held, timeout=120)
        assert log_starts(kafka.admin, topic_c, 1) == [10]
        topics = {t["name"]: t for t in trimmed["status"]["topics"]}
        assert topics[topic_c]["heldBackBy"] == [
            {"namespace": reader, "group": group, "partitions": 1}
        ]
    finally:
        stack.kubectl("delete", "retentionpolicies", "--all", "-n", reader, check=False)
        stack.kubectl("delete", "namespace", reader, "--wait=false", check=False)
