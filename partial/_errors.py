"""The errors of the ``partial`` package.

::

    ValueError
    └── JSONError                 base of everything the parser raises about its input
        ├── JSONSyntaxError       a character no valid JSON can continue from (offset, line,
        │                         column, expected, found)
        ├── IncompleteJSONError   close() on a document that is not finished
        └── JSONLimitError        a configured limit (depth, size) was passed
            └── JSONRunawayError  a run of whitespace between tokens (or after the root)
                                  longer than max_gap allows (where it began, its path, its
                                  length)
    RuntimeError
    └── ParserStateError          misuse: feed() after close(), a chunk of the wrong type
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "IncompleteJSONError",
    "JSONError",
    "JSONLimitError",
    "JSONRunawayError",
    "JSONSyntaxError",
    "ParserStateError",
]


class JSONError(ValueError):
    """Base of all input errors. ``offset`` is the 0-based character offset, ``line`` and
    ``column`` are 1-based."""

    def __init__(self, message: str, *, offset: int, line: int, column: int) -> None:
        super().__init__(f"{message} at line {line} column {column} (char {offset})")
        self.message = message
        self.events: list[Any] = []
        """Events of the failing ``feed`` that came before the bad character."""
        self.offset = offset
        self.line = line
        self.column = column


class JSONSyntaxError(JSONError):
    """The first character from which no valid JSON can continue. ``expected`` says what could
    have come there; ``found`` is the character that came (``""`` at end of input)."""

    def __init__(
        self, message: str, *, offset: int, line: int, column: int, expected: str, found: str
    ) -> None:
        super().__init__(message, offset=offset, line=line, column=column)
        self.expected = expected
        self.found = found


class IncompleteJSONError(JSONError):
    """Raised by ``close()`` when the input ended inside the document. ``expected`` says what
    was still needed."""

    def __init__(self, message: str, *, offset: int, line: int, column: int, expected: str) -> None:
        super().__init__(message, offset=offset, line=line, column=column)
        self.expected = expected


class JSONLimitError(JSONError):
    """A limit was passed: ``limit`` names it (``"max_depth"``, ``"max_bytes"``), ``value`` is
    the configured bound."""

    def __init__(
        self, message: str, *, offset: int, line: int, column: int, limit: str, value: int
    ) -> None:
        super().__init__(message, offset=offset, line=line, column=column)
        self.limit = limit
        self.value = value


class JSONRunawayError(JSONLimitError):
    """A run of whitespace between two tokens passed ``max_gap`` (``limit`` is
    ``"max_gap"``, ``value`` the bound at that depth): valid JSON, but longer than any layout
    needs, the mark of a generation that writes whitespace until its token limit. ``offset``
    is the character that passed the bound, ``start`` where the run began, ``length`` how many
    whitespace characters it had then (``value + 1``), ``path`` the container (or the key)
    whose gap it is, ``depth`` how many containers were open; ``after_root`` is true when the
    run followed the finished root value (``path`` is then ``()`` and ``depth`` 0)."""

    def __init__(
        self,
        message: str,
        *,
        offset: int,
        line: int,
        column: int,
        value: int,
        start: int,
        path: tuple[str | int, ...],
        depth: int,
        after_root: bool = False,
    ) -> None:
        super().__init__(
            message, offset=offset, line=line, column=column, limit="max_gap", value=value
        )
        self.start = start
        self.length = value + 1
        self.path = path
        self.depth = depth
        self.after_root = after_root


class ParserStateError(RuntimeError):
    """The parser was used wrongly (fed after ``close()``, given a chunk that is neither str
    nor bytes, or given bytes after str)."""
