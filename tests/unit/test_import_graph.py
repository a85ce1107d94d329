"""The project's own import graph has no cycle: no module of the operator or of the Spark
jobs imports, directly or through others, a module that imports it. import-linter's
acyclic_siblings contract (pyproject.toml) says so package by package; this says it
module by module, across both roots (an adapter and a job importing each other are in
two packages that no common ancestor holds), and names every cycle it finds."""

from __future__ import annotations

from collections.abc import Mapping, Set
from functools import cache

import grimp

ROOTS = ("kafka_retention", "retention_jobs")

# Imports made only for the type checker (under TYPE_CHECKING) that close a cycle, each
# with the reason it is still there. The list only shrinks: an entry whose import is
# gone fails test_every_excused_import_is_still_there.
TYPE_ONLY: set[tuple[str, str]] = set()


@cache
def graph(type_checking: bool) -> grimp.ImportGraph:
    # No cache directory: the test writes nothing into the tree it reads.
    return grimp.build_graph(
        *ROOTS, exclude_type_checking_imports=not type_checking, cache_dir=None
    )


def edges(g: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}


def cycles(imports: Mapping[str, Set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (or one importing itself),
    as sorted module names: Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(imports):
        if start in index:
            continue
        work = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(imports.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1 or node in imports.get(node, ()):
                    found.append(sorted(members))
    return found


def test_the_cycle_finder_finds_a_ring_and_a_self_import_and_nothing_in_a_tree() -> None:
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(ring) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}, "b": set()}) == [["a"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_module_imports_back_one_that_imports_it_at_run_time() -> None:
    assert cycles(edges(graph(type_checking=False))) == []


def test_no_module_imports_back_one_that_imports_it_even_for_the_type_checker() -> None:
    imports = edges(graph(type_checking=True))
    for importer, imported in TYPE_ONLY:
        imports[importer].discard(imported)
    assert cycles(imports) == []


def test_every_excused_import_is_still_there_and_only_for_the_type_checker() -> None:
    full, run_time = graph(type_checking=True), graph(type_checking=False)
    for importer, imported in TYPE_ONLY:
        assert full.direct_import_exists(importer=importer, imported=imported)
        assert not run_time.direct_import_exists(importer=importer, imported=imported)


def test_the_spark_jobs_and_the_adapters_import_each_other_one_way_only() -> None:
    """spark-jobs imports the adapters (the Kafka reads, the ConfigMap sink); the Spark
    launcher gets the job's entry point from the wiring instead of importing it back."""
    g = graph(type_checking=True)
    assert g.chain_exists("retention_jobs", "kafka_retention.adapters", as_packages=True)
    assert not g.chain_exists("kafka_retention.adapters", "retention_jobs", as_packages=True)
