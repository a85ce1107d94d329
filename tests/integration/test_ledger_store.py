"""The ledger's ConfigMaps on the real API server: a stale resourceVersion is refused
(LedgerConflict), two writers recording at once into the same shards lose no entry, and
100,000 digests (ten erasures of 10,000) keep every shard object far below the limits."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator

import kubernetes
import pytest

from devstack.stack import Stack
from kafka_retention.adapters.ledger_store import LEDGER_LABEL, KubeLedger
from kafka_retention.core.ledger import (
    DATA_KEY,
    MAX_SHARD_BYTES,
    LedgerConflict,
    cluster_label,
    encode_shard,
)
from kafka_retention.core.receipts import receipt, sign
from kafka_retention.services.erasure import ledger as service
from tests.helpers.ledgers import KEY, entry

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


def signed(digests: list[str], uid: str, name: str = "erase") -> dict[str, object]:
    doc = receipt(
        name, "tenant-a", uid, "cluster-id-A", [], "2026-11-29T06:00:00Z", digests=digests
    )
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
    ledger.write(CLUSTER, "ab", encode_shard(CLUSTER, "ab", first), None)
    with pytest.raises(LedgerConflict):
        ledger.write(CLUSTER, "ab", encode_shard(CLUSTER, "ab", first), None)
    read = ledger.read(CLUSTER, "ab")
    assert read is not None
    assert list(read.entries) == first
    second = [*first, entry(hexes("ab", "b", 1)[0])]
    ledger.write(CLUSTER, "ab", encode_shard(CLUSTER, "ab", second), read.version)
    # The version read before the write above is stale now.
    with pytest.raises(LedgerConflict):
        ledger.write(CLUSTER, "ab", encode_shard(CLUSTER, "ab", first), read.version)
    again = ledger.read(CLUSTER, "ab")
    assert again is not None
    assert list(again.entries) == second
    assert ledger.read("another-cluster", "ab") is None


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
