"""Orphan partition directories: names, verdicts, KIP-370's removal rule, first-seen
bookkeeping, path validation and the exec argv builders (all pure)."""

from __future__ import annotations

import pytest

from kafka_retention.adapters.volume_commands import (
    LIST_SCRIPT,
    READ_META_SCRIPT,
    REMOVE_SCRIPT,
    list_argv,
    listing_complete,
    parse_listing,
    parse_meta_answer,
    read_meta_argv,
    remove_argv,
    safe_child,
)
from kafka_retention.core.orphan_guards import (
    MIN_REMOVAL_ALLOWANCE,
    Decision,
    cluster_change_block,
    decide,
    identity_block,
    metadata_block,
    removal_allowance,
    removal_cap_block,
    still_orphan,
)
from kafka_retention.core.orphans import (
    NO_META,
    Assignment,
    DirName,
    Entry,
    Finding,
    LogDirIdentity,
    OrphanKey,
    carry_first_seen,
    classify,
    decode_first_seen,
    encode_first_seen,
    identity_from_meta,
    node_id_from_meta,
    parse_name,
    topic_id_from_partition_metadata,
)

HEX = "0123456789abcdef0123456789abcdef"
CLUSTER, OTHER_CLUSTER = "q1Sh-9_jT3ut0dbGsAS1Yw", "Zm9yZWlnbi1jbHVzdGVyLQ"
ORDERS_ID = "MzgwNzVlZjQtYjE0Yi00Mw"
OLD_ORDERS_ID = "b2xkLW9yZGVycy10b3BpYw"
HOUR = 3_600_000
DAY = 24 * HOUR


def assignment(**extra: tuple[str, dict[int, set[int]]]) -> Assignment:
    return {
        "orders": (ORDERS_ID, {0: {1, 2}, 1: {2, 3}}),
        "__consumer_offsets": ("X19jb25zdW1lcl9vZmZzZQ", {3: {1}, 4: {2}}),
        **extra,
    }


def entry(
    name: str,
    topic_id: str | None = None,
    *,
    is_dir: bool = True,
    is_symlink: bool = False,
    newest: int | None = None,
) -> Entry:
    return Entry(name, is_dir, is_symlink, 100, newest, topic_id)


def verdicts(findings: list[Finding]) -> dict[str, tuple[str, str]]:
    return {f.entry.name: (f.verdict, f.reason) for f in findings}


def judge(e: Entry, broker: int = 1, stray_dirs: bool = True) -> tuple[str, str]:
    return verdicts(classify(broker, [e], assignment(), stray_dirs))[e.name]


# --- names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", DirName("partition", "orders", 0)),
        ("my-topic-12", DirName("partition", "my-topic", 12)),
        ("__consumer_offsets-3", DirName("partition", "__consumer_offsets", 3)),
        (f"orders-0.{HEX}-stray", DirName("stray", "orders", 0)),
        (f"orders-7.{HEX}-delete", DirName("delete", "orders", 7)),
        (f"orders-1.{HEX}-future", DirName("future", "orders", 1)),
        ("a" * 249 + "-0", DirName("partition", "a" * 249, 0)),
        ("t-2147483647", DirName("partition", "t", 2147483647)),
    ],
)
def test_kafka_directory_names_parse_to_topic_and_partition(name: str, expected: DirName) -> None:
    assert parse_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "meta.properties",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
        "replication-offset-checkpoint.tmp",
        ".lock",
        ".kafka_cleanshutdown",
        "__cluster_metadata-0",
    ],
)
def test_the_brokers_own_files_and_the_metadata_log_are_broker_files(name: str) -> None:
    assert parse_name(name).kind == "broker_file"


