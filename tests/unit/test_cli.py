"""The `kafka-retention` command line."""

from __future__ import annotations

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
