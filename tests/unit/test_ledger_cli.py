"""`kafka-retention ledger list` and `ledger check` over a ledger store as strict as the
API server and a cluster fake that reads partitions whole: exit statuses, what is
printed, and the RecordErasure printed for re-erasure."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import pytest
import yaml

from kafka_retention.cli import build_parser
from kafka_retention.cli import ledger as cli
from kafka_retention.core.erasure import parse_erasure_spec
from kafka_retention.core.erasure_scan import DigestHits, PartitionScan
from kafka_retention.core.facts import TopicPartition
from kafka_retention.core.failures import KafkaFailure, KafkaUnavailable, WriteRefused
from kafka_retention.services.erasure import ledger as service
from tests.helpers.ledgers import (
    CLUSTER,
    NAMESPACE,
    NeverCuts,
    StrictStore,
    no_pause,
    signed_receipt,
)

KEY = b"customer-4711@example.com"
DIGEST = hashlib.sha256(KEY).hexdigest()
OTHER = hashlib.sha256(b"customer-4712@example.com").hexdigest()


class Topics(NeverCuts):
    """Topics as lists of record keys per partition; scans read each range whole."""

    def __init__(self, topics: Mapping[str, list[list[bytes]]], cluster_id: str = "restored"):
        self.topics = {t: [list(p) for p in ps] for t, ps in topics.items()}
        self.id = cluster_id
        self.scanned: list[TopicPartition] = []

    def cluster_id(self) -> str:
        return self.id

    def topic_names(self) -> list[str]:
        return sorted(self.topics)

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int] | KafkaFailure]:
        return {
            t: list(range(len(self.topics[t])))
            if t in self.topics
            else KafkaFailure("UNKNOWN_TOPIC_OR_PART", "no such topic", False)
            for t in topics
        }

    def topic_configs(self, topics: Iterable[str]) -> dict[str, Any]:
        return {t: {"cleanup.policy": "delete"} for t in topics}

    def log_bounds(self, tps: Iterable[TopicPartition]) -> tuple[dict[Any, Any], dict[Any, Any]]:
        wanted = list(tps)
        return (
            dict.fromkeys(wanted, 0),
            {tp: len(self.topics[tp.topic][tp.partition]) for tp in wanted},
        )

    def scan_keys(
        self, ranges: Mapping[TopicPartition, tuple[int, int]], digests: AbstractSet[str]
    ) -> dict[TopicPartition, PartitionScan | KafkaFailure]:
        out: dict[TopicPartition, PartitionScan | KafkaFailure] = {}
        for tp, (start, end) in ranges.items():
            self.scanned.append(tp)
            result = PartitionScan(tp, start, end, examined=end - start)
            for offset in range(start, end):
                d = hashlib.sha256(self.topics[tp.topic][tp.partition][offset]).hexdigest()
                if d in digests:
                    hits = result.hits.setdefault(d, DigestHits())
                    hits.records += 1
                    hits.values += 1
                    hits.first_offset = offset if hits.first_offset < 0 else hits.first_offset
                    hits.last_offset = offset
            out[tp] = result
        return out

    def write_tombstones(self, writes: Iterable[Any]) -> dict[Any, Any]:
        raise AssertionError("a check never writes")


def ledger_with(*digests: str) -> StrictStore:
    store = StrictStore()
    service.record(
        store, signed_receipt(list(digests), {DIGEST: ["orders"]}), CLUSTER, pause=no_pause
    )
    return store


def check(store: StrictStore, kafka: Topics, *topics: str, **kw: Any) -> tuple[int, str]:
    """run_check's exit status and stdout (stderr: capsys)."""
    out = io.StringIO()
    code = cli.run_check(
        store, lambda: kafka, CLUSTER, list(topics), bootstrap="k:9092", out=out, **kw
    )
    return code, out.getvalue()


RESTORED = {"orders": [[b"a", KEY, b"b", KEY], [b"c"], [KEY]], "clean": [[b"a"], [b"b"]]}


def test_a_restored_topic_holding_an_erased_key_is_found_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kafka = Topics(RESTORED)
    code, out = check(ledger_with(DIGEST, OTHER), kafka, "orders")
    assert code == 1
    assert (
        f"found orders partition 0 offsets 1..3 (2 records, 2 with a value) digest {DIGEST}" in out
    )
    assert "found orders partition 2 offsets 0..0" in out
    assert "erased before by tenant-a/erase-alice" in out
    assert "1 of 2 erased digests found in 3 partitions of 1 topics (6 records read)" in out
    assert KEY.decode() not in out + capsys.readouterr().err


