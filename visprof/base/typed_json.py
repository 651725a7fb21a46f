"""Parsed JSON decoded into annotated dataclasses, every field checked against its annotation.

    decoder = DataclassDecoder(required={"Point": ("x", "y")}, missing_note=" (every point has it)")
    point = decoder.decode(Point, json.loads(text))   # DocumentError naming the field if it does not fit

The annotations drive it: dataclasses, ``list[...]``, ``dict[str, ...]``, unions with None, str,
int, float (an int is accepted and made a float), bool and Any. A value of the wrong JSON kind is
a DocumentError whose message names its path (``categories[3].time_ms: expected a number, got a
string ('1.5')``). Unknown keys are ignored, so newer writers may add fields. A field is required
when ``required`` lists it for its class, or when it has no default.
"""
from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from typing import Any, Callable, Mapping, Union

from visprof.base.inputs import describe_value


class DocumentError(Exception):
    """A document that does not fit its dataclasses; the message names the field."""

    def as_user_error(self, message: str) -> Exception:
        from visprof.base.errors import BadInputError

        return BadInputError(message)


class DataclassDecoder:
    """Decoders made once per annotation (and kept), for one set of required fields."""

    def __init__(self, required: Mapping[str, tuple[str, ...]] | None = None, missing_note: str = ""):
        self._required = dict(required or {})
        self._missing_note = missing_note
        self._decoders: dict[Any, Callable[[Any, tuple], Any]] = {}
        self._plans: dict[type, tuple[tuple[str, Any, bool], ...]] = {}

    def decode(self, tp: Any, value: Any) -> Any:
        """``value`` (parsed JSON) as ``tp``; DocumentError naming the path where it does not fit."""
        return self._decoder(tp)(value, ())

    def _decoder(self, tp: Any) -> Callable[[Any, tuple], Any]:
        found = self._decoders.get(tp)
        if found is None:
            found = self._decoders[tp] = self._make_decoder(tp)
        return found

    def _field_plan(self, tp: type) -> tuple[tuple[str, Any, bool], ...]:
        """Per dataclass, once: each field's name, resolved type, and whether a document must have it.
        ``typing.get_type_hints`` evaluates every annotation string again on each call; done per
        decoded object, it was most of the time of loading a large store."""
        plan = self._plans.get(tp)
        if plan is None:
            namespace = vars(sys.modules[tp.__module__])
            hints = {name: _resolved(hint, namespace) for name, hint in typing.get_type_hints(tp).items()}
            required = self._required.get(tp.__name__, ())
            plan = self._plans[tp] = tuple(
                (f.name, hints[f.name],
                 f.name in required or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING))
                for f in dataclasses.fields(tp))
        return plan

    def _make_decoder(self, tp: Any) -> Callable[[Any, tuple], Any]:
        """A function decoding parsed JSON as ``tp`` (raising DocumentError that names the path),
        made once per annotation. Nested annotations' decoders are looked up on first use, so a
        dataclass that contains itself does not recurse here."""
        kind, args = _shape(tp)
        if kind == "any":
            return lambda value, where: value
        if kind == "union":
            nullable = type(None) in args
            options = [(_checker(arg), arg) for arg in args if arg is not type(None)]

            def decode_union(value, where):
                if value is None and nullable:
                    return None
                for fits, arg in options:
                    if fits(value):
                        return self._decoder(arg)(value, where)
                raise _mismatch(tp, value, where)
            return decode_union
        if kind == "dataclass":
            plan: list = []

            def decode_dataclass(value, where):
                if not isinstance(value, dict):
                    raise _mismatch(tp, value, where)
                if not plan:
                    plan.extend((name, self._decoder(field_type), required, *_taken_as_is(field_type))
                                for name, field_type, required in self._field_plan(tp))
                kwargs = {}
                for name, decode, required, exact, nullable in plan:
                    v = value.get(name, _ABSENT)
                    # A value of its field's JSON type is taken here, without a call: a result has
                    # hundreds of thousands of them, and the calls were most of a store's loading.
                    if type(v) is exact or (v is None and nullable):
                        kwargs[name] = v
                    elif v is not _ABSENT:
                        kwargs[name] = decode(v, (where, name))
                    elif required:
                        raise DocumentError(f"{_path((where, name))}: missing{self._missing_note}")
                # Unknown keys are ignored: newer writers may add fields.
                return tp(**kwargs)
            return decode_dataclass
        fits = _checker(tp)
        if kind == "list" and _shape(args[0])[0] == "plain":
            item = args[0]
            item_fits = _checker(item)

            def decode_plain_list(value, where):  # e.g. a list of numbers
                if not fits(value):
                    raise _mismatch(tp, value, where)
                for i, v in enumerate(value):
                    if not item_fits(v):
                        raise _mismatch(item, v, (where, i))
                return [float(v) for v in value] if item is float else list(value)
            return decode_plain_list
        if kind in ("list", "dict"):
            item = args[-1]

            def decode_container(value, where):
                if not fits(value):
                    raise _mismatch(tp, value, where)
                decode = self._decoder(item)
                if kind == "list":
                    return [decode(v, (where, i)) for i, v in enumerate(value)]
                return {k: decode(v, (where, k)) for k, v in value.items()}
            return decode_container

        def decode_plain(value, where):
            if not fits(value):
                raise _mismatch(tp, value, where)
            return float(value) if tp is float else value
        return decode_plain


