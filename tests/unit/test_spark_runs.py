"""Builders for Spark runs on Kubernetes: names, owners, manifests, the chunked plan sink."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from pathlib import Path

import pytest

from kafka_retention.adapters import spark
from kafka_retention.config import SparkConfig
from kafka_retention.core.failures import Abandoned
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import Batch, Member, parse_policy_spec
from kafka_retention.core.strimzi import StrimziRef
from kafka_retention.kube_objects.chunks import (
    CHUNK_BYTES,
    RUN_LABEL,
    SinkError,
    assemble,
    sink_configmaps,
)
from kafka_retention.kube_objects.owners import Owner
from kafka_retention.kube_objects.spark_runs import (
    RunSpec,
    batch_run_name,
    request_configmap,
    run_name,
    spark_application,
    spark_submit_argv,
)
from tests.helpers.configmaps import FakeConfigMaps, bomb_configmaps, gzip_bomb

OWNER = Owner("kafka-retention.io/v1alpha1", "RetentionPolicy", "pipeline", "uid-1")


DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def spec(executors: int = 2, owners: tuple[Owner, ...] = (OWNER,)) -> RunSpec:
    return RunSpec(
        owners,
        "kr-retentionpolicy-pipeline-g7",
        "team-a",
        "kafka-retention-operator:0.1.0",
        "kafka-retention",
        '{"x": 1}',
        executors=executors,
    )


def test_run_name_is_deterministic_and_a_short_dns_label() -> None:
    assert run_name("RetentionPolicy", "pipeline", 7) == "kr-retentionpolicy-pipeline-g7"
    long_a = run_name("RetentionPolicy", "a" * 80, 1)
    long_b = run_name("RetentionPolicy", "a" * 79 + "b", 1)
    assert len(long_a) <= 52
    assert DNS_LABEL.match(long_a), long_a
    assert long_a != long_b


def test_a_batch_run_is_named_by_its_members_generations_and_slot() -> None:
    name = batch_run_name(["ns/b@1", "ns/a@3"], "r42")
    assert name == batch_run_name(["ns/a@3", "ns/b@1"], "r42")  # order of members: no matter
    assert name != batch_run_name(["ns/a@4", "ns/b@1"], "r42")  # a new generation: a new run
    assert name != batch_run_name(["ns/a@3", "ns/b@1"], "r43")  # the next slot: a new run
    assert DNS_LABEL.match(name), name
    assert name.startswith("kr-batch-")
    assert name.endswith("-r42")


def test_every_object_of_a_run_is_owned_by_the_policy_and_labelled() -> None:
    for obj in (request_configmap(spec()), spark_application(spec())):
        meta = obj["metadata"]
        assert meta["ownerReferences"][0]["uid"] == "uid-1"
        assert meta["ownerReferences"][0]["controller"] is True
        assert meta["labels"][RUN_LABEL] == "kr-retentionpolicy-pipeline-g7"
        assert meta["namespace"] == "team-a"


def test_a_batch_run_is_owned_by_every_policy_and_controlled_by_none() -> None:
    other = Owner("kafka-retention.io/v1alpha1", "RetentionPolicy", "other", "uid-2")
    meta = request_configmap(spec(owners=(OWNER, other)))["metadata"]
    assert [(o["uid"], o["controller"]) for o in meta["ownerReferences"]] == [
        ("uid-1", False),
        ("uid-2", False),
    ]


def test_spark_submit_runs_the_plan_job_in_cluster_mode_without_waiting() -> None:
    argv = spark_submit_argv(spec(executors=3), "https://10.0.0.1:443", token_file="/t")
    assert argv[:6] == [
        "spark-submit",
        "--master",
        "k8s://https://10.0.0.1:443",
        "--deploy-mode",
        "cluster",
        "--name",
    ]
    conf = dict(a.split("=", 1) for a in argv[argv.index("--name") + 2 :] if "=" in a)
    assert conf["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert conf["spark.kubernetes.container.image"] == "kafka-retention-operator:0.1.0"
    assert conf["spark.executor.instances"] == "3"
    assert conf["spark.kubernetes.driver.pod.name"] == "kr-retentionpolicy-pipeline-g7-driver"
    assert conf["spark.kubernetes.authenticate.submission.oauthTokenFile"] == "/t"
    job = argv[
        argv.index("local:///opt/kafka-retention/spark-jobs/retention_jobs/plan_job.py") + 1 :
    ]
    args = dict(zip(job[::2], job[1::2], strict=True))
    assert args["--request"] == f"configmap:{spec().name}-request"
    assert args["--sink-configmaps"] == spec().name
    assert args["--namespace"] == "team-a"
    assert [o["uid"] for o in json.loads(args["--owner-references"])] == ["uid-1"]


def test_operator_spark_properties_are_passed_and_win_over_defaults() -> None:
    run = RunSpec(
        (OWNER,),
        "kr-x",
        "team-a",
        "img:1",
        "sa",
        "{}",
        spark_conf={
            "spark.kubernetes.executor.useDriverPodIP": "true",
            "spark.driver.memory": "2g",
        },
    )
    argv = spark_submit_argv(run, "https://h:1")
    confs = [a for a in argv if a.startswith("spark.")]
    assert "spark.kubernetes.executor.useDriverPodIP=true" in confs
    assert [c for c in confs if c.startswith("spark.driver.memory=")] == ["spark.driver.memory=2g"]


def test_spark_application_mirrors_the_same_run() -> None:
    app = spark_application(spec())
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert app["metadata"]["name"] == spec().name
    assert app["spec"]["mainApplicationFile"].endswith("retention_jobs/plan_job.py")
    assert app["spec"]["driver"]["serviceAccount"] == "kafka-retention"
    assert "--sink-configmaps" in app["spec"]["arguments"]


def test_sink_round_trips_a_plan_larger_than_one_configmap() -> None:
    payload = "\n".join(json.dumps({"partition": i, "pad": "x" * 300}) for i in range(6000))
    objs = sink_configmaps("run-1", "ns", payload)
    manifest, parts = objs[-1], objs[:-1]
    assert len(parts) == -(-len(payload.encode()) // CHUNK_BYTES) >= 2
    assert manifest["metadata"]["name"] == "run-1-plan"
    assert assemble(manifest, list(reversed(parts))) == payload


def test_sink_refuses_missing_or_altered_parts() -> None:
    payload = "".join(chr(97 + i % 26) for i in range(CHUNK_BYTES * 2 + 5))
    objs = sink_configmaps("run-2", "ns", payload)
    manifest, parts = objs[-1], objs[:-1]
    with pytest.raises(SinkError, match="expected 3 parts"):
        assemble(manifest, parts[:2])
    tampered = [dict(p) for p in parts]
    tampered[1] = {**parts[1], "binaryData": {"part": parts[0]["binaryData"]["part"]}}
    with pytest.raises(SinkError, match="checksum"):
        assemble(manifest, tampered)


class _Runs:
    """A run whose driver answers with the given phases, one per poll (the last repeats)."""

    def __init__(self, *phases: str) -> None:
        self.phases = list(phases)
        self.polls = 0

    def submit(self, _: RunSpec) -> bool:
        return True

    def state(self, _: RunSpec) -> spark.RunState:
        phase = self.phases[min(self.polls, len(self.phases) - 1)]
        self.polls += 1
        return spark.RunState(phase, "driver pod not found" if phase == "Unknown" else phase)

    def cleanup(self, _: RunSpec) -> None:
        raise AssertionError("a run without a plan is not cleaned up as if it had one")


def test_a_run_whose_driver_disappears_stops_waiting_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its policies were deleted (the driver is theirs, so it went with them): the wait
    ends at the next poll instead of holding the cluster's batch slot until the timeout."""
    monkeypatch.setattr(spark, "read_plan", lambda namespace, run: None)
    runs = _Runs("Pending", "Running", "Unknown")
    with pytest.raises(spark.RunGone, match="is gone before it wrote a plan"):
        spark.plan_in_pods(runs, spec(), timeout_s=3600, poll_s=0)  # type: ignore[arg-type]
    assert runs.polls == 3


