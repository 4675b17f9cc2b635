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
- **near repetition**: the same looks, on text read with every run of digits as one
  :data:`NUMBER_MARK` (``"Step 5: Add bacon."`` and ``"Step 6: Add bacon."`` are one unit) and
  copies that may differ in one stretch of up to ``near_chars`` characters, judge a string's
  tail and an array of strings: ``near_repeats`` copies covering ``near_span`` characters, each
  close to the newest one (:func:`near`), of a unit that is text (:func:`_is_text`: a list of
  dates, of numbers or of coordinates is data), is a :class:`~sdk.RepeatedOutput` too. Objects
  and arrays are judged equal or not at all: records that differ in a number are data.

Why these defaults, and the false-alarm rate on a corpus of real documents: ``docs/errors.md``
and ``docs/reliability.md`` (``tests/benchmarks/bench_runaway.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from sdk._errors import Path, RepeatedOutput

__all__ = [
    "CHECK_EVERY",
    "DEFAULT_RUNAWAY",
    "NUMBER_MARK",
    "RepeatWatch",
    "RunawayLimits",
    "near",
    "near_loop",
    "periodic_tail",
    "without_numbers",
]

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
    near_repeats: int | None = 12
    """Fewest near copies (up to numbers and ``near_chars`` characters) of one unit, in a row
    at a string's tail or at the tail of an array of strings, that make a repetition (both
    ``near_repeats`` and ``near_span`` must be reached); ``None`` turns the near check off.
    Stricter than ``repeats``: near copies are common in real lists (numbered headings, links
    to pages 1 to 30)."""
    near_span: int = 512
    """Fewest characters the near copies must cover."""
    near_chars: int = 8
    """Most characters in which a near copy may differ from the newest, in one stretch (after
    every number is read as one character); a unit shorter than ``4 * near_chars`` must match
    up to its numbers alone. 0: numbers are the only difference allowed."""

    def __post_init__(self) -> None:
        for name in ("whitespace", "repeats", "near_repeats"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 0):
                raise ValueError(f"RunawayLimits.{name} must be an int >= 0 or None, not {value!r}")
        for name, least in (
            ("whitespace_per_level", 0),
            ("repeat_span", 2 * _KEY),
            ("max_unit", 1),
            ("max_unit_items", 1),
            ("near_span", 2 * _KEY),
            ("near_chars", 0),
        ):
            value = getattr(self, name)
            if not _is_int(value) or value < least:
                raise ValueError(f"RunawayLimits.{name} must be an int >= {least}, not {value!r}")
        for name in ("repeats", "near_repeats"):
            value = getattr(self, name)
            if value is not None and value < 2:
                raise ValueError(f"RunawayLimits.{name} must be >= 2 or None, not {value!r}")


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


NUMBER_MARK = "#"
"""What a run of digits reads as in the near check (``"Step 12"`` reads ``"Step #"``)."""

_DIGITS = re.compile(r"[0-9]+")
_DIGIT_CHARS = frozenset("0123456789")
_LETTER = re.compile(r"[^\W\d_]")


def without_numbers(text: str) -> str:
    """``text`` with each run of digits written :data:`NUMBER_MARK`."""
    return _DIGITS.sub(NUMBER_MARK, text)


def _prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (bisection: slices compare in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def near(a: str, b: str, chars: int) -> bool:
    """``a`` and ``b`` are equal, or (both at least ``4 * chars`` long) differ in one stretch
    of at most ``chars`` characters in each."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if chars == 0 or min(la, lb) < 4 * chars or abs(la - lb) > chars:
        return False
    pre = _prefix(a, b)
    shared = pre + _prefix(a[pre:][::-1], b[pre:][::-1])  # the head and the tail they share
    return la - shared <= chars and lb - shared <= chars


def _is_text(unit: str, pieces: int = 1) -> bool:
    """A unit (of ``pieces`` items or pieces) worth judging as a near copy: words, as a loop
    writes them. Each piece has on average at least 8 letters and 2 spaces, and letters and
    spaces make at least half of it; numbers, dates, coordinates, ids and links are data."""
    letters = len(_LETTER.findall(unit))
    spaces = unit.count(" ")
    return letters >= 8 * pieces and spaces >= 2 * pieces and 2 * (letters + spaces) >= len(unit)


def _near_run(units: list[str], repeats: int, max_items: int, chars: int) -> tuple[int, int]:
    """``(p, count)``: the tail of ``units`` (newest first) is ``count >= repeats`` groups of
    ``p`` units, each unit near (:func:`near`) the newest group's, of a unit that is text;
    ``(0, 0)`` when there is none."""
    n = len(units)
    for p in range(1, max_items + 1):
        if repeats * p > n:
            break
        newest = units[:p]
        if not _is_text("".join(newest), p):
            continue
        count = 1
        while (count + 1) * p <= n and count < 4 * repeats:  # enough to reach the span
            g = count * p
            if all(near(units[g + r], newest[r], chars) for r in range(p)):
                count += 1
            else:
                break
        if count >= repeats:
            return p, count
    return 0, 0


def near_loop(
    text: str, repeats: int, span: int, max_unit: int, max_items: int, chars: int
) -> tuple[int, int, int] | None:
    """``(unit_length, count, length)`` when the tail of ``text`` (already
    :func:`without_numbers`) is ``count >= repeats`` near copies of one unit covering
    ``length >= span`` characters; ``None`` otherwise.

    The copies are cut where the tail's last :data:`_KEY` characters recur (each one ends with
    them), at most ``max_unit`` apart; a unit is up to ``max_items`` such pieces (the key may
    recur inside a copy too). Each piece is compared with the newest copy's (:func:`near`),
    so a slow drift is not a loop. Costs one ``str.rfind`` over ``max_unit`` characters when
    the key does not recur."""
    n = len(text)
    if n < span:
        return None
    key = text[n - _KEY :]
    bounds = [n]
    pos = n - _KEY
    most = 4 * repeats * max_items
    while len(bounds) <= most:
        j = text.rfind(key, max(0, pos - max_unit), pos + _KEY - 1)
        if j < 0:
            break
        bounds.append(j + _KEY)
        pos = j
    if len(bounds) <= repeats:
        return None
    units = [text[bounds[k + 1] : bounds[k]] for k in range(len(bounds) - 1)]
    p, count = _near_run(units, repeats, max_items, chars)
    if not count:
        return None
    length = n - bounds[count * p]
    if length < span:
        return None
    return n - bounds[p], count, length


def _raw_length(raw: str, length: int) -> int:
    """How many of ``raw``'s last characters read as its :func:`without_numbers` form's last
    ``length`` characters (a number counts as one character there)."""
    i = len(raw)  # raw[i:] is accounted for
    need = length
    for m in reversed(list(_DIGITS.finditer(raw))):
        plain = i - m.end()
        if need <= plain:
            return len(raw) - i + need
        need -= plain
        if need <= 1:
            return len(raw) - m.start()
        need -= 1
        i = m.start()
    return min(len(raw), len(raw) - i + need)


_SCALARS = (int, float, bool, type(None))


class _Items:
    """An open array's recent items and where each ended (the first end: the ``[``)."""

    __slots__ = ("ends", "keys", "values")

    def __init__(self, start: int) -> None:
        self.values: list[Any] = []
        self.ends: list[int] = [start]
        self.keys: list[str | None] = []  # a string item without its numbers; None otherwise


class RepeatWatch:
    """One document's repetition check (sans-I/O): :meth:`grow` with each piece of an open
    string, :meth:`item` with each array item that ended, :meth:`array` when an array opens;
    each raises :class:`~sdk.RepeatedOutput` when the tail it saw repeats, exactly or (a string,
    an array of strings) up to numbers and a few characters (see :class:`RunawayLimits`)."""

    __slots__ = (
        "_arrays",
        "_digit",
        "_grown",
        "_keep",
        "_max_items",
        "_max_unit",
        "_most",
        "_near",
        "_near_chars",
        "_near_keep",
        "_near_span",
        "_norm",
        "_path",
        "_pieces",
        "_repeats",
        "_span",
        "_tail",
    )

    def __init__(self, limits: RunawayLimits) -> None:
        assert limits.repeats is not None or limits.near_repeats is not None
        self._repeats = limits.repeats or 0  # 0: the exact check is off
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
        # The near check: its limits, and the open string's tail without its numbers.
        self._near = limits.near_repeats or 0
        self._near_span = limits.near_span
        self._near_chars = limits.near_chars
        self._near_keep = max(self._near_span, self._near * self._max_unit) + _KEY
        if self._near:
            self._keep = max(self._keep, 2 * self._near_keep)  # the raw tail under the kept one
        self._norm = ""
        self._digit = False  # the open string's last character is a digit
        self._most = max(self._repeats, self._near) * self._max_items  # items an array keeps

    def grow(self, path: Path, offset: int, text: str) -> None:
        """The string at ``path`` grew by ``text``, which ends at ``offset``."""
        if path is not self._path and path != self._path:
            self._path, self._tail, self._pieces, self._grown = path, "", [], 0
            self._norm, self._digit = "", False
        self._pieces.append(text)
        self._grown += len(text)
        if self._grown < CHECK_EVERY:
            return
        grown = "".join(self._pieces)
        tail = self._tail + grown
        if len(tail) > self._keep:
            tail = tail[-self._keep :]
        self._tail, self._pieces, self._grown = tail, [], 0
        if self._near:
            self._near_string(path, offset, grown)
        found = (
            periodic_tail(tail, self._repeats, self._span, self._max_unit)
            if self._repeats
            else None
        )
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

    def _near_string(self, path: Path, offset: int, grown: str) -> None:
        """The near check of the open string, which grew by ``grown``."""
        norm = without_numbers(grown)
        if self._digit and grown[0] in _DIGIT_CHARS:
            norm = norm[1:]  # the number the last piece ended in goes on
        self._digit = grown[-1] in _DIGIT_CHARS
        norm = self._norm + norm
        if len(norm) > self._near_keep:
            norm = norm[-self._near_keep :]
        self._norm = norm
        found = near_loop(
            norm, self._near, self._near_span, self._max_unit, self._max_items, self._near_chars
        )
        if found is None:
            return
        period, count, length = found
        tail = self._tail
        unit = tail[len(tail) - _raw_length(tail, period) :]
        span = _raw_length(tail, length)
        raise RepeatedOutput(
            f"the string repeats {unit!r} {count} times in a row, up to numbers and "
            f"{self._near_chars} characters ({span} characters)",
            path=path,
            offset=offset,
            unit=unit,
            count=count,
            span=span,
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
        values, ends, keys = items.values, items.ends, items.keys
        values.append(value)
        ends.append(offset)
        near = self._near and type(value) is str
        keys.append(without_numbers(value) if near else None)
        repeats = self._repeats
        n = len(values)
        for p in range(1, self._max_items + 1 if repeats else 1):
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
        if near and n >= self._near:
            self._near_items(path[:-1], offset, items)
        most = self._most
        if n > 4 * most:  # keep what the longest check reads, and more
            cut = n - most
            del values[:cut]
            del ends[:cut]
            del keys[:cut]

    def _near_items(self, path: Path, offset: int, items: _Items) -> None:
        """The near check of the array at ``path``, whose last item is a string."""
        keys = items.keys
        n = len(keys)
        newest = keys[::-1]
        if None in newest:  # only the strings since the last item of another kind
            del newest[newest.index(None) :]
        strings = cast("list[str]", newest)
        p, count = _near_run(strings, self._near, self._max_items, self._near_chars)
        if not count:
            return
        span = offset - items.ends[n - count * p]
        if span < self._near_span:
            return
        unit = items.values[n - p :]
        raise RepeatedOutput(
            f"the array repeats {p} item(s) {count} times in a row, up to numbers and "
            f"{self._near_chars} characters ({span} characters): {unit!r}",
            path=path,
            offset=offset,
            unit=unit,
            count=count,
            span=span,
        )

    def closed(self, path: Path) -> None:
        """The array at ``path`` ended."""
        self._arrays.pop(path, None)