@pytest.mark.parametrize(
    "name",
    [
        "",
        "orders",
        "../orders-0",
        "orders-0/..",
        "a/b-0",
        "orders-0\n",
        "orders 0",
        "orders-0\0",
        "$(rm -rf ~)-0",
        "`id`-0",
        "x;rm-0",
        ".-0",
        "..-0",
        "orders-01",
        "orders-",
        "-0",
        "orders-1-",
        "orders-2147483648",
        "a" * 250 + "-0",
        f"orders-0.{HEX.upper()}-stray",
        f"orders-0.{HEX[:31]}-stray",
        "orders-0-stray",
        f"orders-0.{HEX}-trash",
        "lost+found",
        "tópico-0",
    ],
)
def test_anything_outside_kafkas_naming_is_unknown(name: str) -> None:
    assert parse_name(name).kind == "unknown"


def test_topic_id_is_read_from_partition_metadata_only_when_well_formed() -> None:
    assert topic_id_from_partition_metadata(f"version: 0\ntopic_id: {ORDERS_ID}\n") == ORDERS_ID
    assert topic_id_from_partition_metadata(f"version: 0\ntopic_id: {ORDERS_ID[:10]}") is None
    assert topic_id_from_partition_metadata("version: 0\n") is None
    assert topic_id_from_partition_metadata("topic_id: $(reboot)xxxxxxxxxxxxxx") is None


def test_node_id_comes_from_node_id_or_the_legacy_broker_id() -> None:
    assert node_id_from_meta("#comment\nversion=1\ncluster.id=abc\nnode.id=3\n") == 3
    assert node_id_from_meta("version=0\nbroker.id = 7\n") == 7
    with pytest.raises(ValueError, match=r"node\.id"):
        node_id_from_meta("#node.id=1\nversion=1\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"version=1\ncluster.id={CLUSTER}\nnode.id=3\n", LogDirIdentity(3, CLUSTER)),
        (f"version=0\ncluster.id={CLUSTER}\nbroker.id=7\n", LogDirIdentity(7, CLUSTER)),
        (f"cluster.id={CLUSTER}\nnode.id=3\nbroker.id=3\n", LogDirIdentity(3, CLUSTER)),
        # Two node ids, no node id: a file that contradicts itself names nobody.
        (f"cluster.id={CLUSTER}\nnode.id=3\nbroker.id=4\n", LogDirIdentity(None, CLUSTER)),
        ("node.id=3\n", LogDirIdentity(3, None)),
        (f"#cluster.id={CLUSTER}\nnode.id=3\n", LogDirIdentity(3, None)),
        ("cluster.id=\nnode.id=-1\n", LogDirIdentity(None, None)),
        ("cluster.id=$(reboot)\nnode.id=\u00b2\n", LogDirIdentity(None, None)),
        ("cluster.id=" + "a" * 65 + "\nnode.id=99999999999\n", LogDirIdentity(None, None)),
        (f"cluster.id=old\ncluster.id={CLUSTER}\nnode.id=1\n", LogDirIdentity(1, CLUSTER)),
    ],
)
def test_identity_reads_node_and_cluster_id_only_in_the_forms_kafka_writes(
    text: str, expected: LogDirIdentity
) -> None:
    assert identity_from_meta(text) == expected


def test_the_meta_read_answer_tells_no_log_dir_from_no_meta_from_garbage() -> None:
    assert parse_meta_answer("#no-log-dir\n") is None
    assert parse_meta_answer("#no-meta\n") == NO_META
    assert parse_meta_answer(f"#meta\ncluster.id={CLUSTER}\nnode.id=2\n") == LogDirIdentity(
        2, CLUSTER
    )
    assert parse_meta_answer("#meta\n") == LogDirIdentity(None, None)
    for garbage in ("", "node.id=2\n", "#no-log-dir-but-not-really\n", "x\n#meta\n"):
        with pytest.raises(ValueError, match="unexpected"):
            parse_meta_answer(garbage)


# --- whose log dir it is -------------------------------------------------------------


def test_a_log_dir_of_this_cluster_and_one_of_its_owners_may_be_judged() -> None:
    assert identity_block("/d", LogDirIdentity(2, CLUSTER), CLUSTER, {1, 2, 3}) is None