def test_a_running_driver_is_waited_for_until_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spark, "read_plan", lambda namespace, run: None)
    with pytest.raises(RuntimeError, match="gave no plan within 0s; last state Running"):
        spark.plan_in_pods(_Runs("Running"), spec(), timeout_s=0, poll_s=0)  # type: ignore[arg-type]


def test_a_wait_for_a_running_driver_ends_when_the_operator_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stop flag, set from another thread mid-poll, ends the wait at once: a pool
    thread still waiting would hold the process open at exit for the whole run timeout."""
    monkeypatch.setattr(spark, "read_plan", lambda namespace, run: None)
    stopping = threading.Event()
    runs = _Runs("Running")
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            spark.plan_in_pods(runs, spec(), timeout_s=3600, poll_s=3600, stopping=stopping)  # type: ignore[arg-type]
        except BaseException as err:  # handed to the test thread
            raised.append(err)

    waiter = threading.Thread(target=wait)
    waiter.start()
    while runs.polls == 0:  # inside its first hour-long poll
        time.sleep(0.01)
    stopping.set()
    waiter.join(timeout=30)
    assert not waiter.is_alive(), "the wait did not notice the stop flag"
    assert len(raised) == 1
    assert isinstance(raised[0], Abandoned)
    assert runs.polls == 1


def test_a_stopped_planner_ends_waits_that_start_after_the_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spark, "read_plan", lambda namespace, run: None)
    stopping = threading.Event()
    stopping.set()
    runs = _Runs("Running")
    with pytest.raises(Abandoned, match="left running"):
        spark.plan_in_pods(runs, spec(), timeout_s=3600, poll_s=3600, stopping=stopping)  # type: ignore[arg-type]
    assert runs.polls == 0


def test_a_strimzi_reference_reaches_the_driver_as_a_reference_not_as_credentials() -> None:
    """The driver resolves spec.cluster.strimzi itself (plan_job --strimzi): what its pod
    is given is the reference, not the CA or the KafkaUser's password."""
    ref = StrimziRef("events", "kafka", "scram", "retention")
    run = dataclasses.replace(spec(), strimzi=ref)
    job = spark_application(run)["spec"]["arguments"]
    args = dict(zip(job[::2], job[1::2], strict=True))
    assert StrimziRef(**json.loads(args["--strimzi"])) == ref
    assert "--client-config-secret" not in args
    assert "--strimzi" not in spark_application(spec())["spec"]["arguments"]


