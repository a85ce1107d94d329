"""The ledger of erased digests: entries from a signed receipt, sharding, merging, bounds
(core/ledger.py), and recording through a store as strict as the API server
(services/erasure/ledger.py)."""

from __future__ import annotations

import json

import pytest

from kafka_retention.core import ledger as core
from kafka_retention.core.failures import WriteRefused
from kafka_retention.core.ledger import (
    MAX_ERASURES_PER_DIGEST,
    MAX_SHARD_BYTES,
    MAX_TOPICS_PER_ENTRY,
    LedgerBehind,
    LedgerConflict,
    LedgerEntry,
    LedgerError,
)
from kafka_retention.core.specs import ClusterRef
from kafka_retention.services.erasure import ledger as service
from tests.helpers.ledgers import (
    CLUSTER,
    NAMESPACE,
    StrictStore,
    digest,
    entry,
    no_pause,
    signed_receipt,
)

# --- core ------------------------------------------------------------------------------


def test_entries_name_the_topics_each_digest_was_found_in_and_the_receipt() -> None:
    a, b, c = digest("a"), digest("b"), digest("c")
    signed = signed_receipt([a, b, c], {a: ["orders", "orders-dlq"], b: ["orders"]})
    got = {e.digest: e for e in core.entries_of(signed)}
    assert got[a].topics == ("orders", "orders-dlq")
    assert got[b].topics == ("orders",)
    # Listed but found nowhere: still a digest the receipt vouches for, in every topic its
    # evidence shows scanned.
    assert got[c].topics == ("orders", "orders-dlq", "scanned-only")
    assert {e.receipt_sha256 for e in got.values()} == {signed["sha256"]}
    assert {e.key_id for e in got.values()} == {signed["signature"]["keyId"]}
    assert got[a].cluster_id == "cluster-id-A"
    assert (got[a].namespace, got[a].name, got[a].uid) == ("tenant-a", "erase-alice", "uid-1")
    assert got[a].completed_at == "2026-11-29T06:00:00Z"


def test_an_entry_lists_at_most_max_topics_and_counts_the_rest() -> None:
    a = digest("a")
    topics = [f"t{i:03d}" for i in range(MAX_TOPICS_PER_ENTRY + 7)]
    (got,) = core.entries_of(signed_receipt([a], {a: topics}))
    assert len(got.topics) == MAX_TOPICS_PER_ENTRY
    assert got.more_topics == 7


def test_the_ledger_is_named_by_the_binding_not_by_the_cluster_id() -> None:
    assert core.cluster_name(ClusterRef("", binding="prod-eu"), "tenant-a") == "prod-eu"
    inline = ClusterRef("k1:9092,k2:9092")
    assert core.cluster_name(inline, "tenant-a") == "inline k1:9092,k2:9092"
    # An inline cluster typed as a binding's name keeps a ledger of its own.
    assert core.cluster_name(ClusterRef("prod-eu"), "tenant-a") != "prod-eu"


def test_shards_are_the_first_two_hex_characters_256_of_them() -> None:
    assert len(core.shards()) == 256
    assert core.shards()[0] == "00"
    assert core.shards()[-1] == "ff"
    assert core.shard_of(digest("a")) == digest("a")[:2]
    grouped = core.by_shard(entry(digest(str(i))) for i in range(1000))
    assert all(e.digest.startswith(s) for s, es in grouped.items() for e in es)


def test_merge_is_idempotent_and_order_free() -> None:
    stored = [entry(digest(str(i))) for i in range(5)]
    new = [entry(digest("x"), "u2"), entry(digest("0"), "u2")]
    once = core.merge(stored, new)
    assert core.merge(once, new) == once
    assert core.merge(new, stored) == once
    assert len(once) == 7


def test_merge_keeps_one_entry_per_digest_and_erasure_the_latest_completion() -> None:
    old = entry(digest("a"), "u1", "2026-11-29T06:00:00Z")
    again = entry(digest("a"), "u1", "2026-11-29T07:00:00Z")
    assert core.merge([old], [again]) == [again]
    assert core.merge([again], [old]) == [again]


def test_merge_keeps_the_newest_erasures_of_a_digest_within_the_bound() -> None:
    d = digest("a")
    many = [entry(d, f"u{i:02d}", f"2026-11-29T06:{i:02d}:00Z") for i in range(20)]
    kept = core.merge([], many)
    assert len(kept) == MAX_ERASURES_PER_DIGEST
    assert {e.uid for e in kept} == {f"u{i:02d}" for i in range(20 - MAX_ERASURES_PER_DIGEST, 20)}