def test_another_clusters_log_dir_holds_the_whole_run_and_names_both_ids() -> None:
    block = identity_block("/d", LogDirIdentity(2, OTHER_CLUSTER), CLUSTER, {2})
    assert block is not None
    assert (block.reason, block.brokers) == ("ClusterIdMismatch", None)
    assert block.message == (
        f"meta.properties of log dir /d (broker 2, node.id 2) names cluster.id "
        f"{OTHER_CLUSTER}, the metadata came from cluster {CLUSTER}: nothing removed on any "
        "broker"
    )
    assert all(block.holds(b) for b in (1, 2, 99))


def test_a_foreign_cluster_id_outweighs_a_wrong_node_id() -> None:
    block = identity_block("/d", LogDirIdentity(None, OTHER_CLUSTER), CLUSTER, {2})
    assert block is not None
    assert block.reason == "ClusterIdMismatch"


def test_a_node_id_of_another_broker_holds_both_brokers() -> None:
    block = identity_block("/d", LogDirIdentity(1, CLUSTER), CLUSTER, {2})
    assert block is not None
    assert (block.reason, block.brokers) == ("NodeIdMismatch", frozenset({1, 2}))
    assert "names node.id 1, the log.dirs of broker 2 name it" in block.message
    assert block.holds(1)
    assert block.holds(2)
    assert not block.holds(3)


def test_a_node_id_no_live_broker_has_holds_the_owners() -> None:
    block = identity_block("/d", LogDirIdentity(9, CLUSTER), CLUSTER, {1, 2})
    assert block is not None
    assert (block.reason, block.brokers) == ("NodeIdMismatch", frozenset({1, 2, 9}))


def test_no_node_id_holds_the_owners() -> None:
    block = identity_block("/d", LogDirIdentity(None, CLUSTER), CLUSTER, {2})
    assert block is not None
    assert (block.reason, block.brokers) == ("NodeIdMismatch", frozenset({2}))
    assert "names node.id none" in block.message


def test_no_cluster_id_holds_the_broker() -> None:
    block = identity_block("/d", LogDirIdentity(2, None), CLUSTER, {2})
    assert block is not None
    assert (block.reason, block.brokers) == ("ClusterIdMissing", frozenset({2}))
    assert CLUSTER in block.message


def test_no_meta_properties_holds_the_broker() -> None:
    block = identity_block("/d", NO_META, CLUSTER, {2, 3})
    assert block is not None
    assert (block.reason, block.brokers) == ("MetaPropertiesMissing", frozenset({2, 3}))


def test_a_cluster_id_that_changed_between_reads_holds_the_whole_run() -> None:
    assert cluster_change_block(CLUSTER, CLUSTER) is None
    block = cluster_change_block(CLUSTER, OTHER_CLUSTER)
    assert block is not None
    assert (block.reason, block.brokers) == ("ClusterIdMismatch", None)


def test_metadata_without_topics_but_internal_ones_holds_the_whole_run() -> None:
    for empty in ({}, {"__consumer_offsets": ("X19jb25zdW1lcl9vZmZzZQ", {0: {1}})}):
        block = metadata_block(CLUSTER, empty)
        assert block is not None
        assert (block.reason, block.brokers) == ("NoTopicsInMetadata", None)
    assert metadata_block(CLUSTER, assignment()) is None


# --- the removal cap -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dirs", "allowed"), [(0, 2), (1, 2), (3, 2), (8, 2), (11, 2), (12, 3), (40, 10), (1000, 250)]
)
def test_a_broker_may_lose_a_quarter_of_its_dirs_and_always_two(dirs: int, allowed: int) -> None:
    assert removal_allowance(dirs) == allowed
    assert MIN_REMOVAL_ALLOWANCE == 2


def broker_findings(orphaned: int, hosted: int, broker: int = 1) -> list[Finding]:
    entries = [entry(f"gone-{p}") for p in range(orphaned)]
    entries += [entry(f"orders-{p}", ORDERS_ID) for p in range(hosted)]
    live = {"orders": (ORDERS_ID, {p: {broker} for p in range(hosted)})}
    return classify(broker, entries, live)


