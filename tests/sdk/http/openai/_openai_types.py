"""A request body checked against OpenAI's published request types: the ``TypedDict``s of the
installed ``openai`` package (``CompletionCreateParamsStreaming``,
``ResponseCreateParamsStreaming``), as OpenAI's API reads them: an unknown key is refused
(OpenAI answers it with HTTP 400 ``unknown_parameter``), a required one must be there, every
value must be of its declared type (a union: one of its members, keys included).

pydantic validates the leaves; the walk over ``TypedDict``s is ours, because pydantic lets a
``TypedDict`` it did not define keep unknown keys.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions
from pydantic import TypeAdapter, ValidationError
from typing_extensions import is_typeddict

__all__ = ["openai_errors"]

_WRAPPERS = {
    getattr(module, name)
    for module in (typing, typing_extensions)
    for name in ("Required", "NotRequired", "Annotated", "ReadOnly")
    if hasattr(module, name)
}


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) in _WRAPPERS:
        tp = get_args(tp)[0]
    return tp


def openai_errors(value: Any, tp: Any, where: str = "body") -> list[str]:
    """What is wrong with ``value`` as a ``tp`` (empty: nothing)."""
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        found: list[str] = []
        for member in get_args(tp):
            errors = openai_errors(value, member, where)
            if not errors:
                return []
            found.extend(errors)
        return [f"{where}: no member of {tp} fits: {found[:4]}"]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        hints = typing.get_type_hints(tp, include_extras=True)
        errors = [f"{where}.{k}: unknown parameter" for k in value if k not in hints]
        errors += [f"{where}.{k}: missing" for k in tp.__required_keys__ if k not in value]
        for key, item in value.items():
            if key in hints:
                errors += openai_errors(item, hints[key], f"{where}.{key}")
        return errors
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{where}: {value!r} not in {get_args(tp)}"]
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, typing.List):  # noqa: UP006
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        (item_type,) = get_args(tp) or (Any,)
        return [
            e
            for i, item in enumerate(value)
            for e in openai_errors(item, item_type, f"{where}[{i}]")
        ]
    if origin in (dict, collections.abc.Mapping, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        return []  # free-form (a schema, metadata): its keys are the caller's
    if tp is object or tp is Any:
        return []
    try:
        TypeAdapter(tp).validate_python(value, strict=True)
    except ValidationError as exc:
        return [f"{where}: {exc.errors()[0]['msg']}"]
    except Exception as exc:  # a type pydantic cannot build a validator for
        return [f"{where}: cannot check {tp}: {exc}"]
    return []
