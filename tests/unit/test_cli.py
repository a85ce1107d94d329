"""The `kafka-retention` command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_retention.cli import main


def test_run_without_a_namespace_scope_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run"]) == 2
    assert "--namespace" in capsys.readouterr().err


def test_run_refuses_both_namespace_and_all_namespaces() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "-n", "a", "-A"])
    assert exit_info.value.code == 2


def test_unknown_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2


def test_spark_conf_flags_reach_every_pod_run(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake_run(**kwargs: object) -> None:
        seen.update(kwargs)

    import kopf

    monkeypatch.setattr(kopf, "run", fake_run)
    argv = ["run", "-A", "--spark-conf", "spark.a=1", "--spark-conf", "spark.b=x=y"]
    assert main(argv) == 0
    memo = seen["memo"]
    assert isinstance(memo, kopf.Memo)
    assert memo.config.spark.spark_conf == (("spark.a", "1"), ("spark.b", "x=y"))


@pytest.mark.parametrize("bad", ["spark.a", "a=1", "=1"])
def test_a_spark_conf_that_is_not_a_spark_property_is_a_usage_error(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "-A", "--spark-conf", bad])
    assert exit_info.value.code == 2
    assert "expected spark.KEY=VALUE" in capsys.readouterr().err


def test_purge_loads_only_what_a_purge_needs(tmp_path: Path) -> None:
    """`kafka-retention purge` is measured beside kafka-delete-records.sh, start-up
    included: it loads no Kubernetes client, Kopf, Spark, or key store parsers (those took
    most of its start; `python -X importtime` shows each one's cost)."""
    code = (
        "import sys\n"
        "from kafka_retention.cli import main\n"
        f"assert main(['purge', '--bootstrap-server', '127.0.0.1:1', '--offset-json-file', "
        f"{str(tmp_path / 'missing.json')!r}]) == 2\n"
        f"print([m for m in {sorted(NOT_FOR_PURGES)!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


NOT_FOR_PURGES = {"kubernetes", "kopf", "pyspark", "cryptography", "tenacity", "prometheus_client"}


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        ([], 50_000),
        (["--spark-mode", "kubernetes"], 10_000),
        (["--spark-mode", "spark-operator"], 10_000),
        (["--in-process-max-partitions", "0"], 0),
        (["--spark-mode", "kubernetes", "--in-process-max-partitions", "20000"], 20_000),
    ],
)
def test_the_in_process_planning_line_follows_where_spark_runs_unless_given(
    flags: list[str], line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, object] = {}
    import kopf

    monkeypatch.delenv("KAFKA_RETENTION_SPARK_MODE", raising=False)
    monkeypatch.setattr(kopf, "run", lambda **kwargs: seen.update(kwargs))
    assert main(["run", "-A", *flags]) == 0
    memo = seen["memo"]
    assert isinstance(memo, kopf.Memo)
    assert memo.config.in_process_max_partitions() == line