def test_ninety_percent_of_a_brokers_dirs_orphaned_holds_that_broker() -> None:
    block = removal_cap_block(1, broker_findings(orphaned=9, hosted=1))
    assert block is not None
    assert (block.reason, block.brokers) == ("RemovalCapReached", frozenset({1}))
    assert block.message.startswith("9 of the 10 partition directories of broker 1")


def test_a_quarter_of_a_brokers_dirs_orphaned_is_allowed_and_one_more_is_not() -> None:
    assert removal_cap_block(1, broker_findings(orphaned=5, hosted=15)) is None
    assert removal_cap_block(1, broker_findings(orphaned=6, hosted=15)) is not None


def test_a_tiny_broker_may_lose_two_dirs_but_not_three() -> None:
    assert removal_cap_block(1, broker_findings(orphaned=2, hosted=0)) is None
    assert removal_cap_block(1, broker_findings(orphaned=3, hosted=0)) is not None


def test_symlinks_files_and_unknown_names_do_not_dilute_the_cap() -> None:
    findings = broker_findings(orphaned=3, hosted=0) + classify(
        1,
        [entry(f"x-{p}", is_dir=False, is_symlink=True) for p in range(20)]
        + [entry(f"lost+found{p}") for p in range(20)],
        {},
    )
    assert removal_cap_block(1, findings) is not None


# --- verdicts ------------------------------------------------------------------------


def test_a_partition_this_broker_hosts_is_assigned() -> None:
    assert judge(entry("orders-0", ORDERS_ID)) == ("assigned", "assigned")


def test_a_partition_another_broker_hosts_is_an_orphan() -> None:
    assert judge(entry("orders-1", ORDERS_ID)) == ("orphan", "not assigned to broker 1")


def test_a_partition_beyond_the_topics_partition_count_is_an_orphan() -> None:
    assert judge(entry("orders-9", ORDERS_ID)) == ("orphan", "not assigned to broker 1")


def test_a_deleted_topics_partition_is_an_orphan() -> None:
    assert judge(entry("gone-0", ORDERS_ID)) == ("orphan", "topic no longer exists")


def test_a_recreated_topics_old_partition_is_an_orphan_by_topic_id() -> None:
    assert judge(entry("orders-0", OLD_ORDERS_ID)) == (
        "orphan",
        f"topic id {OLD_ORDERS_ID} differs from live topic id {ORDERS_ID}",
    )


def test_without_a_readable_topic_id_the_name_decides() -> None:
    assert judge(entry("orders-0", None))[0] == "assigned"
    assert judge(entry("orders-1", None))[0] == "orphan"


def test_an_unknown_live_topic_id_never_makes_an_orphan_by_id() -> None:
    live = {"orders": ("", {0: {1}})}
    assert verdicts(classify(1, [entry("orders-0", OLD_ORDERS_ID)], live))["orders-0"][0] == (
        "assigned"
    )


def test_an_internal_topics_orphan_is_reported_and_kept_never_removed() -> None:
    assert judge(entry("__consumer_offsets-3"))[0] == "assigned"
    verdict, reason = judge(entry("__consumer_offsets-4"))
    assert verdict == "kept"
    assert reason == "internal topic, never removed (not assigned to broker 1)"


def test_stray_dirs_are_orphans_unless_stray_cleanup_is_off() -> None:
    stray = entry(f"orders-1.{HEX}-stray", ORDERS_ID)
    assert judge(stray) == ("orphan", "stray replica renamed by the broker")
    assert judge(stray, stray_dirs=False) == ("kept", "strayDirs is disabled")


def test_a_stray_copy_of_a_partition_assigned_here_again_is_kept() -> None:
    verdict, reason = judge(entry(f"orders-0.{HEX}-stray", ORDERS_ID))
    assert (verdict, reason) == ("kept", "stray copy of a partition assigned to broker 1")


