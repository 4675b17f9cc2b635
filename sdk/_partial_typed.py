"""Typed access to a value that is still arriving, without a type that lies.

``stream.partial`` used to be typed ``Person | None`` while its fields were ``None`` until they
arrived: mypy and pyright passed ``view.name.upper()``, and it crashed at runtime. Python's
type system cannot say "``Person`` with every field optional" for any model (no mapped types),
so the truth is told another way: a :class:`Partial` is read through **selectors**,
``partial.get(lambda p: p.address.city)``, which the type checker reads against ``Person``
(a misspelt field or a wrong type is an error) and whose result it types ``str | None``:
``None`` until that value has arrived. A model (or a list, tuple or dict holding models) is
returned only once every field it requires has arrived, so a value ``get`` returns is
never missing a field its type promises (a string may still be growing: it is a prefix of the
final string, and still a ``str``). :attr:`Partial.value` is the whole value under the same
rule.

:func:`field_path` gives the same selectors to field events: ``path = field_path(Person,
lambda p: p.address.city)`` has the JSON Pointer (``path.pointer``, for ``on_field``) and
``path.value(event)``, typed ``str``.

The selector is not called on a value: it runs once on a recorder that notes the attributes
and items it reads (``p.tags[0]``, ``p.meta["k"]``); anything else in it is refused with a
``TypeError``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Generic, TypeVar, get_args, get_origin

import pydantic

from sdk._errors import pointer
from sdk._events import FieldEvent

__all__ = ["FieldPath", "Partial", "field_path"]

T = TypeVar("T")
R = TypeVar("R")

Step = tuple[str, Any]  # ("attr", name) or ("item", key)


class _Recorder:
    """What a selector reads, step by step."""

    __slots__ = ("_fs_steps",)
    _fs_steps: tuple[Step, ...]

    def __init__(self, steps: tuple[Step, ...]) -> None:
        object.__setattr__(self, "_fs_steps", steps)

    def __getattr__(self, name: str) -> _Recorder:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Recorder((*self._fs_steps, ("attr", name)))

    def __getitem__(self, key: Any) -> _Recorder:
        return _Recorder((*self._fs_steps, ("item", key)))


def _steps(selector: Callable[[Any], Any]) -> tuple[Step, ...]:
    rule = (
        "a selector may only read attributes and items of its argument, e.g. "
        "`lambda p: p.address.city` or `lambda p: p.tags[0]`"
    )
    try:
        picked = selector(_Recorder(()))
    except TypeError as exc:  # it did something else with what it read (len(), +, a call)
        raise TypeError(f"{rule}; this one failed: {exc}") from exc
    if not isinstance(picked, _Recorder):
        raise TypeError(f"{rule}; this one returned {picked!r}")
    steps: tuple[Step, ...] = object.__getattribute__(picked, "_fs_steps")
    return steps


def _unwrap(tp: Any) -> Any:
    """``tp`` without ``Annotated`` and without ``None`` in an optional union of one type."""
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (typing.Union, types.UnionType):
        arms = [a for a in get_args(tp) if a is not type(None)]
        if len(arms) == 1:
            return _unwrap(arms[0])
    return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)


def _complete(value: Any) -> bool:
    """Whether every model in ``value`` (a partial view) has every field it requires."""
    if isinstance(value, pydantic.BaseModel):
        fields = type(value).model_fields
        present = value.model_fields_set
        if any(info.is_required() and name not in present for name, info in fields.items()):
            return False
        return all(_complete(getattr(value, name)) for name in present)
    if isinstance(value, (list, tuple)):
        return all(_complete(v) for v in value)
    if isinstance(value, dict):
        return all(_complete(v) for v in value.values())
    return True


def _follow(value: Any, steps: tuple[Step, ...]) -> Any:
    """The view's value at ``steps``; ``None`` where it has not arrived."""
    for kind, key in steps:
        if value is None:
            return None
        if isinstance(value, pydantic.BaseModel):
            if kind != "attr" or key not in type(value).model_fields:
                raise AttributeError(f"{type(value).__name__} has no field {key!r}")
            value = getattr(value, key) if key in value.model_fields_set else None
        elif isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, (list, tuple)) and kind == "item" and isinstance(key, int):
            value = value[key] if -len(value) <= key < len(value) else None
        else:
            raise TypeError(f"cannot read {key!r} of {type(value).__name__} {value!r}")
    return value


