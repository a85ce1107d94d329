"""Operator-wide configuration from `kafka-retention run` flags (or their env variables)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kafka_retention import __version__

SparkMode = Literal["local", "kubernetes", "spark-operator"]


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


current = SparkConfig()
