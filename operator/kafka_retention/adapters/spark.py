"""The Spark launcher. Local mode (the default): one SparkSession kept for the life of the
process, so a reconcile does not pay JVM start-up (about 8 s on two cores) every time.
Kubernetes mode: spark-submit in cluster mode. spark-operator mode: a SparkApplication.
The pod modes carry the plan back through ConfigMaps (kube_objects.chunks), never pod logs.

What the job computes is spark-jobs' (retention_jobs.plan_job), which imports the adapters:
the wiring passes its entry point in (`PlanJob`), so no adapter imports a job."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kafka_retention.adapters import kube
from kafka_retention.config import SparkConfig
from kafka_retention.core.failures import Abandoned
from kafka_retention.core.plan_request import PlanRequest, Scans
from kafka_retention.core.policy import PolicyPlan
from kafka_retention.core.policy_spec import Batch, Member
from kafka_retention.core.resources import API_VERSION
from kafka_retention.kube_objects import chunks, spark_runs
from kafka_retention.kube_objects.owners import Owner

log = logging.getLogger(__name__)
_lock = threading.Lock()
_session: Any = None


def kafka_source_jars() -> str:
    """spark.jars for Spark's Kafka source in local mode: every jar in
    KAFKA_RETENTION_SPARK_JARS (the local stack sets it; spark-jobs/pom.xml lists them),
    comma-joined. The image puts them in Spark's own jars directory instead, where every
    mode finds them. "" without them: the scans then read records in Python."""
    where = os.environ.get("KAFKA_RETENTION_SPARK_JARS")
    if not where or not Path(where).is_dir():
        return ""
    return ",".join(str(jar) for jar in sorted(Path(where).resolve().glob("*.jar")))


def local_session(cores: str = "*", driver_memory: str = "1g") -> Any:
    """The process-wide local SparkSession, started on first use."""
    global _session
    with _lock:
        if _session is None:
            # Executors are forked Python workers: same interpreter, same packages.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            # Local mode talks to itself: keep the driver off the machine's public address.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            from pyspark.sql import SparkSession

            _session = (
                SparkSession.builder.master(f"local[{cores}]")
                .appName("kafka-retention")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.driver.memory", driver_memory)
                .config("spark.sql.shuffle.partitions", "8")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.python.worker.reuse", "true")
                # Progress is reported by the job itself, not by Spark's console bar.
                .config("spark.ui.showConsoleProgress", "false")
                # Row-at-a-time UDFs: the planning core is plain Python; no Arrow needed.
                .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
                .config("spark.jars", kafka_source_jars())
                .getOrCreate()
            )
            _session.sparkContext.setLogLevel("WARN")
        return _session


def stop() -> None:
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


# --- runs as pods: spark-submit to Kubernetes, or a spark-operator SparkApplication -----


# A run's state message ends up in its policies' status: what a pod's or a
# SparkApplication's status says is cut to this many characters (in open tenancy the
# tenant may write those objects).
MAX_STATE_MESSAGE = 1000


@dataclass(frozen=True)
class RunState:
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    message: str

    def __post_init__(self) -> None:
        if len(self.message) > MAX_STATE_MESSAGE:
            object.__setattr__(self, "message", self.message[: MAX_STATE_MESSAGE - 3] + "...")

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


def _pod_state(pod: dict[str, Any] | None) -> RunState:
    if pod is None:
        return RunState("Unknown", "driver pod not found")
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    reasons = []
    for cond in status.get("conditions") or []:
        if cond.get("status") == "False" and cond.get("message"):
            reasons.append(f"{cond.get('type')}: {cond['message']}")
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        for kind in ("waiting", "terminated"):
            if state.get(kind) and state[kind].get("reason"):
                reasons.append(
                    f"{cs.get('name')} {kind}: {state[kind]['reason']} "
                    f"{state[kind].get('message') or ''}".strip()
                )
    if phase == "Pending" and not reasons and not status.get("conditions"):
        reasons.append("not scheduled yet (no node has taken the pod)")
    return RunState(phase, "; ".join(reasons) or phase)


def read_plan(namespace: str, run: str) -> str | None:
    """The plan the run wrote to its ConfigMaps, bounded in size (chunks.SinkError beyond);
    None until its manifest exists."""
    return kube.read_configmap_set(namespace, run, "plan")


class KubernetesRuns:
    """spark-submit in cluster mode against the API server the operator talks to."""

    def __init__(
        self,
        master: str,
        ca_cert: str | None = None,
        token_file: str | None = None,
        spark_submit: str | None = None,
    ) -> None:
        self.master, self.ca_cert, self.token_file = master, ca_cert, token_file
        self.spark_submit = spark_submit or _bundled_spark_submit()

    def submit(self, spec: spark_runs.RunSpec) -> bool:
        """Start the run unless its driver already exists; True when this call started it."""
        kube.create_or_keep(spark_runs.request_configmap(spec))
        if kube.read_pod(spec.namespace, f"{spec.name}-driver") is not None:
            return False
        argv = spark_runs.spark_submit_argv(
            spec, self.master, self.spark_submit, self.ca_cert, self.token_file
        )
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )
        if done.returncode != 0:
            # The JVM's message, without its stack frames, is what a user can act on.
            lines = [
                line
                for line in (done.stderr or done.stdout).splitlines()
                if not line.lstrip().startswith("at ") and "WARN" not in line
            ]
            tail = "\n".join(lines[-10:])
            raise RuntimeError(f"spark-submit failed (exit {done.returncode}):\n{tail}")
        return True

    def state(self, spec: spark_runs.RunSpec) -> RunState:
        return _pod_state(kube.read_pod(spec.namespace, f"{spec.name}-driver"))

    def cleanup(self, spec: spark_runs.RunSpec) -> None:
        """The driver pod outlives its run (Completed); nothing else owns it."""
        kube.delete_pod(spec.namespace, f"{spec.name}-driver")


class SparkOperatorRuns:
    """A SparkApplication for the spark-operator to run."""

    API_VERSION = "sparkoperator.k8s.io/v1beta2"

    def submit(self, spec: spark_runs.RunSpec) -> bool:
        kube.create_or_keep(spark_runs.request_configmap(spec))
        return kube.create_or_keep(spark_runs.spark_application(spec))

    def state(self, spec: spark_runs.RunSpec) -> RunState:
        app = kube.read_custom_object(
            self.API_VERSION, "sparkapplications", spec.namespace, spec.name
        )
        if app is None:
            return RunState("Unknown", f"SparkApplication {spec.name} not found")
        app_state = (app.get("status") or {}).get("applicationState") or {}
        state = app_state.get("state") or ""
        phase = {
            "COMPLETED": "Succeeded",
            "FAILED": "Failed",
            "SUBMISSION_FAILED": "Failed",
            "RUNNING": "Running",
        }.get(state, "Pending")
        return RunState(phase, app_state.get("errorMessage") or state or "not picked up yet")

    def cleanup(self, spec: spark_runs.RunSpec) -> None:
        """An owned SparkApplication goes with its policies. One without owners (a bound
        batch's, in the operator's namespace) is removed here; the spark-operator then
        removes its pods."""
        if not spec.owners:
            kube.delete_custom_object(
                self.API_VERSION, "sparkapplications", spec.namespace, spec.name
            )


def _bundled_spark_submit() -> str:
    """SPARK_HOME's spark-submit, as pyspark's local session starts SPARK_HOME's Spark;
    else pyspark's own (the image sets SPARK_HOME to it)."""
    import pyspark

    home = os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)
    return str(Path(home) / "bin" / "spark-submit")


