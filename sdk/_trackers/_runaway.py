"""Runaway output, caught while it streams: a tracker's limits and its repetition watch.

A constrained generation can be doomed without ever breaking its schema: a grammar that allows
any whitespace between tokens lets a model write newlines until its token limit, and a small
model can loop inside an unbounded string or array. :class:`RunawayLimits` (the ``runaway``
option of every entry point) bounds both:

- **whitespace**: a gap between two JSON tokens (not inside a string) may hold ``whitespace``
  characters at the root and ``whitespace_per_level`` more per open container; the parser
  counts it (``partial.Parser(max_gap=..., gap_per_level=...)``), so it costs nothing outside
  whitespace. Past it: :class:`~sdk.RunawayWhitespace`.
- **repetition**: :class:`RepeatWatch` looks at an open string's tail each time the string grew
  by :data:`CHECK_EVERY` characters, and at an array's tail each time an item ends; a tail
  made of ``repeats`` or more copies of one unit (of up to ``max_unit`` characters, or
  ``max_unit_items`` items that are strings, objects or arrays) covering ``repeat_span``
  characters or more is a :class:`~sdk.RepeatedOutput`. Arrays of numbers, booleans or nulls
  are never judged (a run of zeros is data).

Why these defaults, and the false-alarm rate on a corpus of real documents: ``docs/errors.md``
and ``docs/reliability.md`` (``tests/benchmarks/bench_runaway.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sdk._errors import Path, RepeatedOutput

__all__ = ["CHECK_EVERY", "DEFAULT_RUNAWAY", "RepeatWatch", "RunawayLimits", "periodic_tail"]

CHECK_EVERY = 32
"""How many characters an open string grows between two looks at its tail (a loop is caught
at most this many characters late; the looks cost O(window) each, so O(1) per character)."""

_KEY = 8
"""How many of a tail's last characters find its candidate periods (where they recur)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class RunawayLimits:
    """When output that follows the schema is nevertheless a runaway (the ``runaway`` option;
    ``runaway=None`` turns both checks off). ``None`` in a field turns that check off.

    The defaults are conservative: no real pretty-printed document and no document of the
    false-alarm corpus (``docs/reliability.md``) reaches them.
    """

    whitespace: int | None = 32
    """Most whitespace characters in one gap between two JSON tokens at the root. 32 holds a
    blank line and an 8-space indent written with CRLF line ends (``\\r\\n\\r\\n`` + 8); the
    local engine's own bound is 22 (``sdk/_local/_layout.py``, ``BOUNDED_SPACE``: two newlines
    and 20 spaces)."""
    whitespace_per_level: int = 8
    """What each open container adds to ``whitespace``: an 8-space (or 8-tab) indent per
    level, twice the widest common indent (4), so ``json.dumps(indent=8)`` fits at any
    depth."""
    repeats: int | None = 8
    """Fewest copies of one unit, in a row at a string's or an array's tail, that make a
    repetition (both ``repeats`` and ``repeat_span`` must be reached)."""
    repeat_span: int = 256
    """Fewest characters the repeated copies must cover: a short run (``"----"``, ``"ha ha
    ha"``, ``["", "", ""]``) is never judged."""
    max_unit: int = 256
    """Longest unit of a string's repetition, in characters."""
    max_unit_items: int = 4
    """Longest unit of an array's repetition, in items."""

    def __post_init__(self) -> None:
        for name in ("whitespace", "repeats"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 0):
                raise ValueError(f"RunawayLimits.{name} must be an int >= 0 or None, not {value!r}")
        for name, least in (
            ("whitespace_per_level", 0),
            ("repeat_span", 2 * _KEY),
            ("max_unit", 1),
            ("max_unit_items", 1),
        ):
            value = getattr(self, name)
            if not _is_int(value) or value < least:
                raise ValueError(f"RunawayLimits.{name} must be an int >= {least}, not {value!r}")
        if self.repeats is not None and self.repeats < 2:
            raise ValueError(f"RunawayLimits.repeats must be >= 2 or None, not {self.repeats!r}")


DEFAULT_RUNAWAY = RunawayLimits()
"""The limits every stream applies unless told otherwise (``runaway=``)."""