class Partial(Generic[T]):
    """A value of type ``T`` still arriving, read through typed selectors (see the module
    docstring): ``get(selector)`` is ``R | None`` for a selector ``T -> R``; ``value`` is the
    whole ``T`` once complete. ``view`` is the untyped partial view (``Any``: models built
    without validation, fields not arrived ``None``), ``snapshot`` the plain JSON."""

    __slots__ = ("_snapshot", "_view")

    def __init__(self, view: Any, snapshot: Any) -> None:
        self._view = view
        self._snapshot = snapshot

    def get(self, selector: Callable[[T], R]) -> R | None:
        """The value ``selector`` picks, once it has arrived (a model, only once every field
        it requires has); ``None`` before. Typed by the selector: ``get(lambda p:
        p.address.city)`` is ``str | None`` for a ``city: str``."""
        found = _follow(self._view, _steps(selector))
        return found if _complete(found) else None

    def has(self, selector: Callable[[T], Any]) -> bool:
        """Whether the value ``selector`` picks has arrived (a field present, even an open
        string or a model still missing fields)."""
        return _follow(self._view, _steps(selector)) is not None

    @property
    def value(self) -> T | None:
        """The whole value, once every field it requires has arrived (not validated: use
        ``result()`` for that); ``None`` before."""
        view = self._view
        return view if view is not None and _complete(view) else None

    @property
    def view(self) -> Any:
        """The partial view as built (``Any``: read its fields knowing they may be ``None``)."""
        return self._view

    @property
    def snapshot(self) -> Any:
        """The partial value as plain JSON."""
        return self._snapshot

    def __repr__(self) -> str:
        return f"Partial({self._view!r})"


class FieldPath(Generic[R]):
    """A typed place in a schema's documents: ``pointer`` (for ``on_field``) and
    :meth:`value`, the value of a field event at that place, typed ``R``."""

    __slots__ = ("pointer",)

    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        """The JSON Pointer of the place (``"/address/city"``)."""

    def value(self, event: FieldEvent) -> R:
        """``event.value``, typed, for an event at this place (``ValueError`` naming both
        pointers for an event elsewhere)."""
        if event.pointer != self.pointer:
            raise ValueError(
                f"the event is at {event.pointer!r}, not at this path's {self.pointer!r}"
            )
        value: R = event.value
        return value

    def __repr__(self) -> str:
        return f"FieldPath({self.pointer!r})"


def field_path(schema: type[T], selector: Callable[[T], R]) -> FieldPath[R]:
    """The place ``selector`` picks in documents of ``schema`` (a pydantic model or a type
    of them), e.g. ``field_path(Person, lambda p: p.address.city)``: ``FieldPath[str]`` with
    ``pointer == "/address/city"`` (a field's alias is its key, as the schema sent says)."""
    tokens: list[str | int] = []
    tp: Any = schema
    for kind, key in _steps(selector):
        tp = _unwrap(tp)
        if kind == "attr":
            if not _is_model(tp) or key not in tp.model_fields:
                raise AttributeError(f"{getattr(tp, '__name__', tp)} has no field {key!r}")
            info = tp.model_fields[key]
            tokens.append(info.alias or key)
            tp = info.annotation
        else:
            tokens.append(key)
            args = get_args(tp)
            fixed = get_origin(tp) is tuple and Ellipsis not in args and isinstance(key, int)
            tp = args[key] if fixed and key < len(args) else (args[-1] if args else Any)
    return FieldPath(pointer(tuple(tokens)))