def test_a_shard_round_trips_and_refuses_what_it_did_not_write() -> None:
    es = core.merge([], [entry("ab" + digest(str(i))[2:]) for i in range(3)])
    text = core.encode_shard(CLUSTER, NAMESPACE, "ab", es)
    assert core.decode_shard(CLUSTER, NAMESPACE, "ab", text) == es
    with pytest.raises(LedgerError, match="another cluster"):
        core.decode_shard("other", NAMESPACE, "ab", text)
    with pytest.raises(LedgerError, match="another cluster's, namespace's or shard's"):
        core.decode_shard(CLUSTER, NAMESPACE, "cd", text)
    with pytest.raises(LedgerError, match="entries of others"):
        core.encode_shard(CLUSTER, NAMESPACE, "cd", es)
    forged = json.loads(text)
    forged["entries"][0]["digest"] = "alice@example.com"
    with pytest.raises(LedgerError) as err:
        core.decode_shard(CLUSTER, NAMESPACE, "ab", json.dumps(forged))
    # The refusal names the shard and entry, never the value it found there.
    assert "alice" not in str(err.value)


def test_a_shard_beyond_its_bound_is_refused_not_cut() -> None:
    big = [
        LedgerEntry(
            "ab" + digest(str(i))[2:],
            f"u{i}",
            NAMESPACE,
            "n",
            ("t" * 249,) * 4,
            "0" * 64,
            "k" * 16,
            "cid",
            "2026-11-29T06:00:00Z",
        )
        for i in range(1000)
    ]
    with pytest.raises(LedgerError, match=f"beyond {MAX_SHARD_BYTES}"):
        core.encode_shard(CLUSTER, NAMESPACE, "ab", core.merge([], big))


def test_100000_digests_fit_each_shard_far_below_the_limit() -> None:
    """The measure: 100,000 digests, each from an erasure of its own (no entry shares
    anything), three 50-character topics each, the longest names the API allows for the
    erasure. The fullest shard stays under half of MAX_SHARD_BYTES
    (measured: 447 entries, 373,297 bytes)."""
    topics = tuple(f"{'t' * 46}-{i:03d}" for i in range(3))
    entries = [
        LedgerEntry(
            digest(f"key {i}"),
            digest(f"uid {i}")[:8] + "-0000-0000-0000-000000000000",
            "n" * 63,
            "e" * 253,
            topics,
            digest(f"receipt {i}"),
            digest(f"signing key {i}")[:16],
            "Mk3OEXBNR7G9Qcd8ZOHXbA",
            "2026-11-29T06:00:00Z",
        )
        for i in range(100_000)
    ]
    sizes = {
        s: (len(es), len(core.encode_shard(CLUSTER, "n" * 63, s, core.merge([], es)).encode()))
        for s, es in core.by_shard(entries).items()
    }
    most_entries = max(n for n, _ in sizes.values())
    most_bytes = max(b for _, b in sizes.values())
    assert len(sizes) == 256
    assert most_entries < 480
    assert most_bytes < MAX_SHARD_BYTES // 2, (most_entries, most_bytes)


# --- the service, through a store as strict as the API server ---------------------------


def test_record_puts_every_digest_of_the_receipt_in_its_shard() -> None:
    store = StrictStore()
    ds = [digest(str(i)) for i in range(40)]
    done = service.record(store, signed_receipt(ds, {ds[0]: ["orders"]}), CLUSTER, pause=no_pause)
    assert store.digests() == {d: {"uid-1"} for d in ds}
    assert done.entries == 40
    assert done.shards == len({d[:2] for d in ds}) == done.written
    assert all(s.shard == e.digest[:2] for s in store.read_all(CLUSTER) for e in s.entries)
    assert store.digests("another-cluster") == {}


def test_recording_the_same_receipt_again_writes_nothing() -> None:
    store = StrictStore()
    signed = signed_receipt([digest("a"), digest("b")])
    service.record(store, signed, CLUSTER, pause=no_pause)
    writes = store.writes
    again = service.record(store, signed, CLUSTER, pause=no_pause)
    assert again.written == 0
    assert store.writes == writes