def periodic_tail(text: str, repeats: int, span: int, max_unit: int) -> tuple[int, int] | None:
    """``(period, length)`` when the last ``length`` characters of ``text`` are copies of one
    unit of ``period`` characters (at most ``max_unit``), at least ``repeats`` of them and at
    least ``span`` characters; ``length`` is as long as ``text`` allows. ``None`` otherwise.

    A tail with period ``p`` has its last :data:`_KEY` characters again ``p`` back, so the
    candidates are where they recur (``str.rfind``, in C): few in prose, the period itself in a
    loop."""
    n = len(text)
    if n < span:
        return None
    key = text[n - _KEY :]
    low = max(0, n - _KEY - max_unit)
    end = n - 1
    while True:
        j = text.rfind(key, low, end)
        if j < 0:
            return None
        p = n - _KEY - j
        need = max(span, repeats * p)
        if need <= n and text[n - need : n - p] == text[n - need + p :]:
            length = need
            while length + p <= n and text[n - length - p : n - length] == text[n - p :]:
                length += p
            while length < n and text[n - length - 1] == text[n - length - 1 + p]:
                length += 1
            return p, length
        end = j + _KEY - 1  # the next occurrence ends before this one's end


_SCALARS = (int, float, bool, type(None))


class _Items:
    """An open array's recent items and where each ended (the first end: the ``[``)."""

    __slots__ = ("ends", "values")

    def __init__(self, start: int) -> None:
        self.values: list[Any] = []
        self.ends: list[int] = [start]


class RepeatWatch:
    """One document's repetition check (sans-I/O): :meth:`grow` with each piece of an open
    string, :meth:`item` with each array item that ended, :meth:`array` when an array opens;
    each raises :class:`~sdk.RepeatedOutput` when the tail it saw repeats (see
    :class:`RunawayLimits`)."""

    __slots__ = (
        "_arrays",
        "_grown",
        "_keep",
        "_max_items",
        "_max_unit",
        "_path",
        "_pieces",
        "_repeats",
        "_span",
        "_tail",
    )

    def __init__(self, limits: RunawayLimits) -> None:
        assert limits.repeats is not None
        self._repeats = limits.repeats
        self._span = limits.repeat_span
        self._max_unit = limits.max_unit
        self._max_items = limits.max_unit_items
        # A string's tail long enough to hold the longest repetition there is to find, twice.
        self._keep = 2 * max(self._span, self._repeats * self._max_unit)
        self._path: Path | None = None  # the open string whose tail is kept
        self._tail = ""
        self._pieces: list[str] = []
        self._grown = 0
        self._arrays: dict[Path, _Items] = {}

    def grow(self, path: Path, offset: int, text: str) -> None:
        """The string at ``path`` grew by ``text``, which ends at ``offset``."""
        if path is not self._path and path != self._path:
            self._path, self._tail, self._pieces, self._grown = path, "", [], 0
        self._pieces.append(text)
        self._grown += len(text)
        if self._grown < CHECK_EVERY:
            return
        tail = self._tail + "".join(self._pieces)
        if len(tail) > self._keep:
            tail = tail[-self._keep :]
        self._tail, self._pieces, self._grown = tail, [], 0
        found = periodic_tail(tail, self._repeats, self._span, self._max_unit)
        if found is not None:
            period, length = found
            unit = tail[len(tail) - length : len(tail) - length + period]
            count = length // period
            raise RepeatedOutput(
                f"the string repeats {unit!r} {count} times in a row ({length} characters)",
                path=path,
                offset=offset,
                unit=unit,
                count=count,
                span=length,
            )

    def array(self, path: Path, offset: int) -> None:
        """An array opened at ``path`` (its ``[`` at ``offset``)."""
        self._arrays[path] = _Items(offset)

    def item(self, path: Path, offset: int, value: Any) -> None:
        """The item at ``path`` (its last step an index) ended at ``offset``; the array's own
        end (``path`` not an item) forgets it."""
        items = self._arrays.get(path[:-1])
        if items is None:
            return
        values, ends = items.values, items.ends
        values.append(value)
        ends.append(offset)
        repeats = self._repeats
        n = len(values)
        for p in range(1, self._max_items + 1):
            need = repeats * p
            if need > n:
                break
            if values[n - need : n - p] != values[n - need + p :]:
                continue
            # The smallest period that repeats: judged here, whatever its span.
            unit = values[n - p :]
            if any(isinstance(v, _SCALARS) for v in unit):
                break
            count = repeats
            while (count + 1) * p <= n and values[n - (count + 1) * p : n - count * p] == unit:
                count += 1
            span = offset - ends[n - count * p]
            if span < self._span:
                break
            raise RepeatedOutput(
                f"the array repeats {p} item(s) {count} times in a row ({span} characters)",
                path=path[:-1],
                offset=offset,
                unit=unit,
                count=count,
                span=span,
            )
        if n > 4 * repeats * self._max_items:  # keep what the longest check reads, and more
            cut = n - repeats * self._max_items
            del values[:cut]
            del ends[:cut]

    def closed(self, path: Path) -> None:
        """The array at ``path`` ended."""
        self._arrays.pop(path, None)
