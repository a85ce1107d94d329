"""The image built from the project's Dockerfile (buildah, on the stand-in base) carries
everything the operator and its Spark pods run. Commands run in the image itself."""

from __future__ import annotations

import subprocess

import pytest

from devstack import image


@pytest.fixture(scope="module")
def operator_image() -> str:
    image.operator_image()  # built or found by make setup; cached by its inputs
    return f"localhost/{image.OPERATOR_IMAGE}"


def in_image(name: str, *argv: str, entrypoint: bool = False) -> subprocess.CompletedProcess[str]:
    done = image.run_in_image(name, *argv, entrypoint=entrypoint)
    if _output_lost(done):
        # buildah's chroot isolation has lost everything a command wrote on a loaded
        # machine: once a fast-failing one's (stderr held only buildah's own "exited with
        # status 1"), once `java -version`'s, which exited 0 with nothing captured. Each
        # call runs in a fresh container, so running it once more changes nothing else;
        # a command that really says nothing does so twice, and its test fails.
        done = image.run_in_image(name, *argv, entrypoint=entrypoint)
    return done


def _output_lost(done: subprocess.CompletedProcess[str]) -> bool:
    if done.returncode:
        return _only_buildah_spoke(done)
    return not done.stdout and not done.stderr  # every command asked here prints something


def _only_buildah_spoke(done: subprocess.CompletedProcess[str]) -> bool:
    own = ("subprocess exited with status", "Error: exit status")
    return not done.stdout and all(line.startswith(own) for line in done.stderr.splitlines())


@pytest.mark.image
def test_the_spark_jobs_are_importable_and_the_job_file_is_where_spark_submit_looks(
    operator_image: str,
) -> None:
    done = in_image(
        operator_image,
        "python",
        "-c",
        "import retention_jobs.plan_job, kafka_retention.cli, os;"
        "print(os.path.isfile('/opt/kafka-retention/spark-jobs/retention_jobs/plan_job.py'))",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


@pytest.mark.image
def test_the_image_runs_as_an_unprivileged_user_with_java_and_spark(operator_image: str) -> None:
    uid = in_image(operator_image, "id", "-u")
    assert uid.stdout.strip() == "10001", uid.stderr
    java = in_image(operator_image, "java", "-version")
    assert java.returncode == 0, java.stderr
    assert 'version "17' in java.stderr
    # A pod's hostname resolves (the kubelet writes /etc/hosts); buildah's does not.
    spark = in_image(
        operator_image,
        "env",
        "SPARK_LOCAL_IP=127.0.0.1",
        "/opt/spark-home/bin/spark-submit",
        "--version",
    )
    assert spark.returncode == 0, spark.stderr
    assert "version 4.3" in spark.stdout + spark.stderr


@pytest.mark.image
def test_the_image_carries_sparks_kafka_source_on_its_class_path(operator_image: str) -> None:
    """The scans read through spark-sql-kafka-0-10 (Dockerfile's jars stage), found with
    no spark.jars setting, as driver and executor pods start Spark; with the log keys
    bridge beside it, which it cannot log without on this Spark."""
    done = in_image(
        operator_image,
        "env",
        "SPARK_LOCAL_IP=127.0.0.1",
        "python",
        "-c",
        "from kafka_retention.adapters.spark import local_session;"
        "from retention_jobs.kafka_source import bridged, has_source;"
        "spark = local_session('1');"
        "print(has_source(spark), bridged(spark))",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["True", "True"]


@pytest.mark.image
def test_the_entrypoint_hands_anything_but_driver_and_executor_to_the_operator_cli(
    operator_image: str,
) -> None:
    done = in_image(operator_image, "--version", entrypoint=True)
    assert done.returncode == 0, done.stderr
    assert "kafka-retention" in done.stdout
    bad = in_image(operator_image, "frobnicate", entrypoint=True)
    assert bad.returncode == 2
    assert "invalid choice: 'frobnicate'" in bad.stderr


@pytest.mark.image
def test_the_executor_entrypoint_demands_spark_settings(operator_image: str) -> None:
    # Without the variables Spark sets on an executor pod, the script stops before Java.
    done = in_image(operator_image, "executor", entrypoint=True)
    assert done.returncode != 0
    assert "SPARK_EXECUTOR_MEMORY" in done.stderr
