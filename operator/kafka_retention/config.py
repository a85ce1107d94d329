"""Operator-wide configuration, built once from `kafka-retention run` flags and handed to
the handlers through Kopf's memo (never a mutable global)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kafka_retention import __version__
from kafka_retention.core.peering import Peering

SparkMode = Literal["local", "kubernetes", "spark-operator"]

# The offsets a RecordErasure scan must span to run on Spark (local mode). Measured
# (bench/erasure_scan.py, 10,000 digests, 3 partitions, 2 shared cores, 2026-11-29, five
# runs of the section): warm, Spark overtakes the in-process scan between 100,000 and
# 1,000,000 records (at 300,000: 1.3-2.0 s against 1.6-2.7 s) and takes 3.3-4.4 s against
# 5.7-6.4 s at 1,000,000; but the first scan also starts the session (7-9 s, and a JVM of
# 1 GiB beside the operator). An erasure scans at least three times (the first scan, then
# ValuesErased and KeyErased verified), so from 1,000,000 records its own scans pay that
# start back; smaller ones stay in process.
ERASURE_SPARK_MIN_RECORDS = 1_000_000


@dataclass(frozen=True)
class SparkConfig:
    mode: SparkMode = "local"
    image: str = f"kafka-retention-operator:{__version__}"
    service_account: str = "kafka-retention-spark"
    executors: int = 2
    run_timeout_s: float = 1800.0
    # kubernetes mode: where spark-submit finds the API server (in-cluster defaults).
    master: str = "https://kubernetes.default.svc"
    ca_cert: str | None = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    token_file: str | None = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # noqa: S105
    # Spark properties for every pod run (pod templates, resource requests, ...).
    spark_conf: tuple[tuple[str, str], ...] = ()
    # Where pod runs of bound batches (strict tenancy) happen: the operator's own
    # namespace (--operator-namespace), which no tenant can write. Open tenancy's runs
    # happen in the policies' namespace.
    namespace: str = "kafka-retention-system"
    # A RecordErasure scan spanning at least this many offsets runs on the local Spark
    # session (local mode only; pod modes keep the in-process scan). 0: always Spark.
    erasure_min_records: int = ERASURE_SPARK_MIN_RECORDS


@dataclass(frozen=True)
class SchedulingConfig:
    # Batches (one per cluster) that run at once; each is one thread while it runs.
    workers: int = 4
    # Policies of one batch applied at once after planning (fresh re-check, delete).
    apply_workers: int = 4
    # Policies due within this many seconds of each other join the same batch.
    batch_window_s: float = 5.0
    # Batches whose partitions (the union over their policies) stay within this are
    # planned in the operator process; larger ones go to Spark. None: the default of the
    # Spark mode (in_process_max_partitions below).
    in_process_max_partitions: int | None = None


# The default line between planning in the operator process and with Spark, by where
# Spark runs. A local session shares the operator's own cores, so it only adds its
# scheduling and Python workers: on 2 cores the in-process plan was faster at every size
# measured (BENCHMARKS.md planning rows: 2.8 s vs 4.3 s at 10,000 partitions, 11.3 s vs
# 15.7 s at 50,000; a 20,000-partition policy run 8.8 s vs 11.7 s, bench.policy_run on
# 2026-11-27). In pod modes executors on other machines spread the reads, so Spark takes
# over sooner.
IN_PROCESS_MAX_PARTITIONS: dict[SparkMode, int] = {
    "local": 50_000,
    "kubernetes": 10_000,
    "spark-operator": 10_000,
}


@dataclass(frozen=True)
class OperatorConfig:
    spark: SparkConfig = field(default_factory=SparkConfig)
    scheduling: SchedulingConfig = field(default_factory=SchedulingConfig)
    # spec.cluster.brokers.access: local reads and removes under the brokers' log.dirs on
    # the operator's own filesystem: only where a person said so (--local-broker-volumes).
    local_broker_volumes: bool = False
    # --peering: this replica's place among its peers; None when it runs standalone.
    peering: Peering | None = None
    # --tenancy: strict (the default) refuses any cluster not named by a
    # KafkaClusterBinding; open keeps the inline forms for single-team installs.
    tenancy: Literal["strict", "open"] = "strict"
    # Where the Secrets that bindings name live (the operator's own namespace).
    operator_namespace: str = "kafka-retention-system"
    # The Secret there holding the Ed25519 key RecordErasure receipts are signed with
    # (data key ed25519.pem or ed25519.seed).
    erasure_signing_secret: str = "kafka-retention-erasure-signing"  # noqa: S105 - a name

    def in_process_max_partitions(self) -> int:
        """The largest batch planned in the operator process (--in-process-max-partitions,
        else the default of the Spark mode)."""
        given = self.scheduling.in_process_max_partitions
        return IN_PROCESS_MAX_PARTITIONS[self.spark.mode] if given is None else given