class RunGone(RuntimeError):
    """The run's driver or SparkApplication disappeared before it wrote its plan."""


def plan_in_pods(
    runs: KubernetesRuns | SparkOperatorRuns,
    spec: spark_runs.RunSpec,
    timeout_s: float,
    poll_s: float = 2.0,
    stopping: threading.Event | None = None,
) -> dict[str, Any]:
    """Start the run (or find it started), wait for its plan ConfigMaps, read them back,
    and remove the run's ConfigMaps. A failed or timed-out run raises with its reason;
    `stopping` set ends the wait at once with Abandoned.
    Returns (rows, skipped, tombstones, group types) per policy of the run's batch."""
    from kafka_retention.core.plan_lines import by_policy

    stopping = stopping or threading.Event()
    runs.submit(spec)
    deadline = time.monotonic() + timeout_s
    while True:
        if stopping.is_set():
            # A pool thread still waiting here would hold the process open at exit (Python
            # joins executor threads) for up to the run timeout.
            message = f"operator stopping; Spark run {spec.name} left running"
            log.info("%s: the next operator waits for it by its name", message)
            raise Abandoned(message)
        # The manifest ConfigMap, written last, is the signal that the plan is complete.
        payload = read_plan(spec.namespace, spec.name)
        if payload is not None:
            break
        state = runs.state(spec)
        if state.phase == "Failed":
            _discard_ownerless(runs, spec)
            raise RuntimeError(f"Spark run {spec.name} failed: {state.message}")
        if state.phase == "Unknown":
            # The run existed once submit returned. Its driver (or SparkApplication) is
            # owned by the batch's policies (unless it runs in the operator's namespace):
            # gone means they were deleted and the garbage collector took it, or someone
            # removed it. Waiting out the timeout would hold
            # the cluster's batch slot for nothing.
            _discard_ownerless(runs, spec)
            raise RunGone(f"Spark run {spec.name} is gone before it wrote a plan: {state.message}")
        if time.monotonic() > deadline:
            _discard_ownerless(runs, spec)
            raise RuntimeError(
                f"Spark run {spec.name} gave no plan within {timeout_s:.0f}s; "
                f"last state {state.phase}: {state.message}"
            )
        stopping.wait(poll_s)
    kube.delete_configmaps(spec.namespace, f"{chunks.RUN_LABEL}={spec.name}")
    runs.cleanup(spec)
    return dict(by_policy(payload))


