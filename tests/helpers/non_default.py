"""Dataclass values with every field set, by introspection, to something other than its
default: a round trip that loses any one field then fails its equality check."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


def unlike_default(tp: Any, name: str, default: Any) -> Any:
    """A value of type `tp` that is not `default` (the field's name in it, where it can be)."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return non_default(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return unlike_default(next(a for a in args if a is not type(None)), name, default)
    if origin is tuple:
        return tuple(unlike_default(args[0], f"{name}-{i}", None) for i in range(2))
    if origin is dict:
        key = unlike_default(args[0], f"{name}.key", None)
        return {key: unlike_default(args[1], f"{name}.value", None)}
    if tp is bool:
        return not default
    if tp is int:
        return (default or 0) + 1 + len(name)
    if tp is float:
        return (default or 0.0) + 0.5 + len(name)
    if tp is str:
        return f"{name}-value"
    raise AssertionError(f"no test value for {tp} ({name}): teach unlike_default the type")


def non_default(cls: type[Any]) -> Any:
    """`cls` with every field set to something other than its default."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        default = None
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        value = unlike_default(hints[f.name], f.name, default)
        assert value != default, f"{cls.__name__}.{f.name}"
        values[f.name] = value
    return cls(**values)
