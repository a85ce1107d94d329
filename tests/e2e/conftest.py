"""End-to-end fixtures: one operator process for the session, watching `e2e-*` namespaces.

KAFKA_RETENTION_E2E_PREFIX changes `e2e` to another prefix, so two test sessions can share
one running stack (`make dev-up`) without their operators acting on each other's objects.
A pytest-xdist worker adds its number (`e2e0-*`, `e2e1-*`: never matched by `e2e-*`), so
make test's parallel sessions each have an operator of their own. Kept short: namespace
names are cut at 63 characters and tests read the 6-hex tag at their end.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.operator import OperatorProcess
from devstack.stack import Stack
from tests.helpers.cleanup import undone_afterwards
from tests.helpers.kube import create_watched_namespace, slug

PREFIX = os.environ.get("KAFKA_RETENTION_E2E_PREFIX", "e2e") + os.environ.get(
    "PYTEST_XDIST_WORKER", ""
).removeprefix("gw")


@pytest.fixture(scope="session")
def operator(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    # The brokers' log dirs are on this machine: orphan cleanup may use access local.
    proc = OperatorProcess(
        stack, [f"{PREFIX}-*"], log, extra_args=("--local-broker-volumes",)
    ).start()
    yield proc
    code = proc.stop()
    assert code == 0, f"operator exited {code}; log: {log}"


@pytest.fixture
def e2e_ns(
    stack: Stack, operator: OperatorProcess, request: pytest.FixtureRequest
) -> Iterator[str]:
    ns = f"{PREFIX}-{slug(request)}"[:63].rstrip("-")
    create_watched_namespace(stack, operator, ns)
    yield ns
    # Policies first, while the operator is sure to be there to release their finalizers;
    # the namespace then goes without waiting.
    stack.kubectl("delete", "retentionpolicies", "--all", "-n", ns, "--timeout=60s", check=False)
    stack.kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.fixture
def operator_log(operator: OperatorProcess) -> Path:
    return operator.log


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that used the session's operator gets that operator's lines about its
    namespace, and its warnings and errors, in the report: the log itself is in a
    temporary directory that later pytest runs remove."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    funcargs = getattr(item, "funcargs", {})
    ns, operator = funcargs.get("e2e_ns"), funcargs.get("operator")
    if report.when != "call" or not report.failed or not isinstance(operator, OperatorProcess):
        return
    try:
        lines = operator.log.read_text(errors="replace").splitlines()
    except OSError as err:
        report.sections.append(("operator log", f"unreadable: {err}"))
        return
    named = [line for line in lines if ns and ns in line][-80:]
    trouble = [line for line in lines if "[ERROR" in line or "[WARNING" in line][-20:]
    report.sections.append((f"operator log: lines naming {ns}", "\n".join(named)))
    report.sections.append(("operator log: last warnings and errors", "\n".join(trouble)))


@pytest.fixture
def planted(stack: Stack) -> Iterator[list[Path]]:
    """Paths the test plants in the brokers' log dirs; whatever is left is removed
    afterwards, so no later broker restart ever loads them."""

    def remove(path: Path) -> None:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)

    yield from undone_afterwards(remove)


# make test-compat: the scenarios of test_kafka_versions.py by release, as this run found
# them, written into the file KAFKA_RETENTION_COMPAT_TABLE names when the session ends.
COMPAT_TABLE = "KAFKA_RETENTION_COMPAT_TABLE"
_compat: dict[tuple[str, str], str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not os.environ.get(COMPAT_TABLE) or "test_kafka_versions.py::" not in report.nodeid:
        return
    test, _, param = report.nodeid.split("::")[-1].partition("[")
    key = (test, param.rstrip("]"))
    if report.when == "call" or report.outcome != "passed":
        # A failed set-up (the release's cluster did not start) counts as a failure.
        _compat[key] = "failed" if report.outcome == "failed" else report.outcome
    elif key not in _compat:
        _compat[key] = "not run"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get(COMPAT_TABLE)
    if not target or not _compat:
        return
    from tests.helpers import kafka_versions

    Path(target).write_text(kafka_versions.compat_table(_compat, kafka_versions.SUPPORTED))
