"""What the field tracker hands back: small immutable events, one class per thing that happens.

Every event has a ``path`` (a tuple of ``str`` keys and ``int`` indices; ``()`` is the document
root) and the ``attempt`` it belongs to (1-based; a retried stream feeds a fresh tracker per
attempt). ``pointer`` gives the path as an RFC 6901 JSON Pointer (``"/items/0/name"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sdk._errors import Path, pointer

__all__ = ["FieldEvent", "StreamEvent", "TextDelta", "TrackerEvent"]


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """Base of the events a structured stream yields."""

    path: Path
    """Where in the document: keys and indices from the root (``()`` is the root)."""

    @property
    def pointer(self) -> str:
        """The path as a JSON Pointer: ``("items", 0, "a/b")`` -> ``"/items/0/a~1b"``."""
        return pointer(self.path)


@dataclass(frozen=True, slots=True)
class FieldEvent(StreamEvent):
    """A value is final and passed every check that can be made on it alone.

    Fires exactly once per value of the document, in document order, children before their
    container (so a container's event comes after all of its members' events). ``value`` is the
    plain JSON value (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``); containers
    are shared with the parser's result, so treat them as read-only.
    """

    value: Any
    """The value, as ``json.loads`` would give it."""
    offset: int
    """Character offset in the attempt's output at which the value became final (its last
    character; for a number, the character after it, or the end of the output)."""
    attempt: int = 1
    """The attempt (1-based) whose output this value came from."""
    forced: int = 0
    """How many characters of the value's text the grammar forced (fed with ``forced=True``);
    0 when none were, or when the backend does not say."""
    tool_call: int | None = None
    """Index of the parallel tool call whose arguments hold this value; ``None`` for the
    message content."""


@dataclass(frozen=True, slots=True)
class TextDelta(StreamEvent):
    """A string value grew (only when the tracker or stream was asked for ``deltas``).

    Concatenating a string's deltas gives its final value; escapes are already decoded. The
    string's :class:`FieldEvent` still comes when it closes.
    """

    text: str
    """The new characters (never empty)."""
    attempt: int = 1
    """The attempt (1-based) whose output this text came from."""
    tool_call: int | None = None
    """Index of the parallel tool call this text belongs to; ``None`` for the message content."""


TrackerEvent = FieldEvent | TextDelta
"""What :meth:`sdk.FieldTracker.feed` returns."""
