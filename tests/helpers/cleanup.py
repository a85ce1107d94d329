"""What a test leaves behind on the shared stack, undone after it, pass or fail."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

_T = TypeVar("_T")


def undone_afterwards(undo: Callable[[_T], object]) -> Iterator[list[_T]]:
    """For a fixture (`yield from`): a list the test adds what it made or changed to;
    undo(item) runs for each after the test."""
    made: list[_T] = []
    yield made
    for item in made:
        undo(item)