def test_a_digest_counts_only_in_topics_its_erasure_named_or_their_mirrors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tenant can record any digest by "erasing" it on a topic of its own: a check of
    another tenant's topic must not turn that into an erasure there. The ledger's entry
    for DIGEST names "orders" (ledger_with); MirrorMaker names a mirror "<alias>.orders"."""
    elsewhere = {"payments": [[KEY, b"a"]], "primary.orders": [[b"b", KEY]]}
    code, out = check(ledger_with(DIGEST), Topics(elsewhere), "payments")
    assert code == 0
    assert "none of 1 erased digests found" in out
    assert "1 findings of digests erased from other topics left out" in capsys.readouterr().err
    code, out = check(ledger_with(DIGEST), Topics(elsewhere), "payments", any_topic=True)
    assert code == 1
    assert (
        f"found payments partition 0 offsets 0..0 (1 records, 1 with a value) digest {DIGEST}"
        in out
    )
    code, out = check(ledger_with(DIGEST), Topics(elsewhere), "primary.orders")
    assert code == 1
    assert "found primary.orders partition 0 offsets 1..1" in out


def test_an_entry_naming_more_topics_than_it_lists_counts_only_in_those_it_lists(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tenant's pattern erasure over 51 topics of its own lists 50: its digests must
    not count in another tenant's "payments" because the entry says "and 1 more"."""
    many = {DIGEST: [f"own-{i}" for i in range(51)]}
    store = StrictStore()
    service.record(store, signed_receipt([DIGEST], many), CLUSTER, pause=no_pause)
    (entry,) = [e for shard in store.read_all(CLUSTER, NAMESPACE) for e in shard.entries]
    assert entry.more_topics == 1
    code, _ = check(store, Topics({"payments": [[KEY]]}), "payments")
    assert code == 0
    assert "1 findings of digests erased from other topics left out" in capsys.readouterr().err


def test_a_clean_topic_exits_0_having_read_every_partition() -> None:
    kafka = Topics(RESTORED)
    code, out = check(ledger_with(DIGEST), kafka, "clean")
    assert code == 0
    assert "none of 1 erased digests found in 2 partitions of 1 topics (2 records read)" in out
    assert kafka.scanned == [TopicPartition("clean", 0), TopicPartition("clean", 1)]


def test_a_check_against_a_restore_into_a_new_cluster_id_notes_it_and_still_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _ = check(ledger_with(DIGEST), Topics(RESTORED, "brand-new-id"), "orders")
    assert code == 1
    assert (
        "cluster id(s) cluster-id-A; this cluster's id is brand-new-id" in capsys.readouterr().err
    )


def test_an_empty_ledger_is_an_error_not_a_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = check(StrictStore(), Topics(RESTORED), "orders")
    assert code == 2
    assert "no digest is recorded for cluster prod-eu" in capsys.readouterr().err


def test_a_missing_topic_or_an_unreachable_cluster_is_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert check(ledger_with(DIGEST), Topics(RESTORED), "orders", "nope")[0] == 2
    assert "topic nope: UNKNOWN_TOPIC_OR_PART" in capsys.readouterr().err

    class Down(Topics):
        def log_bounds(self, tps: Iterable[TopicPartition]) -> Any:
            raise KafkaUnavailable("list offsets: timed out")

    assert check(ledger_with(DIGEST), Down(RESTORED), "orders")[0] == 2
    assert "timed out" in capsys.readouterr().err


def test_a_ledger_the_api_server_refuses_to_read_is_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Refusing(StrictStore):
        def read_all(self, cluster: str, namespace: str | None = None) -> list[Any]:
            raise WriteRefused(403, "Forbidden")

    assert check(Refusing(), Topics(RESTORED), "orders")[0] == 2
    assert "HTTP 403 Forbidden" in capsys.readouterr().err


def test_print_erasure_writes_a_recorderasure_of_the_found_digests_and_findings_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    kafka = Topics(RESTORED)
    code, out = check(
        ledger_with(DIGEST, OTHER), kafka, "orders", "clean", print_erasure="tenant-a/again"
    )
    assert code == 1
    (doc,) = list(yaml.safe_load_all(out))
    assert doc["kind"] == "RecordErasure"
    assert doc["metadata"] == {"name": "again", "namespace": "tenant-a"}
    assert doc["spec"]["keys"] == [{"sha256": DIGEST}]
    assert doc["spec"]["topics"] == {"names": ["orders"]}
    assert doc["spec"]["cluster"] == {"clusterRef": CLUSTER}
    parse_erasure_spec(doc["spec"])
    assert "found orders partition 0" in capsys.readouterr().err


def test_print_erasure_under_an_inline_clusters_ledger_names_the_bootstrap_servers() -> None:
    found = [cli.Found(TopicPartition("t", 0), DIGEST, 0, 0, 1, 1, ())]
    (doc,) = cli.erasure_manifests("ns", "n", "inline k1:9092,k2:9092", "k1:9092", found)
    assert doc["spec"]["cluster"] == {"bootstrapServers": "k1:9092"}


def test_print_erasure_splits_beyond_the_keys_one_erasure_takes() -> None:
    found = [
        cli.Found(TopicPartition("t", 0), hashlib.sha256(b"%d" % i).hexdigest(), 0, 0, 1, 1, ())
        for i in range(10_001)
    ]
    docs = cli.erasure_manifests("ns", "n", CLUSTER, "k:9092", found)
    assert [d["metadata"]["name"] for d in docs] == ["n", "n-2"]
    assert [len(d["spec"]["keys"]) for d in docs] == [10_000, 1]