_ABSENT = object()  # a field the document does not have


def _resolved(hint: Any, namespace: dict) -> Any:
    """``hint`` with the names quoted inside ``list[...]``, ``dict[...]`` or a union evaluated in the
    dataclass's module (``children: list["Shape"]``): Python 3.11's ``get_type_hints`` does that, 3.10's
    leaves them as strings or ForwardRefs, which no value is an instance of."""
    if isinstance(hint, (str, typing.ForwardRef)):
        text = hint if isinstance(hint, str) else hint.__forward_arg__
        return eval(text, namespace)  # noqa: S307 - an annotation of visprof's own code
    args = typing.get_args(hint)
    if not args:
        return hint
    resolved = tuple(_resolved(arg, namespace) for arg in args)
    if resolved == args:
        return hint
    origin = typing.get_origin(hint)
    return Union[resolved] if origin in (Union, types.UnionType) else origin[resolved]


class _Never:
    """A type no JSON value has: the exact type of a field whose values always need decoding."""


def _taken_as_is(tp: Any) -> tuple[type, bool]:
    """(the JSON type whose values a field of annotation ``tp`` takes unchanged, whether None is taken)."""
    kind, args = _shape(tp)
    if kind == "union" and type(None) in args:
        rest = [arg for arg in args if arg is not type(None)]
        return (_EXACT.get(rest[0], _Never) if len(rest) == 1 else _Never), True
    return _EXACT.get(tp, _Never), False


# A plain annotation's JSON type, whose values need no check or conversion (bool is not int's: a
# true where a number belongs goes through the checker, which refuses it).
_EXACT = {float: float, int: int, str: str, bool: bool}


def _expected(tp: Any) -> str:
    """``tp`` in the words of an error message."""
    if tp is Any:
        return "any value"
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_expected(arg) for arg in typing.get_args(tp))
    if dataclasses.is_dataclass(tp) or origin is dict or tp is dict:
        return "an object"
    if origin is list or tp is list:
        return "a list"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(tp, str(tp))


def _path(where: tuple) -> str:
    """A field's path as an error message names it (``categories[3].time_ms``). While decoding,
    a path is a chain of (parent, key) pairs, () for the document itself: built as text only when
    something is wrong, not once per decoded value."""
    keys = []
    while where:
        where, key = where
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text = f"{text}[{key}]" if isinstance(key, int) else (f"{text}.{key}" if text else key)
    return text


@functools.lru_cache(maxsize=None)
def _shape(tp: Any) -> tuple[str, tuple]:
    """What the decoder needs to know of an annotation, worked out once per annotation: its kind
    ("any", "union", "dataclass", "list", "dict" or "plain") and its type arguments."""
    if tp is Any:
        return "any", ()
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return "union", typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        return "dataclass", ()
    if origin is list:
        return "list", typing.get_args(tp)
    if origin is dict:
        return "dict", typing.get_args(tp)
    return "plain", ()


def _mismatch(tp: Any, value: Any, where: tuple) -> DocumentError:
    return DocumentError(f"{_path(where) or 'the document'}: expected {_expected(tp)}, got {describe_value(value)}")


@functools.lru_cache(maxsize=None)
def _checker(tp: Any) -> Callable[[Any], bool]:
    """Whether a value has the JSON kind of ``tp`` (the outer level only), as a function made once
    per annotation. bool is an int in Python but not a number in a result."""
    kind, args = _shape(tp)
    if kind == "any":
        return lambda value: True
    if kind == "union":
        options = [_checker(arg) for arg in args]
        return lambda value: any(fits(value) for fits in options)
    if kind in ("dataclass", "dict") or tp is dict:
        return lambda value: isinstance(value, dict)
    if kind == "list" or tp is list:
        return lambda value: isinstance(value, list)
    if tp is type(None):
        return lambda value: value is None
    if tp is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    return lambda value: isinstance(value, tp)


__all__ = ["DataclassDecoder", "DocumentError"]