def test_a_stray_with_a_truncated_topic_name_is_matched_by_topic_id() -> None:
    long_topic = "t" * 240
    live = {long_topic: (ORDERS_ID, {0: {1}})}
    stray = entry(f"{long_topic[:200]}-0.{HEX}-stray", ORDERS_ID)
    assert verdicts(classify(1, [stray], live))[stray.name][0] == "kept"
    assert verdicts(classify(2, [stray], live))[stray.name][0] == "orphan"


def test_delete_and_future_dirs_are_reported_but_never_candidates() -> None:
    assert judge(entry(f"orders-1.{HEX}-delete"))[0] == "delete_pending"
    assert judge(entry(f"orders-1.{HEX}-future"))[0] == "future"


def test_a_symlink_is_unknown_whatever_its_name() -> None:
    for name in ("gone-0", f"orders-1.{HEX}-stray", "meta.properties"):
        e = entry(name, is_dir=False, is_symlink=True)
        assert judge(e) == ("unknown", "symlink, never followed")


def test_a_file_named_like_a_partition_is_unknown() -> None:
    assert judge(entry("gone-0", is_dir=False)) == ("unknown", "not a directory")


def test_unparseable_names_are_reported_as_unknown() -> None:
    assert judge(entry("$(rm -rf)-0")) == ("unknown", "not a Kafka partition directory name")


def test_broker_files_and_the_metadata_log_are_left_out_of_the_findings() -> None:
    entries = [
        entry("meta.properties", is_dir=False),
        entry(".lock", is_dir=False),
        entry("__cluster_metadata-0"),
        entry("gone-0"),
    ]
    assert [f.entry.name for f in classify(1, entries, {})] == ["gone-0"]


def test_still_orphan_rereads_the_assignment_just_before_a_delete() -> None:
    finding = classify(1, [entry("orders-1", ORDERS_ID)], assignment())[0]
    assigned_here = assignment(orders=(ORDERS_ID, {0: {1}, 1: {1, 3}}))
    recreated = assignment(orders=(OLD_ORDERS_ID, {0: {1}, 1: {1}}))
    assert still_orphan(finding, assignment(), 1, CLUSTER, CLUSTER)
    assert not still_orphan(finding, assigned_here, 1, CLUSTER, CLUSTER)
    assert still_orphan(finding, recreated, 1, CLUSTER, CLUSTER)


def test_still_orphan_never_approves_a_finding_that_was_not_an_orphan() -> None:
    finding = classify(1, [entry(f"orders-1.{HEX}-future")], {})[0]
    assert not still_orphan(finding, {}, 1, CLUSTER, CLUSTER)


def test_still_orphan_refuses_a_fresh_read_from_another_cluster() -> None:
    finding = classify(1, [entry("orders-1", ORDERS_ID)], assignment())[0]
    assert not still_orphan(finding, assignment(), 1, CLUSTER, OTHER_CLUSTER)
    assert not still_orphan(finding, assignment(), 1, "", "")


def test_still_orphan_refuses_a_fresh_read_without_topics() -> None:
    finding = classify(1, [entry("gone-0")], assignment())[0]
    assert still_orphan(finding, assignment(), 1, CLUSTER, CLUSTER)
    assert not still_orphan(finding, {}, 1, CLUSTER, CLUSTER)
    internal_only = {"__consumer_offsets": ("X19jb25zdW1lcl9vZmZzZQ", {0: {1}})}
    assert not still_orphan(finding, internal_only, 1, CLUSTER, CLUSTER)


# --- removal rule --------------------------------------------------------------------

NOW = 1_800_000_000_000


def orphan(newest: int | None = NOW - 30 * DAY) -> Finding:
    return classify(1, [entry("gone-0", newest=newest)], {})[0]


def test_a_new_orphan_waits_for_the_removal_delay() -> None:
    d = decide(orphan(), None, NOW, DAY, 7 * DAY, dry_run=False)
    assert (d.state, d.reason, d.remove_after_ms) == ("Pending", "removal delay", NOW + DAY)