@pytest.mark.parametrize("inventory", [False, True])
def test_a_policy_batch_asks_spark_for_no_time_lags_and_for_tombstones_only_when_inventoried(
    monkeypatch: pytest.MonkeyPatch, inventory: bool
) -> None:
    """A run uses no group time lag (they are for `kafka-retention plan`), and each one
    costs a record read per partition and group; unread ranges are still scanned."""
    from kafka_retention.core.plan_request import PlanRequest

    asked: list[PlanRequest] = []

    def run_batch(_: object, request: PlanRequest) -> dict[str, PolicyPlan]:
        asked.append(request)
        return {}

    monkeypatch.setattr(spark, "local_session", lambda *_, **__: None)
    body: dict[str, object] = {
        "cluster": {"bootstrapServers": "k:9092"},
        "topics": {"names": ["t"]},
        "deleteConsumed": {"groups": ["g"]},
    }
    if inventory:
        body["tombstones"] = {"groups": ["g"], "inventory": True}
    member = Member("team-a/p", parse_policy_spec(body), "uid", 1)
    spark.SparkBatchPlanner(SparkConfig(mode="local"), run_batch)(Batch([member], "k:9092", {}, 0))
    (request,) = asked
    scans = request.scans
    assert (scans.time_lag, scans.unconsumed, scans.tombstones) == (False, True, inventory)