def _discard_ownerless(runs: KubernetesRuns | SparkOperatorRuns, spec: spark_runs.RunSpec) -> None:
    """A failed or timed-out run that no policy owns (a bound batch's, in the operator's
    namespace) would stay for ever: the next slot's run has another name. An owned one is
    left for its owners' garbage collection, and for `kubectl logs` meanwhile."""
    if spec.owners:
        return
    runs.cleanup(spec)
    kube.delete_configmaps(spec.namespace, f"{chunks.RUN_LABEL}={spec.name}")


class PlanJob(Protocol):
    """The plan job run on a SparkSession of this process: every policy of the request
    planned in one job (retention_jobs.plan_job.run_batch, which the wiring passes in)."""

    def __call__(self, spark: Any, request: PlanRequest, /) -> dict[str, PolicyPlan]: ...


class SparkBatchPlanner:
    """Plans a batch of policies (one cluster, one tick) in one Spark job, where the
    operator's --spark-mode says: the local session (through `plan_job`), spark-submit
    pods, or a SparkApplication. Called with a Batch: its members, client config, now."""

    def __init__(self, cfg: SparkConfig, plan_job: PlanJob) -> None:
        self.cfg = cfg
        self.plan_job = plan_job
        self.stopping = threading.Event()

    def stop(self) -> None:
        """End every wait for a plan now (the operator is stopping). Local jobs are
        cancelled: their Spark tasks would otherwise run to the end before exit."""
        self.stopping.set()
        with _lock:
            if _session is not None:
                _session.sparkContext.cancelAllJobs()

    def __call__(self, batch: Batch) -> dict[str, PolicyPlan]:
        members, bootstrap, now_ms = batch.members, batch.bootstrap, batch.now_ms
        client_config = dict(batch.client_config)
        specs = {m.key: m.spec for m in members}
        # The tombstone scan reads every record of the compacted topics: only when asked.
        # Time lags are for `kafka-retention plan`'s output: a run uses none (the tombstone
        # watch reads its own), and each costs a record read per partition and group (a
        # run over 20,000 partitions of two groups spent most of its 24 s on them).
        scans = Scans(
            time_lag=False,
            tombstones=any(
                s.tombstones is not None and s.tombstones.inventory for s in specs.values()
            ),
        )
        # A KafkaClusterBinding's credentials are resolved by the operator (its Secret in the
        # operator's namespace, or its Strimzi reference), and a driver only resolves a
        # policy's own spec.cluster: a bound batch with credentials runs in local mode, in
        # this process, whatever --spark-mode says. (Its pods would run in the operator's
        # namespace, see run_spec, but the driver would not know the binding's Secret.)
        bound_secrets = bool(client_config) and any(m.spec.binding for m in members)
        if self.cfg.mode == "local" or bound_secrets:
            request = PlanRequest.for_policies(bootstrap, client_config, specs, now_ms, scans)
            try:
                results = self.plan_job(local_session(), request)
            except Exception as err:
                if self.stopping.is_set():
                    raise Abandoned("operator stopping; the local Spark job was cancelled") from err
                raise
            return results
        # Secrets stay out of the request: the driver reads clientConfigSecret itself.
        request = PlanRequest.for_policies(bootstrap, {}, specs, now_ms, scans)
        runs: KubernetesRuns | SparkOperatorRuns = (
            KubernetesRuns(self.cfg.master, self.cfg.ca_cert, self.cfg.token_file)
            if self.cfg.mode == "kubernetes"
            else SparkOperatorRuns()
        )
        parts = plan_in_pods(
            runs,
            self.run_spec(members, request.to_json(), now_ms),
            self.cfg.run_timeout_s,
            stopping=self.stopping,
        )
        return {k: PolicyPlan(*plan) for k, plan in parts.items()}

    def run_spec(
        self, members: Sequence[Member], request_json: str, now_ms: int
    ) -> spark_runs.RunSpec:
        """One run per batch and scheduled slot: the same members (and generations) in the
        same slot get the same name, so a restarted operator waits for the run it started.

        A batch with a bound member (strict tenancy: spec.cluster.clusterRef) runs in the
        operator's own namespace: in the tenant's, the tenant could write the run's
        `<run>-plan` ConfigMaps (a forged plan) or pre-create `<run>-driver` (no run at
        all). Such a run has no owners: a reference from there to a policy in another
        namespace is one the garbage collector treats as absent, and it would delete the
        driver at once; the operator removes the run's objects itself (plan_in_pods).
        Open tenancy's runs stay in the policies' namespace, owned by the policies."""
        shortest = min(m.spec.interval_ms for m in members)
        name = spark_runs.batch_run_name(
            [f"{m.key}@{m.generation}" for m in members], f"r{now_ms // shortest}"
        )
        bound = any(m.spec.binding is not None for m in members)
        return spark_runs.RunSpec(
            ()
            if bound
            else tuple(Owner(API_VERSION, "RetentionPolicy", m.name, m.uid) for m in members),
            name,
            self.cfg.namespace if bound else members[0].namespace,
            self.cfg.image,
            self.cfg.service_account,
            request_json,
            executors=self.cfg.executors,
            spark_conf=dict(self.cfg.spark_conf),
            # A bound batch reaches here only without credentials (__call__), and an inline
            # member's Secret or Strimzi reference is its own namespace's, not the
            # operator's: the driver resolves nothing there.
            client_config_secret=None if bound else members[0].spec.client_config_secret,
            strimzi=None if bound else members[0].spec.strimzi,
        )