def test_an_orphan_is_removed_once_the_delay_has_passed_and_segments_are_old() -> None:
    d = decide(orphan(), NOW - DAY, NOW, DAY, 7 * DAY, dry_run=False)
    assert (d.state, d.reason) == ("Remove", "topic no longer exists")


def test_recent_segments_hold_an_orphan_until_min_age() -> None:
    d = decide(orphan(newest=NOW - HOUR), NOW - 2 * DAY, NOW, DAY, 7 * DAY, dry_run=False)
    assert (d.state, d.reason) == ("Pending", "segments younger than minAge")
    assert d.remove_after_ms == NOW - HOUR + 7 * DAY


def test_an_empty_orphan_directory_has_no_min_age_to_wait_for() -> None:
    assert decide(orphan(newest=None), NOW - DAY, NOW, DAY, 7 * DAY, False).state == "Remove"


def test_dry_run_keeps_what_would_be_removed() -> None:
    d = decide(orphan(), NOW - DAY, NOW, DAY, 7 * DAY, dry_run=True)
    assert (d.state, d.reason) == ("Kept", "dry run")


def test_dry_run_still_reports_the_delay_as_pending() -> None:
    assert decide(orphan(), NOW - HOUR, NOW, DAY, 0, dry_run=True).state == "Pending"


def test_a_directory_seen_as_orphan_before_but_assigned_now_is_kept() -> None:
    assigned = classify(1, [entry("orders-0", ORDERS_ID)], assignment())[0]
    d = decide(assigned, NOW - 2 * DAY, NOW, DAY, 0, dry_run=False)
    assert (d.state, d.reason) == ("Kept", "assigned again")


def test_a_non_orphan_never_seen_is_kept_with_its_own_reason() -> None:
    future = classify(1, [entry(f"orders-1.{HEX}-future")], {})[0]
    assert decide(future, None, NOW, 0, 0, dry_run=False) == Decision(
        "Kept", "log dir move in progress"
    )


# --- first seen ----------------------------------------------------------------------

KEY = OrphanKey(1, "/var/lib/kafka/data", "gone-0")
OTHER = OrphanKey(2, "/var/lib/kafka/data", "orders-1")


def test_first_seen_is_kept_for_orphans_still_there_and_set_for_new_ones() -> None:
    carried = carry_first_seen({KEY: NOW - DAY}, [KEY, OTHER], NOW)
    assert carried == {KEY: NOW - DAY, OTHER: NOW}


def test_the_delay_restarts_when_a_directory_stops_being_an_orphan_for_one_check() -> None:
    first = carry_first_seen({}, [KEY], NOW)
    gap = carry_first_seen(first, [], NOW + HOUR)
    again = carry_first_seen(gap, [KEY], NOW + 2 * HOUR)
    assert again == {KEY: NOW + 2 * HOUR}


def test_first_seen_survives_a_round_trip_through_status() -> None:
    encoded = encode_first_seen({KEY: 1_800_000_000_000, OTHER: 1_800_000_060_000})
    assert encoded[0] == {
        "broker": 1,
        "logDir": "/var/lib/kafka/data",
        "name": "gone-0",
        "firstSeen": "2027-01-15T08:00:00Z",
    }
    assert decode_first_seen(encoded) == {KEY: 1_800_000_000_000, OTHER: 1_800_000_060_000}


def test_first_seen_rounds_up_so_a_restart_never_shortens_the_delay() -> None:
    decoded = decode_first_seen(encode_first_seen({KEY: 1_800_000_000_001}))
    assert decoded[KEY] == 1_800_000_001_000


def test_unreadable_first_seen_items_are_dropped() -> None:
    items = [
        {"broker": 1, "logDir": "/d", "name": "a-0", "firstSeen": "yesterday"},
        {"broker": "x", "logDir": "/d", "name": "b-0", "firstSeen": "2027-01-15T08:00:00Z"},
        {"logDir": "/d"},
        None,
        {"broker": 1, "logDir": "/d", "name": "c-0", "firstSeen": "2027-01-15T08:00:00Z"},
    ]
    assert decode_first_seen(items) == {OrphanKey(1, "/d", "c-0"): 1_800_000_000_000}