def test_two_erasures_finishing_at_once_both_land_in_the_shared_shard() -> None:
    store = StrictStore()
    # Both digests in shard "ab": the second writer lands between the first's read and
    # its write, so the first write names a stale version and must read and merge again.
    a, b = "ab" + digest("a")[2:], "ab" + digest("b")[2:]
    service.record(store, signed_receipt([digest("z")], uid="uid-0"), CLUSTER, pause=no_pause)
    second = signed_receipt([b], uid="uid-2", name="erase-bob")
    store.before_write = lambda: service.record(store, second, CLUSTER, pause=no_pause)
    first = service.record(store, signed_receipt([a], uid="uid-1"), CLUSTER, pause=no_pause)
    assert first.conflicts == 1
    assert store.digests() == {digest("z"): {"uid-0"}, a: {"uid-1"}, b: {"uid-2"}}


def test_two_creators_of_a_new_shard_both_land() -> None:
    store = StrictStore()
    a, b = "cd" + digest("a")[2:], "cd" + digest("b")[2:]
    second = signed_receipt([b], uid="uid-2")
    store.before_write = lambda: service.record(store, second, CLUSTER, pause=no_pause)
    first = service.record(store, signed_receipt([a], uid="uid-1"), CLUSTER, pause=no_pause)
    assert first.conflicts == 1
    assert store.digests() == {a: {"uid-1"}, b: {"uid-2"}}


def test_a_shard_that_keeps_changing_leaves_the_ledger_behind_as_a_refused_write() -> None:
    store = StrictStore()
    a = digest("a")
    service.record(store, signed_receipt([a], uid="uid-0"), CLUSTER, pause=no_pause)
    pauses: list[float] = []

    class Racing(StrictStore):
        def write(
            self, cluster: str, namespace: str, shard: str, payload: str, version: str | None
        ) -> None:
            raise LedgerConflict("Conflict")  # another writer wins every time

    racing = Racing()
    racing.shards = dict(store.shards)
    with pytest.raises(LedgerBehind) as err:
        service.record(racing, signed_receipt([a], uid="uid-1"), CLUSTER, pause=pauses.append)
    assert isinstance(err.value, WriteRefused)
    assert err.value.status == 409
    assert len(pauses) == service.ATTEMPTS
    assert pauses == sorted(pauses)  # backing off
    assert racing.digests() == {a: {"uid-0"}}  # nothing lost, nothing half written


def test_a_refusal_of_the_api_server_leaves_the_ledger_behind_and_a_retry_completes_it() -> None:
    store = StrictStore()
    signed = signed_receipt([digest("a"), digest("b")])
    store.refuse = WriteRefused(403, "Forbidden", "configmaps is forbidden")
    with pytest.raises(LedgerBehind) as err:
        service.record(store, signed, CLUSTER, pause=no_pause)
    assert err.value.status == 403
    assert store.digests() == {}
    store.refuse = None
    service.record(store, signed, CLUSTER, pause=no_pause)
    assert set(store.digests()) == {digest("a"), digest("b")}


def test_a_full_shard_leaves_the_ledger_behind_and_keeps_what_it_held() -> None:
    store = StrictStore()
    big = [
        LedgerEntry(
            "ab" + digest(str(i))[2:],
            f"u{i}",
            NAMESPACE,
            "n",
            ("t" * 249,) * 3,
            "0" * 64,
            "k" * 16,
            "cid",
            "2026-11-29T06:00:00Z",
        )
        for i in range(800)
    ]
    text = core.encode_shard(CLUSTER, NAMESPACE, "ab", core.merge([], big))
    store.shards[(CLUSTER, NAMESPACE, "ab")] = (text, 1)
    extra = ["ab" + digest(f"x{i}")[2:] for i in range(300)]
    with pytest.raises(LedgerBehind, match="beyond"):
        service.record(store, signed_receipt(extra), CLUSTER, pause=no_pause)
    assert store.shards[(CLUSTER, NAMESPACE, "ab")] == (text, 1)


# --- one namespace's shards, not the cluster's --------------------------------------------


