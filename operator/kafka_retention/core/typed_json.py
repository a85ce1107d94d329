"""Frozen dataclasses to and from JSON-shaped values, following their own field types.

One codec for every record that crosses a process boundary (a plan request to a Spark
pod, plan rows back): written from the dataclass, so a field added to one crosses with
no codec edit. Tuples travel as JSON arrays and come back as tuples, nested dataclasses
as objects, maps with int keys as objects with string keys (JSON has no other).

A key missing from the JSON takes its field's default (a document from a version that
predates the field); a key the dataclass does not know, or a value of the wrong type,
is refused: such a document may come from a ConfigMap a tenant can write, and dropping
or coercing what it says would act on less than was asked.

Decoders are built once per type (a million plan rows go through one).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

Decoder = Callable[[Any], Any]


def camel(name: str) -> str:
    """A field's JSON key: log_start_offset -> logStartOffset."""
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


def same(name: str) -> str:
    return name


def encode(value: Any, naming: Callable[[str], str] = same) -> Any:
    """`value` (a dataclass) as json.dumps takes it: every field under its key."""
    tp: Any = type(value)
    return encoder(tp, naming)(value)


@functools.cache
def encoder(tp: Any, naming: Callable[[str], str] = same) -> Callable[[Any], Any]:
    """The function that encodes values of type `tp` (as decoder, the other way)."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        fields = [
            (f.name, naming(f.name), encoder(hints[f.name], naming)) for f in dataclasses.fields(tp)
        ]
        plain = [(name, key) for name, key, convert in fields if convert is same]
        nested = [(name, key, convert) for name, key, convert in fields if convert is not same]

        def encode_object(value: Any) -> dict[str, Any]:
            out = {key: getattr(value, name) for name, key in plain}
            for name, key, convert in nested:
                out[key] = convert(getattr(value, name))
            return out

        return encode_object
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))
        one = encoder(inner, naming)
        return same if one is same else (lambda value: None if value is None else one(value))
    if origin in (tuple, list):
        item = encoder(args[0], naming)
        return list if item is same else (lambda value: [item(v) for v in value])
    if origin is dict:
        if encoder(args[1], naming) is not same:
            raise TypeError(f"no JSON encoder for {tp}: only maps of plain values")
        return dict
    return same


def decode(tp: Any, raw: Any, naming: Callable[[str], str] = same) -> Any:
    """`raw` (as json.loads, or a Spark row's asDict, gives it) as a value of type `tp`."""
    return decoder(tp, naming)(raw)


@functools.cache
def decoder(tp: Any, naming: Callable[[str], str] = same) -> Decoder:
    """The function that decodes JSON-shaped values of type `tp`."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass_decoder(tp, naming)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1 or len(args) != 2:
            raise TypeError(f"no JSON decoder for {tp}: only X | None unions")
        one = decoder(inner[0], naming)
        return lambda raw: None if raw is None else one(raw)
    if origin is tuple:
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"no JSON decoder for {tp}: only tuple[X, ...]")
        if args[0] is str:
            return functools.partial(_strings, tp)
        item = decoder(args[0], naming)
        return lambda raw: tuple(item(v) for v in _array(raw, tp))
    if origin is list:
        item = decoder(args[0], naming)
        return lambda raw: [item(v) for v in _array(raw, tp)]
    if origin is dict:
        key = _map_key(args[0])
        value = decoder(args[1], naming)

        def decode_map(raw: Any) -> dict[Any, Any]:
            found = _object(raw, tp)
            out = {key(k): value(v) for k, v in found.items()}
            if len(out) != len(found):  # "1" and 1, or "01" and "1": one key twice
                raise ValueError(f"{tp}: keys that name the same value in {raw!r:.80}")
            return out

        return decode_map
    if tp is float:
        return _float
    if tp is int:
        return _int
    if tp in (str, bool):
        return functools.partial(_exactly, tp)
    if tp is Any:
        return same
    raise TypeError(f"no JSON decoder for {tp}")


def _dataclass_decoder(cls: type[Any], naming: Callable[[str], str]) -> Decoder:
    hints = typing.get_type_hints(cls)
    # Scalar fields are checked inline (a million plan rows cross this): (attribute, key,
    # the one type a value may have, whether None is allowed, whether null reads as
    # the default); the others go through their decoders.
    plain: list[tuple[str, str, type[Any], bool, bool]] = []
    nested: list[tuple[str, str, Decoder]] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp, key = hints[f.name], naming(f.name)
        args = typing.get_args(tp)
        optional = type(None) in args
        scalar = next((a for a in args if a is not type(None)), None) if optional else tp
        if scalar in (int, str, bool):
            has_default = f.default is not dataclasses.MISSING
            plain.append((f.name, key, scalar, optional, has_default))
        else:
            nested.append((f.name, key, _or_default(f, tp, decoder(tp, naming))))
    known = frozenset([key for _, key, *_ in plain] + [key for _, key, _ in nested])

    required = frozenset(
        naming(f.name)
        for f in dataclasses.fields(cls)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )

    def decode_object(raw: Any) -> Any:
        # A plain dict first: the abstract-class check cost a third of a row's decode.
        if type(raw) is not dict and not isinstance(raw, Mapping):
            raise ValueError(f"{cls.__name__}: expected an object, got {raw!r:.80}")
        if not known.issuperset(raw):
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(set(raw) - known)}")
        if not required.issubset(raw):
            raise ValueError(f"{cls.__name__}: missing fields {sorted(required - set(raw))}")
        kwargs: dict[str, Any] = {}
        for name, key, kind, optional, has_default in plain:
            if key not in raw:
                continue
            value = raw[key]
            if type(value) is not kind:  # bool is an int subclass, and never an offset
                if value is None and (optional or has_default):
                    if optional:
                        kwargs[name] = None
                    continue
                raise ValueError(
                    f"{cls.__name__}.{key}: expected {kind.__name__}, got {value!r:.80}"
                )
            kwargs[name] = value
        for name, key, convert in nested:
            if key in raw:
                kwargs[name] = convert(raw[key])
        return cls(**kwargs)

    return decode_object


def _or_default(f: dataclasses.Field[Any], tp: Any, convert: Decoder) -> Decoder:
    """A null for a field that cannot be None but has a default reads as the default: a
    Spark row's empty array column (a failed partition's notes) is null."""
    if f.default is not dataclasses.MISSING:
        default: Callable[[], Any] = functools.partial(same, f.default)
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory
    else:
        return convert
    if type(None) in typing.get_args(tp):
        return convert
    return lambda raw: default() if raw is None else convert(raw)


def _map_key(tp: Any) -> Decoder:
    if tp is str:
        return functools.partial(_exactly, str)
    if tp is int:
        # JSON writes a map's int keys as strings; a Spark row's asDict keeps them ints.
        return lambda raw: _int(_int_key(raw) if isinstance(raw, str) else raw)
    raise TypeError(f"no JSON decoder for map keys of {tp}")


_INT_KEY = re.compile(r"-?[0-9]+")


def _int_key(raw: str) -> int:
    """An int map key as JSON writes it: ASCII digits, an optional minus, nothing else
    (int() would also take spaces, a plus, underscores and other scripts' digits)."""
    if not _INT_KEY.fullmatch(raw):
        raise ValueError(f"expected an integer key, got {raw!r:.80}")
    return int(raw)


def _strings(tp: Any, raw: Any) -> tuple[str, ...]:
    """tuple[str, ...] in one pass (notes, guards: a few a row, a million rows)."""
    found = _array(raw, tp)
    if any(type(v) is not str for v in found):
        raise ValueError(f"expected strings for {tp}, got {raw!r:.80}")
    return tuple(found)


def _array(raw: Any, tp: Any) -> list[Any] | tuple[Any, ...]:
    if type(raw) is not list and not isinstance(raw, list | tuple):
        raise ValueError(f"expected an array for {tp}, got {raw!r:.80}")
    return raw


def _object(raw: Any, tp: Any) -> Mapping[Any, Any]:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise ValueError(f"expected an object for {tp}, got {raw!r:.80}")
    return raw


def _int(raw: Any) -> int:
    if type(raw) is not int:  # bool is an int subclass, and never an offset
        raise ValueError(f"expected an integer, got {raw!r:.80}")
    return raw


def _float(raw: Any) -> float:
    if type(raw) is int:
        return float(raw)
    if type(raw) is not float:
        raise ValueError(f"expected a number, got {raw!r:.80}")
    return raw


def _exactly(tp: type[Any], raw: Any) -> Any:
    if type(raw) is not tp:
        raise ValueError(f"expected {tp.__name__}, got {raw!r:.80}")
    return raw
