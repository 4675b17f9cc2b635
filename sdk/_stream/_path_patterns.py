"""Path patterns for ``on_field``: JSON Pointers with wildcards, compiled once into a trie.

A pattern is an RFC 6901 JSON Pointer (``""`` is the root, ``"/items/0/name"`` a field) in which
a whole segment may be a wildcard:

- ``*`` matches exactly one key or index: ``"/items/*/name"``;
- ``**`` matches any number of segments, zero included: ``"/**"`` matches every path (the
  root too), ``"/**/name"`` matches ``/name`` and ``/a/b/name``, ``"/items/**"`` matches
  ``/items`` and everything inside it.

Segments are unescaped as RFC 6901 says (``~1`` is ``/``, ``~0`` is ``~``), so a key holding a
slash is written ``"/a~1b"``. An index segment matches both the list index and an object key
spelled the same (``"/0"`` matches ``(0,)`` and ``("0",)``), as in JSON Pointer. A ``*`` inside
a longer segment (``"/a*"``) is a literal character, not a glob. A key that is exactly ``*`` or
``**`` can only be matched by the wildcard.

Matching walks the trie once per path segment with the set of live nodes (a small NFA), so its
cost depends on the path's depth and the patterns that share its prefix, not on how many
patterns there are in all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from partial import Path

__all__ = ["Pattern", "PatternSet", "compile_pattern"]

T = TypeVar("T")


_ONE = "*"
_ANY = "**"


@dataclass(frozen=True, slots=True)
class Pattern:
    """A compiled pattern: ``text`` as written, ``segments`` unescaped (``"*"``/``"**"`` are the
    wildcards)."""

    text: str
    """The pattern as the caller wrote it."""
    segments: tuple[str, ...]
    """The unescaped segments, root first."""

    def matches(self, path: Path) -> bool:
        """Whether ``path`` (a tuple of keys and indices) matches this pattern."""
        return bool(PatternSet([(self, True)]).match(path))


def _unescape(segment: str, text: str) -> str:
    if "~" not in segment:
        return segment
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "~":
            nxt = segment[i + 1 : i + 2]
            if nxt not in ("0", "1"):
                raise ValueError(
                    f"invalid path pattern {text!r}: '~' must be followed by 0 or 1 "
                    "(write '~0' for '~' and '~1' for '/')"
                )
            out.append("~" if nxt == "0" else "/")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def compile_pattern(text: str) -> Pattern:
    """Parse a pattern. Raises ``ValueError`` for one that is not a JSON Pointer (it must be
    ``""`` or start with ``/``) or holds a bad ``~`` escape; ``TypeError`` if not a ``str``."""
    if not isinstance(text, str):
        raise TypeError(f"a path pattern must be a str, not {type(text).__name__}")
    if text == "":
        return Pattern(text, ())
    if not text.startswith("/"):
        raise ValueError(
            f"invalid path pattern {text!r}: a JSON Pointer starts with '/' (or is '' for the root)"
        )
    return Pattern(text, tuple(_unescape(s, text) for s in text[1:].split("/")))


class _Node(Generic[T]):
    """One trie node: literal children, the ``*`` child, the ``**`` child, and the values of
    the patterns that end here (with their registration order)."""

    __slots__ = ("any", "children", "loops", "one", "values")

    def __init__(self, *, loops: bool = False) -> None:
        self.loops = loops
        """True for a ``**`` node: it consumes any segment and stays live."""
        self.children: dict[str, _Node[T]] = {}
        self.one: _Node[T] | None = None
        self.any: _Node[T] | None = None
        self.values: list[tuple[int, T]] = []


class PatternSet(Generic[T]):
    """Patterns mapped to values (callbacks). ``match(path)`` returns the values of every pattern
    that matches, in the order they were added; a value added under two matching patterns comes
    back twice."""

    __slots__ = ("_count", "_match_all", "_root")

    def __init__(self, items: Iterable[tuple[Pattern | str, T]] = ()) -> None:
        self._root: _Node[T] = _Node()
        self._count = 0
        # Values registered under "/**" alone: they match everything, no walk needed.
        self._match_all: list[tuple[int, T]] = []
        for pattern, value in items:
            self.add(pattern, value)

    def __len__(self) -> int:
        return self._count

    def add(self, pattern: Pattern | str, value: T) -> None:
        """Register ``value`` under ``pattern`` (compiled here if given as text)."""
        compiled = pattern if isinstance(pattern, Pattern) else compile_pattern(pattern)
        entry = (self._count, value)
        self._count += 1
        if compiled.segments == (_ANY,):
            self._match_all.append(entry)
            return
        node = self._root
        for seg in compiled.segments:
            if seg == _ONE:
                if node.one is None:
                    node.one = _Node()
                node = node.one
            elif seg == _ANY:
                if node.any is None:
                    node.any = _Node(loops=True)
                node = node.any
            else:
                child = node.children.get(seg)
                if child is None:
                    child = node.children[seg] = _Node()
                node = child
        node.values.append(entry)

    def match(self, path: Path) -> list[T]:
        """The values whose pattern matches ``path``, in registration order."""
        if self._count == len(self._match_all):  # only "/**" (or nothing) registered
            return [v for _, v in self._match_all]
        live: dict[int, _Node[T]] = {}
        _enter(self._root, live)
        for part in path:
            if not live:
                break
            key = part if isinstance(part, str) else str(part)
            nxt: dict[int, _Node[T]] = {}
            for node in live.values():
                child = node.children.get(key)
                if child is not None:
                    _enter(child, nxt)
                if node.one is not None:
                    _enter(node.one, nxt)
                if node.loops:
                    nxt[id(node)] = node
            live = nxt
        found: list[tuple[int, T]] = list(self._match_all)
        for node in live.values():
            found.extend(node.values)
        if len(found) > 1:
            found.sort(key=lambda e: e[0])
        return [v for _, v in found]


def _enter(node: _Node[T], out: dict[int, _Node[T]]) -> None:
    """Make ``node`` live and, since ``**`` may match zero segments, its ``**`` chain too."""
    out[id(node)] = node
    while node.any is not None:
        node = node.any
        out[id(node)] = node