def test_print_erasure_needs_namespace_and_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert check(ledger_with(DIGEST), Topics(RESTORED), "orders", print_erasure="again")[0] == 2
    assert "NAMESPACE/NAME" in capsys.readouterr().err


def test_check_json_lists_each_finding() -> None:
    code, out = check(ledger_with(DIGEST), Topics(RESTORED), "orders", output="json")
    assert code == 1
    doc = json.loads(out)
    assert doc["clusterId"] == "restored"
    assert doc["ledgerClusterIds"] == ["cluster-id-A"]
    assert [(f["partition"], f["firstOffset"], f["lastOffset"]) for f in doc["found"]] == [
        (0, 1, 3),
        (2, 0, 0),
    ]


def test_list_prints_each_entry_and_json_the_same_entries() -> None:
    store = ledger_with(DIGEST, OTHER)
    out = io.StringIO()
    assert cli.run_list(store, CLUSTER, "text", out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["DIGEST", "TOPICS", "ERASURE", "COMPLETED", "CLUSTER-ID"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows[DIGEST] == [
        "orders",
        "tenant-a/erase-alice",
        "2026-11-29T06:00:00Z",
        "cluster-id-A",
    ]
    # Found nowhere: the topics the erasure scanned, where the receipt vouches it is not.
    assert rows[OTHER][0] == "orders,scanned-only"
    out = io.StringIO()
    assert cli.run_list(store, CLUSTER, "json", out) == 0
    doc = json.loads(out.getvalue())
    assert sorted(e["digest"] for e in doc["entries"]) == sorted([DIGEST, OTHER])


def test_the_command_line_reaches_list_and_check() -> None:
    args = build_parser().parse_args(
        ["ledger", "check", "--cluster", "c", "--topic", "a", "b", "--bootstrap-server", "k:9092"]
    )
    assert args.func is cli.check_command
    assert (args.cluster, args.topic, args.operator_namespace) == (
        "c",
        ["a", "b"],
        "kafka-retention-system",
    )
    args = build_parser().parse_args(["ledger", "list", "--cluster", "c", "-o", "json"])
    assert args.func is cli.list_command
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ledger", "check", "--cluster", "c", "--topic", "a"])


def two_namespaces() -> StrictStore:
    """DIGEST erased by tenant-a's erasure, OTHER by tenant-b's, both found in "orders",
    on the same cluster: two namespaces' shards."""
    store = ledger_with(DIGEST)
    theirs = signed_receipt(
        [OTHER], {OTHER: ["orders"]}, uid="uid-b", name="erase-bob", namespace="tenant-b"
    )
    service.record(store, theirs, CLUSTER, pause=no_pause)
    return store


def test_list_shows_every_namespaces_entries_and_namespace_narrows_to_one() -> None:
    store = two_namespaces()
    out = io.StringIO()
    assert cli.run_list(store, CLUSTER, "text", out) == 0
    rows = {line.split()[0]: line.split()[2] for line in out.getvalue().splitlines()[1:]}
    assert rows == {DIGEST: "tenant-a/erase-alice", OTHER: "tenant-b/erase-bob"}
    out = io.StringIO()
    assert cli.run_list(store, CLUSTER, "json", out, namespace="tenant-b") == 0
    doc = json.loads(out.getvalue())
    assert doc["namespace"] == "tenant-b"
    assert [e["digest"] for e in doc["entries"]] == [OTHER]


def test_check_finds_every_namespaces_digests_and_namespace_narrows_to_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    restored = {"orders": [[KEY, hashlib.sha256(b"x").digest()]]}
    both = {"orders": [[KEY, b"customer-4712@example.com"]]}
    code, out = check(two_namespaces(), Topics(both), "orders")
    assert code == 1
    assert "2 of 2 erased digests found" in out
    assert "erased before by tenant-b/erase-bob" in out
    code, out = check(two_namespaces(), Topics(both), "orders", namespace="tenant-b")
    assert code == 1
    assert "1 of 1 erased digests found" in out
    assert DIGEST not in out
    code, out = check(two_namespaces(), Topics(restored), "orders", namespace="tenant-b")
    assert code == 0
    code, _ = check(two_namespaces(), Topics(restored), "orders", namespace="tenant-c")
    assert code == 2
    assert "by erasures in namespace tenant-c" in capsys.readouterr().err


def test_the_command_line_passes_namespace_to_list(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = two_namespaces()
    monkeypatch.setattr(cli, "_ledger", lambda _: store)
    line = ["ledger", "list", "--cluster", CLUSTER, "-o", "json"]
    args = build_parser().parse_args([*line, "--namespace", "tenant-a"])
    assert args.func(args) == 0
    assert [e["digest"] for e in json.loads(capsys.readouterr().out)["entries"]] == [DIGEST]
    args = build_parser().parse_args(line)
    assert args.namespace is None
    assert args.func(args) == 0
    assert len(json.loads(capsys.readouterr().out)["entries"]) == 2
