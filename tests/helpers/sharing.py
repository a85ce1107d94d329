"""How a test shares the stack in make test's parallel phase: hack/testrun.py runs it with
pytest-xdist, `--dist loadfile`, and tests/conftest.py schedules each file on one worker,
and each group below on one worker, its tests one after another in collection order.
Tests that cannot share the stack with anything are marked `serial` instead. The unit
phase runs the same way, for LOCAL_SPARK's group."""

from __future__ import annotations

# Files that install the operator in kafka-retention-system (cluster-wide RBAC, the local
# overlay's host ports on the node, the admission policy) or delete that namespace. They
# may run beside every other test, whose operators watch their own namespaces, but never
# beside each other.
OPERATOR_NAMESPACE = (
    "tests/integration/test_manifests.py",
    "tests/integration/test_rbac.py",
    "tests/integration/test_readme_install.py",
    "tests/e2e/test_in_cluster.py",
    "tests/e2e/test_tenancy_in_cluster.py",
    "tests/e2e/test_bound_runs_in_cluster.py",
)

# Tests that freeze, kill or restart brokers of the stack's isolated cluster (fixtures
# isolated_cluster and isolated_kafka), or plant orphan directories in their log dirs,
# which any orphan policy there removes. No other test uses that cluster, so these run
# beside everything else, but never beside each other. A test of this list takes the
# isolated fixtures; tests/unit/test_sharing.py holds both sides of that rule.
ISOLATED_KAFKA = (
    "tests/integration/test_kafka_adapter.py::"
    "test_committed_offsets_are_read_while_the_group_coordinator_moves",
    "tests/integration/test_kafka_stack.py::test_producing_goes_on_with_one_broker_down",
    "tests/e2e/test_faults.py::test_a_purge_waits_out_a_frozen_leader_and_every_partition_succeeds",
    "tests/e2e/test_faults.py::"
    "test_a_broker_killed_mid_purge_deletes_exactly_the_plan_once_it_is_back",
    "tests/e2e/test_faults.py::test_a_broker_killed_during_policy_runs_never_cuts_past_the_group",
    "tests/e2e/test_faults.py::"
    "test_a_policy_facing_no_reachable_broker_says_so_deletes_nothing_and_recovers",
    "tests/e2e/test_record_purge.py::test_purge_in_flight_completes_after_the_operator_is_killed",
    "tests/e2e/test_orphan_partitions.py::"
    "test_orphans_are_found_held_and_removed_and_nothing_else_is_touched",
    "tests/e2e/test_orphan_partitions.py::test_orphans_in_a_broker_pods_volume_are_removed_through_exec",
    "tests/e2e/test_tenancy.py::test_a_bound_namespace_cleans_orphans_on_the_brokers_its_binding_names",
    "tests/e2e/test_tiered_orphans.py::"
    "test_orphans_of_a_tiered_topic_go_and_remote_storage_stays_byte_for_byte",
    "tests/e2e/test_observability.py::"
    "test_dashboard_and_rules_read_only_series_a_working_operator_exports",
)

# Files whose tests apply hostile specs aimed at the fixed topic `orders` and check that
# none of its records goes: one file's cut would look like the other's failure.
ORDERS_TOPIC = (
    "tests/e2e/test_hostile_specs.py",
    "tests/e2e/test_tenancy.py",
)

# Files whose tests need Kafka and processes on this machine alone (local Spark, the CLI,
# Java clients): no API server, no node. make test runs them beside the serial and paired
# phases instead (marker `kafka_only`, niced), where the API server and node restarts do
# not touch them and the phases' waits leave a core idle; the parallel phase, which keeps
# the CPU busy, gets shorter by their 230 s. None may be in a group above: a group's
# tests go to one worker of the parallel phase. The second half of the list joined on
# 6acff9f's make test, which measured the CPU idle 0.2% of the parallel phase, 14% of the
# serial one and 36% of the paired one (kafka-only ended before paired began): their
# 228 s of tests there leave the parallel phase for that idle room.
KAFKA_ONLY = (
    "tests/integration/test_plan_pipeline.py",
    "tests/integration/test_client_properties.py",
    "tests/integration/test_batch_planning.py",
    "tests/integration/test_erasure_kafka.py",
    "tests/integration/test_kafka_source.py",
    "tests/integration/test_group_positions.py",
    "tests/integration/test_spark_erasure_scan.py",
    "tests/integration/test_spark_class_archive.py",
    "tests/integration/test_streams_app.py",
    "tests/integration/test_cli_purge.py",
    "tests/integration/test_log_keys_bridge.py",
    "tests/integration/test_kafka_tiers.py",
    "tests/integration/test_segment_offsets.py",
)

# Files that use tests/conftest.py's `spark` fixture: one local SparkSession, so one JVM,
# a process. make test keeps them on one worker, in the unit phase and in the parallel
# one. Spread over 4 workers, the unit phase's started 4 JVMs, each paying its start-up
# and compiling the same plans (those files alone: 87 CPU-s on 4 workers, 36 on one), and
# each holding a 1 GiB heap. (The kafka_only session's are in no group: KAFKA_ONLY.)
LOCAL_SPARK = (
    "tests/unit/test_erasure_spark_match.py",
    "tests/unit/test_min_records.py",
    "tests/unit/test_plan_row.py",
    "tests/unit/test_plan_transforms.py",
    "tests/unit/test_scan_deadline.py",
    "tests/e2e/test_retention_in_pods.py",
)

GROUP_OF_FILE = {
    **dict.fromkeys(OPERATOR_NAMESPACE, "kafka-retention-system"),
    **dict.fromkeys(ORDERS_TOPIC, "orders-topic"),
    **dict.fromkeys(LOCAL_SPARK, "local-spark"),
}
GROUP_OF_TEST = dict.fromkeys(ISOLATED_KAFKA, "isolated-kafka")


# The longest units of the parallel phase (seconds of their tests in a warm run on
# 2edcfd6), handed out first; the rest by number of tests, as pytest-xdist would. Each
# worker takes its next unit as it finishes one: with a long unit started last, the phase
# ended with one worker busy and two idle for about 30 s.
LONGEST_FIRST = (
    "kafka-retention-system",  # 342 s, 60 tests
    "isolated-kafka",  # 310 s, 11 tests
    # Two more Kafka releases, started in turn, 8 scenarios on each (issue #50).
    "tests/e2e/test_kafka_versions.py",
    # In the unit phase (which runs with --dist loadfile too) its files took 109 s on 4
    # workers, 42 tests; in the parallel phase it is test_retention_in_pods alone.
    "local-spark",
    "tests/e2e/test_group_types.py",  # 96 s, 4 tests
    # The unit phase's (seconds on its 4 workers, alone, on f1e3675): a few scale tests
    # each, far fewer tests than the files they would otherwise follow.
    "tests/unit/test_purge_service.py",  # 47 s, 61 tests
    "tests/unit/test_payload_bounds.py",  # 44 s, 10 tests
    "tests/unit/test_erasure_service.py",  # 42 s, 64 tests
)


def longest_first(units: dict[str, int]) -> list[str]:
    """The order to hand out `units` (name -> number of tests): LONGEST_FIRST as listed,
    then the others by number of tests, most first."""
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    return sorted(units, key=lambda unit: (rank.get(unit, len(rank)), -units[unit]))


def group_of(nodeid: str, file: str) -> str:
    """The unit of scheduling of a test: its group, or else its file."""
    test = nodeid.split("[", 1)[0]  # every parametrization goes with its test
    return GROUP_OF_TEST.get(test) or GROUP_OF_FILE.get(file, file)
