"""The groups of tests that make test's parallel phase keeps on one worker."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.paths import REPO
from tests.helpers.sharing import (
    GROUP_OF_FILE,
    GROUP_OF_TEST,
    ISOLATED_KAFKA,
    KAFKA_ONLY,
    LOCAL_SPARK,
    LONGEST_FIRST,
    group_of,
    longest_first,
)

ISOLATED_FIXTURES = {"isolated_cluster", "isolated_kafka", "isolated_admin"}
# What reaches the API server or the node, which the serial phase restarts under the
# kafka_only session: the fixtures that make namespaces or operators, and the calls.
KUBE_FIXTURES = {"namespace", "e2e_ns", "operator", "operator_log", "planted"}
KUBE_CALLS = ("kubectl", "stack.kube", "stack.node", "OperatorProcess", "kubernetes")


def test_every_grouped_file_exists_so_a_rename_cannot_drop_it_from_its_group() -> None:
    """A renamed file would leave its group unnoticed and run beside the others."""
    missing = [path for path in GROUP_OF_FILE if not (REPO / path).is_file()]
    assert missing == []


def _marked_serial(node: ast.expr) -> bool:
    return "mark.serial" in ast.unparse(node)


def _tests_on_the_isolated_cluster() -> dict[str, bool]:
    """Every test function that takes an isolated-cluster fixture: id -> marked serial."""
    found: dict[str, bool] = {}
    for path in sorted((REPO / "tests").glob("*/test_*.py")):
        tree = ast.parse(path.read_text())
        module_serial = any(
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)
            and _marked_serial(stmt.value)
            for stmt in tree.body
        )
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test_"):
                params = {a.arg for a in stmt.args.args}
                if params & ISOLATED_FIXTURES:
                    serial = module_serial or any(_marked_serial(d) for d in stmt.decorator_list)
                    found[f"{path.relative_to(REPO)}::{stmt.name}"] = serial
    return found


def test_every_listed_isolated_test_exists_and_uses_the_isolated_cluster() -> None:
    """A renamed test, or one moved back to the shared cluster, would break brokers under
    every other test of the parallel phase, or leave the lane for nothing."""
    on_it = _tests_on_the_isolated_cluster()
    assert [test for test in ISOLATED_KAFKA if test not in on_it] == []


def test_only_the_listed_tests_or_serial_ones_use_the_isolated_cluster() -> None:
    """Two tests breaking its brokers at once, on two workers, would fail each other."""
    strays = [t for t, serial in _tests_on_the_isolated_cluster().items() if not serial]
    assert sorted(set(strays) - set(ISOLATED_KAFKA)) == []


def test_a_listed_test_and_its_parametrizations_go_to_the_group_and_its_file_mates_do_not() -> None:
    listed = ISOLATED_KAFKA[0]
    file = listed.split("::")[0]
    assert group_of(listed, file) == "isolated-kafka"
    assert group_of(f"{listed}[a-b]", file) == "isolated-kafka"
    assert group_of(f"{file}::test_some_other_test", file) == file
    assert group_of(f"{listed}_longer", file) == file


def test_a_file_of_a_group_goes_to_its_group() -> None:
    file = next(iter(GROUP_OF_FILE))
    assert group_of(f"{file}::test_anything", file) == GROUP_OF_FILE[file]


def test_the_isolated_fixtures_are_the_ones_conftest_defines() -> None:
    """The rule above is only as good as its list of fixture names."""
    conftest = ast.parse(Path(REPO / "tests" / "conftest.py").read_text())
    defined = {f.name for f in conftest.body if isinstance(f, ast.FunctionDef)}
    assert {name for name in defined if name.startswith("isolated_")} == ISOLATED_FIXTURES


def test_the_longest_units_are_handed_out_first_then_the_most_tests() -> None:
    units = {"tests/e2e/test_few.py": 2, LONGEST_FIRST[1]: 11, "tests/e2e/test_many.py": 23}
    units[LONGEST_FIRST[0]] = 60
    assert longest_first(units) == [
        LONGEST_FIRST[0],
        LONGEST_FIRST[1],
        "tests/e2e/test_many.py",
        "tests/e2e/test_few.py",
    ]


def test_every_longest_unit_is_a_group_or_a_file_that_exists() -> None:
    """A renamed file would silently go back to its place by number of tests."""
    groups = set(GROUP_OF_FILE.values()) | set(GROUP_OF_TEST.values())
    strays = [u for u in LONGEST_FIRST if u not in groups and not (REPO / u).is_file()]
    assert strays == []


def test_a_kafka_only_file_reaches_neither_the_api_server_nor_the_node_and_is_in_no_group() -> None:
    """The kafka_only session runs beside the API server's and the node's restarts, and
    its stack fixture applies no CRDs; a group's tests belong to one parallel worker."""
    for file in KAFKA_ONLY:
        source = (REPO / file).read_text()
        assert [call for call in KUBE_CALLS if call in source] == [], file
        assert file not in GROUP_OF_FILE, file
        assert not [t for t in ISOLATED_KAFKA + LONGEST_FIRST if t.startswith(file)], file
        for stmt in ast.parse(source).body:
            if isinstance(stmt, ast.FunctionDef):
                params = {a.arg for a in stmt.args.args}
                assert params & (KUBE_FIXTURES | ISOLATED_FIXTURES) == set(), (file, stmt.name)


def test_the_files_that_start_a_spark_session_are_the_local_spark_group() -> None:
    """A file left out would start a JVM of its own on another worker; one listed that no
    longer takes the session would hold the group's worker for nothing. The kafka_only
    session's files are in no group (KAFKA_ONLY)."""
    takers = []
    for path in sorted((REPO / "tests").glob("*/test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and "spark" in {a.arg for a in node.args.args}:
                takers.append(str(path.relative_to(REPO)))
                break
    assert sorted(LOCAL_SPARK) == sorted(set(takers) - set(KAFKA_ONLY))
