"""A typed partial view of a snapshot, for UIs: the model's shape, what has not arrived ``None``.

:func:`partial_view` builds the schema's Python type from a snapshot without validating it
(pydantic's ``model_construct``, recursively): models, lists, tuples, dicts and unions of models
are rebuilt; fields whose value has not arrived are ``None`` (and left out of
``model_fields_set``, so ``"name" in view.model_fields_set`` tells what arrived); an open string
shows what has arrived of it. Anything else is the snapshot's plain value.
"""

from __future__ import annotations

import types
import typing
from typing import Any, get_args, get_origin

import pydantic

__all__ = ["partial_view"]

_UNIONS = (typing.Union, types.UnionType)


def partial_view(tp: Any, value: Any) -> Any:
    """``value`` (a snapshot) shaped as ``tp``, unvalidated (see the module docstring)."""
    if value is None:
        return None
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return partial_view(get_args(tp)[0], value)
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return _model(tp, value) if isinstance(value, dict) else value
    if origin in _UNIONS:
        arm = _arm(get_args(tp), value)
        return value if arm is None else partial_view(arm, value)
    args = get_args(tp)
    if origin in (list, set, frozenset, typing.Sequence) and isinstance(value, list) and args:
        return [partial_view(args[0], v) for v in value]
    if origin is tuple and isinstance(value, list) and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return [partial_view(args[0], v) for v in value]
        return [partial_view(a, v) for a, v in zip(args, value, strict=False)]
    if origin in (dict, typing.Mapping) and isinstance(value, dict) and len(args) == 2:
        return {k: partial_view(args[1], v) for k, v in value.items()}
    return value


def _model(cls: type[pydantic.BaseModel], value: dict[str, Any]) -> pydantic.BaseModel:
    fields: dict[str, Any] = {}
    present: set[str] = set()
    for name, info in cls.model_fields.items():
        key = info.alias if info.alias is not None and info.alias in value else name
        if key in value:
            fields[name] = partial_view(info.annotation, value[key])
            present.add(name)
        else:
            fields[name] = None
    return cls.model_construct(_fields_set=present, **fields)


def _arm(arms: tuple[Any, ...], value: Any) -> Any:
    """The union arm a snapshot looks like: for an object, the model whose literal fields it
    matches (a discriminator), else the first model; for anything else, none."""
    if not isinstance(value, dict):
        return None
    models = [a for a in (_unannotated(a) for a in arms) if _is_model(a)]
    for model in models:
        if all(
            value.get(info.alias or name) in get_args(info.annotation)
            for name, info in model.model_fields.items()
            if get_origin(info.annotation) is typing.Literal and (info.alias or name) in value
        ) and any(
            get_origin(info.annotation) is typing.Literal for info in model.model_fields.values()
        ):
            return model
    return models[0] if models else None


def _unannotated(tp: Any) -> Any:
    return get_args(tp)[0] if get_origin(tp) is typing.Annotated else tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)
