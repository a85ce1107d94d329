"""The Spark launcher, local mode: one SparkSession kept for the life of the process, so a
reconcile does not pay JVM start-up (about 8 s on two cores) every time."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

_lock = threading.Lock()
_session: Any = None


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
