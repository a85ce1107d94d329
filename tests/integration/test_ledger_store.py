"""The ledger's ConfigMaps on the real API server: a stale resourceVersion is refused
(LedgerConflict), two writers recording at once into the same shards lose no entry,
100,000 digests (ten erasures of 10,000) keep every shard object far below the limits,
two namespaces' erasures land in ConfigMaps of their own, and a shard naming another
namespace than its ConfigMap is refused."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from devstack.stack import Stack
from kafka_retention.adapters.ledger_store import (
    LEDGER_LABEL,
    NAMESPACE_ANNOTATION,
    NAMESPACE_LABEL,
    SHARD_LABEL,
    KubeLedger,
)
from kafka_retention.core.ledger import (
    DATA_KEY,
    MAX_SHARD_BYTES,
    LedgerConflict,
    LedgerError,
    cluster_label,
    encode_shard,
    namespace_label,
)
from kafka_retention.core.receipts import receipt, sign
from kafka_retention.services.erasure import ledger as service
from tests.helpers.ledgers import KEY, NAMESPACE, entry

pytestmark = pytest.mark.stack

CLUSTER = "prod-eu"
API_SERVER_LIMIT = 1024 * 1024  # a ConfigMap's data


@pytest.fixture
def api(stack: Stack) -> Iterator[kubernetes.client.ApiClient]:
    client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(stack.kube.kubeconfig)
    )
    yield client
    client.close()


def signed(
    digests: list[str], uid: str, name: str = "erase", namespace: str = NAMESPACE
) -> dict[str, object]:
    doc = receipt(name, namespace, uid, "cluster-id-A", [], "2026-11-29T06:00:00Z", digests=digests)
    return sign(doc, KEY)


def hexes(prefix: str, tag: str, count: int) -> list[str]:
    return [
        prefix + hashlib.sha256(f"{tag} {i}".encode()).hexdigest()[len(prefix) :]
        for i in range(count)
    ]


def test_a_stale_resource_version_or_a_second_create_is_a_conflict(
    namespace: str, api: kubernetes.client.ApiClient
) -> None:
    ledger = KubeLedger(namespace, api)
    first = [entry(hexes("ab", "a", 1)[0])]
    ns = NAMESPACE
    ledger.write(CLUSTER, ns, "ab", encode_shard(CLUSTER, ns, "ab", first), None)
    with pytest.raises(LedgerConflict):
        ledger.write(CLUSTER, ns, "ab", encode_shard(CLUSTER, ns, "ab", first), None)
    read = ledger.read(CLUSTER, ns, "ab")
    assert read is not None
    assert list(read.entries) == first
    second = [*first, entry(hexes("ab", "b", 1)[0])]
    ledger.write(CLUSTER, ns, "ab", encode_shard(CLUSTER, ns, "ab", second), read.version)
    # The version read before the write above is stale now.
    with pytest.raises(LedgerConflict):
        ledger.write(CLUSTER, ns, "ab", encode_shard(CLUSTER, ns, "ab", first), read.version)
    again = ledger.read(CLUSTER, ns, "ab")
    assert again is not None
    assert list(again.entries) == second
    assert ledger.read("another-cluster", ns, "ab") is None
    assert ledger.read(CLUSTER, "tenant-b", "ab") is None


def test_two_writers_recording_at_once_into_the_same_shards_lose_no_entry(
    namespace: str, api: kubernetes.client.ApiClient, stack: Stack
) -> None:
    rounds = 12
    barrier = threading.Barrier(2)
    conflicts: list[int] = []
    errors: list[BaseException] = []
    wanted: set[str] = set()
    plans = {
        w: [hexes("ab", f"w{w} r{r}", 5) + hexes("cd", f"w{w} r{r}", 5) for r in range(rounds)]
        for w in range(2)
    }
    for plan in plans.values():
        for ds in plan:
            wanted.update(ds)

    def writer(w: int) -> None:
        client = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(stack.kube.kubeconfig)
        )
        ledger = KubeLedger(namespace, client)
        try:
            for r, ds in enumerate(plans[w]):
                barrier.wait(30)
                done = service.record(ledger, signed(ds, f"uid-{w}-{r}"), CLUSTER)
                conflicts.append(done.conflicts)
        except BaseException as err:  # reported by the test thread
            errors.append(err)
            barrier.abort()
        finally:
            client.close()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    stored = KubeLedger(namespace, api).read_all(CLUSTER)
    assert {s.shard for s in stored} == {"ab", "cd"}
    assert {e.digest for s in stored for e in s.entries} == wanted
    print(f"conflicts retried: {sum(conflicts)} in {len(conflicts)} records")


def test_100000_digests_keep_every_shard_object_far_below_the_limits(
    namespace: str, api: kubernetes.client.ApiClient
) -> None:
    ledger = KubeLedger(namespace, api)
    started = time.monotonic()
    for r in range(10):
        ds = [hashlib.sha256(f"key {r} {i}".encode()).hexdigest() for i in range(10_000)]
        # The longest names an erasure can have: the worst case for an entry's size.
        done = service.record(ledger, signed(ds, f"uid-{r:032d}", "e" * 253), CLUSTER)
        assert done.entries == 10_000
    took = time.monotonic() - started
    core = kubernetes.client.CoreV1Api(api)
    found = core.list_namespaced_config_map(
        namespace, label_selector=f"{LEDGER_LABEL}={cluster_label(CLUSTER)}"
    ).items
    sizes = [len((cm.data or {})[DATA_KEY].encode()) for cm in found]
    stored = ledger.read_all(CLUSTER)
    counts = [len(s.entries) for s in stored]
    assert len(found) == 256
    assert sum(counts) == 100_000
    assert max(sizes) < MAX_SHARD_BYTES // 2 < API_SERVER_LIMIT
    print(
        f"100,000 digests in {took:.1f} s: at most {max(counts)} entries and {max(sizes)} "
        f"bytes per shard (mean {sum(sizes) // len(sizes)})"
    )


def test_two_namespaces_erasures_land_in_configmaps_of_their_own(
    namespace: str, api: kubernetes.client.ApiClient
) -> None:
    ledger = KubeLedger(namespace, api)
    # The same shard prefix, and one digest erased in both namespaces.
    shared = hexes("ab", "shared", 1)
    mine, theirs = shared + hexes("ab", "a", 3), shared + hexes("ab", "b", 2)
    service.record(ledger, signed(mine, "uid-a"), CLUSTER)
    service.record(ledger, signed(theirs, "uid-b", namespace="tenant-b"), CLUSTER)
    core = kubernetes.client.CoreV1Api(api)
    listed = core.list_namespaced_config_map(
        namespace, label_selector=f"{LEDGER_LABEL}={cluster_label(CLUSTER)}"
    )
    found: list[Any] = api.sanitize_for_serialization(listed)["items"]  # type: ignore[no-untyped-call]
    by_ns = {cm["metadata"]["annotations"][NAMESPACE_ANNOTATION]: cm for cm in found}
    assert sorted(by_ns) == [NAMESPACE, "tenant-b"]
    assert len({cm["metadata"]["name"] for cm in found}) == 2
    for ns, cm in by_ns.items():
        assert cm["metadata"]["labels"][NAMESPACE_LABEL] == namespace_label(ns)
        assert cm["metadata"]["labels"][SHARD_LABEL] == "ab"
        assert len(cm["metadata"]["name"]) <= 63
    everyone = ledger.read_all(CLUSTER)
    assert [(s.namespace, s.shard) for s in everyone] == [(NAMESPACE, "ab"), ("tenant-b", "ab")]
    assert {e.digest for s in everyone if s.namespace == NAMESPACE for e in s.entries} == set(mine)
    (only,) = ledger.read_all(CLUSTER, "tenant-b")
    assert {(e.digest, e.namespace) for e in only.entries} == {(d, "tenant-b") for d in theirs}
    assert ledger.read_all(CLUSTER, "tenant-c") == []


def test_a_shard_whose_json_names_another_namespace_is_refused(
    namespace: str, api: kubernetes.client.ApiClient
) -> None:
    ledger = KubeLedger(namespace, api)
    theirs = [entry(hexes("ab", "b", 1)[0], namespace="tenant-b")]
    # tenant-b's shard stored under tenant-a's ConfigMap (a copy, or a name collision).
    ledger.write(CLUSTER, NAMESPACE, "ab", encode_shard(CLUSTER, "tenant-b", "ab", theirs), None)
    with pytest.raises(LedgerError, match="namespace"):
        ledger.read(CLUSTER, NAMESPACE, "ab")
    with pytest.raises(LedgerError, match="namespace"):
        ledger.read_all(CLUSTER)


def test_a_shard_of_the_layout_before_namespaces_is_refused_not_skipped(
    namespace: str, api: kubernetes.client.ApiClient
) -> None:
    """A ConfigMap named and labelled as the first slice wrote shards (no namespace): a
    reader that skipped it would check restores against part of the ledger."""
    core = kubernetes.client.CoreV1Api(api)
    name = f"kafka-retention-ledger-{cluster_label(CLUSTER)}-ab"
    body: Any = {
        "metadata": {
            "name": name,
            "labels": {LEDGER_LABEL: cluster_label(CLUSTER), SHARD_LABEL: "ab"},
        },
        "data": {DATA_KEY: "{}"},
    }
    core.create_namespaced_config_map(namespace, body)
    with pytest.raises(LedgerError, match=name):
        KubeLedger(namespace, api).read_all(CLUSTER)