def test_spark_submit_comes_from_spark_home_when_it_is_set_else_from_pyspark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pyspark

    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert spark._bundled_spark_submit() == str(tmp_path / "bin" / "spark-submit")
    monkeypatch.delenv("SPARK_HOME")
    assert spark._bundled_spark_submit() == str(
        Path(pyspark.__file__).parent / "bin" / "spark-submit"
    )


# --- where a batch runs: bound batches in the operator's namespace -------------------

OPERATOR_NS = "kr-system"


def member(key: str, binding: str | None, uid: str = "uid") -> Member:
    policy = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092"},
            "topics": {"names": ["t"]},
            "maxRetention": "1d",
        }
    )
    return Member(key, dataclasses.replace(policy, binding=binding), uid, 1)


def no_local_job(_: object, request: object) -> dict[str, PolicyPlan]:
    raise AssertionError("a batch in pods is planned in pods, not in this process")


def pod_planner() -> spark.SparkBatchPlanner:
    return spark.SparkBatchPlanner(
        SparkConfig(mode="kubernetes", namespace=OPERATOR_NS), no_local_job
    )


def test_a_bound_batch_runs_in_the_operators_namespace_and_is_owned_by_no_policy() -> None:
    """In the tenant's namespace the tenant could forge the run's plan ConfigMaps; an owner
    reference across namespaces is one the garbage collector treats as absent (it would
    delete the driver), so the run has none and the operator removes it itself."""
    run = pod_planner().run_spec([member("team-a/p", "orders")], "{}", 0)
    assert run.namespace == OPERATOR_NS
    assert run.owners == ()
    for obj in (request_configmap(run), spark_application(run)):
        assert obj["metadata"]["namespace"] == OPERATOR_NS
        assert "ownerReferences" not in obj["metadata"]
    argv = spark_submit_argv(run, "https://h:1")
    assert f"spark.kubernetes.namespace={OPERATOR_NS}" in argv
    job = argv[argv.index(spark_runs_job_file()) + 1 :]
    args = dict(zip(job[::2], job[1::2], strict=True))
    assert args["--namespace"] == OPERATOR_NS
    assert json.loads(args["--owner-references"]) == []


def test_a_batch_with_any_bound_member_runs_in_the_operators_namespace() -> None:
    members = [member("team-a/open", None, "u1"), member("team-b/bound", "orders", "u2")]
    run = pod_planner().run_spec(members, "{}", 0)
    assert (run.namespace, run.owners) == (OPERATOR_NS, ())


def test_an_open_tenancy_batch_runs_in_its_policies_namespace_owned_by_them() -> None:
    members = [member("team-a/p", None, "u1"), member("team-a/q", None, "u2")]
    run = pod_planner().run_spec(members, "{}", 0)
    assert run.namespace == "team-a"
    assert [o.uid for o in run.owners] == ["u1", "u2"]
    assert [r["uid"] for r in request_configmap(run)["metadata"]["ownerReferences"]] == [
        "u1",
        "u2",
    ]


def spark_runs_job_file() -> str:
    from kafka_retention.kube_objects.spark_runs import JOB_FILE

    return JOB_FILE


@pytest.fixture
def configmaps(monkeypatch: pytest.MonkeyPatch) -> FakeConfigMaps:
    from kafka_retention.adapters import kube

    fake = FakeConfigMaps()
    monkeypatch.setattr(kube, "read_configmap", fake.read)
    monkeypatch.setattr(kube, "list_configmaps", fake.list)
    monkeypatch.setattr(kube, "delete_configmaps", fake.delete)
    return fake


class _FinishedRuns:
    """spark-submit and the driver pod, as seen by plan_in_pods: submitted, running."""

    def __init__(self) -> None:
        self.submitted: list[RunSpec] = []
        self.cleaned: list[RunSpec] = []

    def submit(self, run: RunSpec) -> bool:
        self.submitted.append(run)
        return True

    def state(self, _: RunSpec) -> spark.RunState:
        return spark.RunState("Running", "Running")

    def cleanup(self, run: RunSpec) -> None:
        self.cleaned.append(run)