# --- paths and exec argv -------------------------------------------------------------


def test_safe_child_joins_a_partition_or_stray_name_to_the_log_dir() -> None:
    assert safe_child("/var/lib/kafka", "gone-0") == "/var/lib/kafka/gone-0"
    stray = f"orders-0.{HEX}-stray"
    assert safe_child("/var/lib/kafka", stray) == f"/var/lib/kafka/{stray}"


@pytest.mark.parametrize(
    "name",
    [
        "../etc-0",
        "..",
        "a/b-0",
        "x\n-0",
        "$(id)-0",
        f"orders-1.{HEX}-future",
        f"orders-1.{HEX}-delete",
        "meta.properties",
        "__cluster_metadata-0",
        "",
    ],
)
def test_safe_child_refuses_anything_but_a_partition_or_stray_name(name: str) -> None:
    with pytest.raises(ValueError, match="not a removable"):
        safe_child("/var/lib/kafka", name)


@pytest.mark.parametrize("log_dir", ["var/lib/kafka", "/var/lib/kafka/", "/var/../etc", "/a/./b"])
def test_safe_child_refuses_a_relative_or_unnormalised_log_dir(log_dir: str) -> None:
    with pytest.raises(ValueError, match="absolute, normalised"):
        safe_child(log_dir, "gone-0")


def test_exec_argv_passes_names_as_parameters_of_a_constant_script() -> None:
    name = f"orders-0.{HEX}-stray"
    argv = remove_argv("/var/lib/kafka", name)
    assert argv == ["sh", "-c", REMOVE_SCRIPT, "kr", "/var/lib/kafka", name]
    assert name not in argv[2]
    assert list_argv("/var/lib/kafka") == ["sh", "-c", LIST_SCRIPT, "kr", "/var/lib/kafka"]
    assert read_meta_argv("/var/lib/kafka") == [
        "sh",
        "-c",
        READ_META_SCRIPT,
        "kr",
        "/var/lib/kafka",
    ]


def test_exec_argv_builders_refuse_hostile_names_and_log_dirs() -> None:
    with pytest.raises(ValueError, match="not a removable"):
        remove_argv("/var/lib/kafka", "$(reboot)-0")
    with pytest.raises(ValueError, match="absolute"):
        list_argv("relative")
    with pytest.raises(ValueError, match="absolute"):
        read_meta_argv("/x/../etc")


def test_a_listing_reads_entries_and_skips_lines_that_do_not() -> None:
    text = (
        f"orders-0\td\t2048\t1700000000\t{ORDERS_ID}\t.\n"
        "hex:410a42\td\t0\t\t\t.\n"
        "link-0\tl\t0\t\t\t.\n"
        "garbage\n"
        "bad-0\tx\t1\t1\t\t.\n"
        "neg-0\td\t-1\t1\t\t.\n"
        "odd name\td\t1\t1\t\t.\n"
        "badhex\td\t1\t1\t\t.\nhex:zz\td\t1\t1\t\t.\n"
        f"cut-0\td\t10\t1700000000\t{ORDERS_ID[:5]}"
    )
    assert parse_listing(text) == [
        Entry("orders-0", True, False, 2048, 1_700_000_001_000, ORDERS_ID),
        Entry("A\nB", True, False, 0, None, None),
        Entry("link-0", False, True, 0, None, None),
        Entry("badhex", True, False, 1, 2000, None),
    ]


def test_a_forged_topic_id_in_a_listing_reads_as_none() -> None:
    assert parse_listing("gone-0\td\t1\t1\t$(id)\t.\n")[0].topic_id is None


def test_a_listing_is_complete_only_with_its_end_marker() -> None:
    assert listing_complete("orders-0\td\t1\t1\t\t.\n#end\n")
    assert listing_complete("#end\n")
    assert not listing_complete("orders-0\td\t1\t1\t\t.\n")
    assert not listing_complete("x\t#end\n")