def test_a_namespace_that_fills_its_shards_is_behind_and_another_namespace_still_records() -> None:
    """The attack: a tenant with `erase` on one empty topic of its own finishes erasures
    of random digests (NothingFound) until its shard is full. Its own erasures are then
    behind (507); another tenant's erasure on the same cluster, with digests in the same
    shard prefix, still records, in shards of its own."""
    store = StrictStore()
    attacker, victim = "tenant-evil", NAMESPACE
    behind: LedgerBehind | None = None
    for r in range(20):
        noise = ["ab" + digest(f"noise {r} {i}")[2:] for i in range(1000)]
        refused = signed_receipt(noise, uid=f"evil-{r}", namespace=attacker)
        try:
            service.record(store, refused, CLUSTER, pause=no_pause)
        except LedgerBehind as err:
            behind = err
            break
    assert behind is not None, "the attacker's shard never filled"
    assert behind.status == 507
    assert "beyond" in str(behind.reason)
    full = store.digests(CLUSTER, attacker)
    assert len(full) >= 2000

    wanted = ["ab" + digest("alice")[2:], digest("bob")]
    done = service.record(store, signed_receipt(wanted, uid="uid-victim"), CLUSTER, pause=no_pause)
    assert done.written == done.shards == 2
    assert store.digests(CLUSTER, victim) == {d: {"uid-victim"} for d in wanted}
    # The attacker's shard is as it was, and its refused erasure's next run is refused
    # again: what it filled blocks only itself.
    assert store.digests(CLUSTER, attacker) == full
    with pytest.raises(LedgerBehind):
        service.record(store, refused, CLUSTER, pause=no_pause)
    assert {(c, ns) for c, ns, _ in store.shards} == {(CLUSTER, attacker), (CLUSTER, victim)}


def test_another_namespace_erasing_a_digest_again_and_again_keeps_this_namespaces_entry() -> None:
    """MAX_ERASURES_PER_DIGEST keeps the newest erasures of a digest: in a shared shard,
    another tenant's later erasures of the same digest would push this tenant's entry
    (the topics a check counts it in) out."""
    store = StrictStore()
    d = digest("alice")
    service.record(store, signed_receipt([d], {d: ["orders"]}, uid="uid-a"), CLUSTER)
    for i in range(MAX_ERASURES_PER_DIGEST + 2):
        later = signed_receipt(
            [d], uid=f"evil-{i:02d}", completed=f"2026-11-29T07:{i:02d}:00Z", namespace="evil"
        )
        service.record(store, later, CLUSTER, pause=no_pause)
    (mine,) = [e for s in store.read_all(CLUSTER, NAMESPACE) for e in s.entries]
    assert (mine.uid, mine.topics) == ("uid-a", ("orders",))
    assert len(store.digests(CLUSTER, "evil")[d]) == MAX_ERASURES_PER_DIGEST


def test_a_namespaces_shards_are_made_only_where_its_digests_fall() -> None:
    store = StrictStore()
    ds = [digest(str(i)) for i in range(5)]
    service.record(store, signed_receipt(ds), CLUSTER, pause=no_pause)
    assert sorted(n for _, _, n in store.shards) == sorted({d[:2] for d in ds})
    assert store.read_all(CLUSTER, "tenant-b") == []


def test_a_shard_naming_another_namespace_or_holding_its_entries_is_refused() -> None:
    es = [entry("ab" + digest("a")[2:], namespace="tenant-b")]
    text = core.encode_shard(CLUSTER, "tenant-b", "ab", es)
    # The JSON of tenant-b's shard read as tenant-a's (a name collision, or a copy).
    with pytest.raises(LedgerError, match="another cluster's, namespace's or shard's"):
        core.decode_shard(CLUSTER, NAMESPACE, "ab", text)
    # A shard that says tenant-a but holds an entry of tenant-b's erasure.
    forged = json.loads(text)
    forged["namespace"] = NAMESPACE
    with pytest.raises(LedgerError, match="another namespace's erasure"):
        core.decode_shard(CLUSTER, NAMESPACE, "ab", json.dumps(forged))
    with pytest.raises(LedgerError, match="entries of others"):
        core.encode_shard(CLUSTER, NAMESPACE, "ab", es)
    # A shard of the layout before namespaces (version 1, no namespace) is not read.
    old = json.loads(text)
    old["version"] = 1
    del old["namespace"]
    with pytest.raises(LedgerError, match="not a version 2"):
        core.decode_shard(CLUSTER, "tenant-b", "ab", json.dumps(old))


def test_namespace_labels_are_short_hex_and_tell_namespaces_apart() -> None:
    longest = "n" * 63
    assert len(core.namespace_label(longest)) == 12
    assert set(core.namespace_label(longest)) <= set("0123456789abcdef")
    assert core.namespace_label("tenant-a") != core.namespace_label("tenant-b")
