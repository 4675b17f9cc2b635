"""Where the offending value's first choice is: what a rewind rules out.

A rewind to the start of a value bans "the first sampled token of the value". The value's first
characters are often no choice at all: the grammar forces them (the opening quote of a string,
an object's keys under a strict schema), or they are structure the model may lay out freely
without changing the value (whitespace under the bounded layout, the quote that opens the first
item of an array). Banning those would rule out nothing that matters (the model writes the same
value after other whitespace) or the wrong thing (an empty array instead of the first item).

So the choice is looked for in the value's *content*: a string's characters (its closing quote
included: ending the string is a choice), a number's characters (and the character that ends
it), a literal's letters, in document order, from the offset on. The first content byte the
grammar does not force is the choice; a value whose content is all forced has none. An empty
container has no content: its choice is its closing bracket (close it rather than write an
item). Past the value there is nothing to rule out. The output of a Choice, Regex or Grammar is
text, not JSON: all of it is content (``banned_bytes(..., text=True)``).
"""

from __future__ import annotations

from collections.abc import Callable

import partial
from sdk._local._output import Output

__all__ = ["banned_bytes", "common_prefix", "content_ranges", "first_choice"]

_SCALARS = (partial.Kind.STRING, partial.Kind.NUMBER, partial.Kind.BOOLEAN, partial.Kind.NULL)


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def content_ranges(text: str) -> tuple[list[tuple[int, int]], int]:
    """The content of the JSON value ``text`` begins with (what follows it is ignored).

    Returns the half-open character ranges of its scalars' content, in order, and where the
    value ends (``len(text)`` if it is cut short).
    """
    parser = partial.Parser()
    try:
        events = parser.feed(text)
    except partial.JSONError as exc:  # the text after the value
        events = list(exc.events)
    ranges: list[tuple[int, int]] = []
    end = len(text)
    in_scalar = False  # nothing starts inside a scalar: its range is the last one
    for event in events:
        if isinstance(event, partial.ValueStart):
            if event.kind in _SCALARS:
                first = event.offset + (event.kind is partial.Kind.STRING)
                ranges.append((first, len(text)))  # the end is set when the value is done
                in_scalar = True
        elif isinstance(event, partial.ValueDone):
            if in_scalar:
                ranges[-1] = (ranges[-1][0], event.offset + 1)
                in_scalar = False
            if event.path == ():
                end = event.offset + 1
                break
    return ranges, end


def first_choice(
    data: bytes,
    start: int,
    at: int,
    ranges: list[tuple[int, int]],
    end: int,
    forced_after: Callable[[bytes], bytes] | None,
) -> int | None:
    """The byte offset of the value's first choice, or None.

    ``data``: the output's bytes; ``start``: the rewind boundary (the grammar's state is the one
    there); ``at``: where the value begins; ``ranges`` and ``end``: :func:`content_ranges` in
    byte offsets; ``forced_after(text)``: the bytes the grammar forces once ``text`` follows the
    boundary (None: no grammar, nothing is forced).
    """

    def unforced(p: int) -> int:
        forced = forced_after(data[start:p]) if forced_after is not None else b""
        return p + common_prefix(forced, data[p:])

    pos = at
    for lo, hi in ranges:
        if hi <= pos:
            continue
        p = max(lo, pos)
        if p >= len(data):
            return None
        chosen = unforced(p)
        if chosen < hi:
            return chosen if chosen < len(data) else None
        pos = chosen
    if ranges:
        return None  # all of the content was forced
    # An empty container: the choice is to close it (rather than write a first item).
    p = at + 1
    while p < len(data) and data[p] in b" \t\r\n":
        p += 1
    chosen = unforced(p) if p < len(data) else p
    return chosen if chosen < min(end, len(data)) else None


def banned_bytes(
    output: Output,
    start: int,
    offset: int,
    forced_after: Callable[[bytes], bytes] | None,
    *,
    text: bool = False,
) -> bytes | None:
    """What a rewind to character ``offset`` rules out: the bytes from ``start`` (the token
    boundary it cuts at) to the end of the token that holds the first choice of the value at
    ``offset``; None if that value has none. ``text``: the output is text, all of it content
    (a Choice, Regex or Grammar), rather than a JSON value. Call it with the grammar rolled back
    to ``start`` (``forced_after`` answers from there) and the output not yet cut.
    """
    rest = output.text[offset:]
    ranges, end = ([(0, len(rest))], len(rest)) if text else content_ranges(rest)
    chosen = first_choice(
        bytes(output.data),
        start,
        output.byte_offset(offset),
        [(output.byte_offset(offset + lo), output.byte_offset(offset + hi)) for lo, hi in ranges],
        output.byte_offset(offset + end),
        forced_after,
    )
    if chosen is None:
        return None
    return bytes(output.data[start : output.byte_end(output.token_at(chosen) + 1)])
