"""The collector's settings (kafka_retention.heap)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from kafka_retention import heap


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_settling_keeps_start_up_objects_out_of_later_collections() -> None:
    gc.unfreeze()
    made_at_start_up = [[i] for i in range(1_000)]
    heap.settle()
    assert gc.get_freeze_count() >= len(made_at_start_up)
    assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD


@pytest.mark.usefixtures("restored_collector")
def test_cycles_made_after_settling_are_collected_without_being_asked() -> None:
    heap.settle()

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    # Net allocations past the young threshold start a collection on their own.
    kept = [[i] for i in range(3 * heap.YOUNG_THRESHOLD)]
    assert gone() is None
    assert len(kept) == 3 * heap.YOUNG_THRESHOLD