def plan_lines(policy: str, target: int) -> str:
    from kafka_retention.core.plan_lines import to_json_lines
    from kafka_retention.core.plan_row import PlanRow

    return to_json_lines([PlanRow("t", 0, target_offset=target)], {}, [], policy=policy)


def run_bound_batch(
    monkeypatch: pytest.MonkeyPatch, configmaps: FakeConfigMaps, planted: str
) -> tuple[dict[str, PolicyPlan], _FinishedRuns]:
    """A bound batch through SparkBatchPlanner in kubernetes mode; the tenant has written
    a forged plan (everything cut to the high watermark) under the run's name in its own
    namespace; the driver (faked) writes `planted` in the run's namespace."""

    runs = _FinishedRuns()
    planner = pod_planner()
    bound = member("team-a/p", "orders")
    monkeypatch.setattr(spark, "KubernetesRuns", lambda *_, **__: runs)

    def submit(run: RunSpec) -> bool:
        runs.submitted.append(run)
        # The tenant's forgery, at the name a run in its namespace would have used.
        configmaps.put(sink_configmaps(run.name, "team-a", plan_lines("team-a/p", 10**12)))
        configmaps.put(sink_configmaps(run.name, run.namespace, planted, compress=True))
        return True

    runs.submit = submit  # type: ignore[method-assign]
    plans = planner(Batch([bound], "k:9092", {}, 0))
    return dict(plans), runs


def test_a_plan_forged_in_the_tenants_namespace_has_no_effect_on_a_bound_run(
    monkeypatch: pytest.MonkeyPatch, configmaps: FakeConfigMaps
) -> None:
    plans, runs = run_bound_batch(monkeypatch, configmaps, plan_lines("team-a/p", 5))
    (run,) = runs.submitted
    assert run.namespace == OPERATOR_NS
    assert [row.target_offset for row in plans["team-a/p"].rows] == [5]
    assert {ns for ns, _ in configmaps.listed} == {OPERATOR_NS}
    # The run's own ConfigMaps are gone after it; the tenant's are not the operator's.
    assert {ns for ns, _ in configmaps.objects} == {"team-a"}
    assert runs.cleaned == [run]


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return gzip_bomb()


def test_a_run_whose_plan_is_a_gzip_bomb_plans_nothing(
    monkeypatch: pytest.MonkeyPatch, configmaps: FakeConfigMaps, bomb: bytes
) -> None:

    runs = _FinishedRuns()
    monkeypatch.setattr(spark, "KubernetesRuns", lambda *_, **__: runs)

    def submit(run: RunSpec) -> bool:
        runs.submitted.append(run)
        configmaps.put(bomb_configmaps(run.name, run.namespace, bomb))
        return True

    runs.submit = submit  # type: ignore[method-assign]
    with pytest.raises(SinkError, match="MAX_DECODED_BYTES"):
        pod_planner()(Batch([member("team-a/p", "orders")], "k:9092", {}, 0))


def test_a_bound_run_in_the_operators_namespace_resolves_no_secret_of_a_tenants() -> None:
    """An inline member's clientConfigSecret is a Secret of its own namespace: a driver in
    the operator's namespace must not look it up there (a binding's Secret of that name)."""
    inline = parse_policy_spec(
        {
            "cluster": {"bootstrapServers": "k:9092", "clientConfigSecret": "team-a-kafka"},
            "topics": {"names": ["t"]},
            "maxRetention": "1d",
        }
    )
    members = [Member("team-a/p", inline, "u1", 1), member("team-b/q", "orders", "u2")]
    run = pod_planner().run_spec(members, "{}", 0)
    assert run.namespace == OPERATOR_NS
    assert "--client-config-secret" not in spark_application(run)["spec"]["arguments"]
