"""Where one JSON value ends in a stream of text that goes on after it (sans-I/O).

A tagged segment of a structural-tag output is ``begin``, a JSON value, ``end``: the tracker must
be fed the value and nothing after it, so the segment's reader asks :class:`JsonExtent` where
the value stops, chunk by chunk. It follows only what delimits a value: brackets outside
strings, string quotes and escapes, and for a bare number or literal the first character that
cannot continue it. It does not validate: whatever it lets through, the tracker then parses
(and rejects at the first wrong character). O(len(chunk)) per chunk, strings skipped by regex.
"""

from __future__ import annotations

import re

__all__ = ["JsonExtent"]

_BEFORE, _CONTAINER, _STRING, _ESCAPE, _SCALAR, _END = range(6)
_NOT_WS = re.compile(r"[^ \t\r\n]")
_STRUCTURE = re.compile(r'["{}\[\]]')
_STRING_STOP = re.compile(r'["\\]')
# What can continue a number or a literal (true/false/null) at the root: anything else ends it.
_SCALAR_STOP = re.compile(r"[^-+.0-9A-Za-z]")


class JsonExtent:
    """Finds the end of one JSON value (leading whitespace skipped) across chunks."""

    __slots__ = ("_depth", "_state")

    def __init__(self) -> None:
        self._state = _BEFORE
        self._depth = 0

    @property
    def ended(self) -> bool:
        """True once :meth:`scan` found the end."""
        return self._state == _END

    @property
    def scalar(self) -> bool:
        """True while the value is a bare number or literal (it ends only at the next
        character, or at the end of the output)."""
        return self._state == _SCALAR

    def scan(self, text: str, start: int = 0) -> int | None:
        """Read ``text[start:]``; the index just after the value's last character if it ends
        in this chunk (for a number or literal: the index of the character that ended it),
        else ``None`` (the whole rest of the chunk belongs to the value)."""
        i = start
        n = len(text)
        state = self._state
        while i < n:
            if state == _CONTAINER:
                m = _STRUCTURE.search(text, i)
                if m is None:
                    break
                i = m.end()
                c = m.group()
                if c == '"':
                    state = _STRING
                elif c in "{[":
                    self._depth += 1
                else:
                    self._depth -= 1
                    if self._depth == 0:
                        self._state = _END
                        return i
            elif state == _STRING:
                m = _STRING_STOP.search(text, i)
                if m is None:
                    break
                i = m.end()
                if m.group() == "\\":
                    state = _ESCAPE
                elif self._depth == 0:  # a string at the root
                    self._state = _END
                    return i
                else:
                    state = _CONTAINER
            elif state == _ESCAPE:
                i += 1  # the escaped character (a \u escape's digits are plain characters)
                state = _STRING
            elif state == _BEFORE:
                m = _NOT_WS.search(text, i)
                if m is None:
                    break
                i = m.start()
                c = text[i]
                if c in "{[":
                    self._depth = 1
                    state = _CONTAINER
                    i += 1
                elif c == '"':
                    state = _STRING
                    i += 1
                else:
                    state = _SCALAR
            elif state == _SCALAR:
                m = _SCALAR_STOP.search(text, i)
                if m is None:
                    break
                self._state = _END
                return m.start()
            else:  # _END
                return start
        self._state = state
        return None
