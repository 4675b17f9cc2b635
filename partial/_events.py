"""Parser events: small immutable values, one class per thing that can happen.

Every event has a ``path`` (a tuple of ``str`` keys and ``int`` indices; ``()`` is the root) and
an ``offset``: the character offset in the input at which the event became known (for bytes
input, the offset in the decoded text).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "Comma",
    "Event",
    "Key",
    "KeyDelta",
    "KeyStart",
    "Kind",
    "Path",
    "StringDelta",
    "ValueDone",
    "ValueStart",
]

Path = tuple[str | int, ...]


class Kind(StrEnum):
    """The kind of a value, known from its first character. The names are JSON Schema's type
    names, so ``kind.value`` can be compared with a schema's ``type`` directly."""

    OBJECT = "object"
    ARRAY = "array"
    STRING = "string"
    NUMBER = "number"
    BOOLEAN = "boolean"
    NULL = "null"


@dataclass(frozen=True, slots=True)
class Event:
    """Base of all parser events."""

    path: Path
    """Where in the document: keys and indices from the root."""
    offset: int
    """Character offset at which the event became known."""


@dataclass(frozen=True, slots=True)
class ValueStart(Event):
    """A value's first character arrived: ``{``, ``[``, ``"``, a digit or ``-``, or the first
    letter of ``true``/``false``/``null``."""

    kind: Kind
    """What the value is: object, array, string, number, boolean or null."""


@dataclass(frozen=True, slots=True)
class Key(Event):
    """An object key is complete (its closing quote arrived). ``path`` ends with the key."""


@dataclass(frozen=True, slots=True)
class StringDelta(Event):
    """A string value grew. Concatenating a string's deltas gives its final value. Keys do not
    stream; escapes are decoded; a surrogate pair is never split between deltas."""

    text: str
    """The new characters (never empty)."""


@dataclass(frozen=True, slots=True)
class ValueDone(Event):
    """A value is final: no later byte can change it. Exactly once per value, in document order,
    children before their container. Containers carry the built ``dict``/``list`` (shared with
    the parser's result: treat it as read-only)."""

    value: Any
    """The value, as ``json.loads`` would give it."""


@dataclass(frozen=True, slots=True)
class KeyStart(Event):
    """A key's opening quote arrived (only with ``Parser(detail=True)``). ``path`` is the path of
    the object the key belongs to: the key is not known yet. A member is now certain."""


@dataclass(frozen=True, slots=True)
class KeyDelta(Event):
    """A key grew (only with ``Parser(detail=True)``). ``path`` is the object's path;
    concatenating a key's deltas gives the key, and they all come before its :class:`Key`.
    Escapes are decoded; a surrogate pair is never split between deltas."""

    text: str
    """The new characters (never empty)."""


@dataclass(frozen=True, slots=True)
class Comma(Event):
    """A ``,`` between members arrived (only with ``Parser(detail=True)``): the container at
    ``path`` will have one more member. ``offset`` is the comma's."""


# Fast constructors for the parser's hot loop. A frozen dataclass's generated __init__ goes
# through object.__setattr__ once per field (about twice the cost of the object itself); these
# fill the same slots through their descriptors. The objects are indistinguishable from ones
# built by the classes' own __init__ (a test checks equality and repr).
_new = object.__new__
_set_path = Event.__dict__["path"].__set__
_set_offset = Event.__dict__["offset"].__set__
_set_kind = ValueStart.__dict__["kind"].__set__
_set_text = StringDelta.__dict__["text"].__set__
_set_value = ValueDone.__dict__["value"].__set__
_set_key_text = KeyDelta.__dict__["text"].__set__


def new_value_start(path: Path, offset: int, kind: Kind) -> ValueStart:
    ev = _new(ValueStart)
    _set_path(ev, path)
    _set_offset(ev, offset)
    _set_kind(ev, kind)
    return ev


def new_key(path: Path, offset: int) -> Key:
    ev = _new(Key)
    _set_path(ev, path)
    _set_offset(ev, offset)
    return ev


def new_string_delta(path: Path, offset: int, text: str) -> StringDelta:
    ev = _new(StringDelta)
    _set_path(ev, path)
    _set_offset(ev, offset)
    _set_text(ev, text)
    return ev


def new_value_done(path: Path, offset: int, value: Any) -> ValueDone:
    ev = _new(ValueDone)
    _set_path(ev, path)
    _set_offset(ev, offset)
    _set_value(ev, value)
    return ev


def new_key_delta(path: Path, offset: int, text: str) -> KeyDelta:
    ev = _new(KeyDelta)
    _set_path(ev, path)
    _set_offset(ev, offset)
    _set_key_text(ev, text)
    return ev


def new_key_start(path: Path, offset: int) -> KeyStart:
    ev = _new(KeyStart)
    _set_path(ev, path)
    _set_offset(ev, offset)
    return ev


def new_comma(path: Path, offset: int) -> Comma:
    ev = _new(Comma)
    _set_path(ev, path)
    _set_offset(ev, offset)
    return ev
