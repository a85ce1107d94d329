"""The class-data-sharing archive that make test's local Spark sessions map
(hack/devstack/build.py): recorded once, it must fit the JVM and the class path those
sessions start with, or every session would silently load its classes the slow way."""

from __future__ import annotations

import os
import subprocess
import sys

from devstack import build

SESSION = (
    "from kafka_retention.adapters import spark\n"
    "print(spark.local_session().range(3).count())\n"
    "spark.stop()\n"
)


def test_a_local_session_starts_when_the_archive_is_required_to_map() -> None:
    # -Xshare:on: a JVM that cannot map the archive (another JVM, another class path)
    # refuses to start, where the default would start without it and say so on stderr.
    spark = build.spark_env()
    spark["SPARK_SUBMIT_OPTS"] += " -Xshare:on"
    done = subprocess.run(
        [sys.executable, "-c", SESSION],
        env={**os.environ, **spark},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["3"]
