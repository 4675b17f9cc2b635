"""Checks on a string (a value, or a key) while it streams.

Each function returns the states the new characters proved wrong, with why, in order; the
checker kills them. A prefix check that reads the whole prefix (``pattern``, a format's prefix
grammar, a key against ``additionalProperties: false``) runs at every delta while the text is
at most :data:`EVERY_DELTA` characters long and then whenever it has grown by an eighth, so a
long string costs O(length) in all; the character reported is still the first one that proves
the violation (found by bisection, since failing is final).
"""

from __future__ import annotations

from collections.abc import Callable

from sdk._schema._states import Frame, Reason, State

__all__ = ["EVERY_DELTA", "common_length", "first_bad", "key_grow", "string_begun", "string_grow"]

EVERY_DELTA = 256
"""Prefixes up to this many characters are checked at every delta."""

Kills = list[tuple[State, Reason]]


def string_begun(frame: Frame) -> None:
    """A string began on ``frame``: note which states watch it as it grows."""
    for s in frame.states:
        conj = s.conj
        if conj.watch:
            frame.watch = True
            s.cands = conj.str_members
            if conj.patterns or conj.formats:
                frame.parts = []


def _due(length: int, checked: int) -> bool:
    return length <= EVERY_DELTA or length >= checked + (checked >> 3)


def string_grow(frame: Frame, offset: int, text: str) -> Kills:
    """The string on ``frame`` grew by ``text`` (``offset`` is just after it)."""
    pos = frame.length
    end = frame.length = pos + len(text)
    kills: Kills = []
    if not frame.watch:
        return kills
    parts = frame.parts
    prefix: str | None = None
    good = pos
    if parts is not None:
        parts.append(text)
        if _due(end, frame.checked):
            good = frame.checked  # every check passed on the text up to here
            frame.checked = end
            prefix = "".join(parts)
    first = max(offset - len(text), frame.start + 1)  # offset of the delta's first character
    path, start = frame.path, frame.start
    for s in frame.states:
        if not s.alive:
            continue
        conj = s.conj
        if not conj.watch:
            continue
        limit = conj.max_length
        if limit is not None and end > limit:
            bad = max(limit - pos, 0)  # index in ``text`` of the first character too many
            message = f"expected at most {limit} characters, got more"
            kills.append(
                (s, Reason(path, "maxLength", message, None, first + bad, start, limit + 1))
            )
            continue
        cands = s.cands
        if cands is not None:
            kept = tuple(m for m in cands if m.startswith(text, pos))
            s.cands = kept
            if not kept:
                bad = max((common_length(m, text, pos) for m in cands), default=0)
                message = f"expected {conj.str_shown}; no such string starts like this"
                reason = Reason(
                    path, conj.str_keyword, message, None, first + bad, start, pos + bad + 1
                )
                kills.append((s, reason))
                continue
        if prefix is None:
            continue
        for pattern, source in conj.patterns:
            if not pattern.could_search(prefix):
                k = first_bad(pattern.could_search, prefix, good)
                message = f"no string that starts like this matches {source!r}"
                where = first + max(k - pos, 0)
                kills.append((s, Reason(path, "pattern", message, None, where, start, k + 1)))
                break
        else:
            for fmt in conj.formats:
                if fmt.streams and not fmt.prefix_ok(prefix):
                    k = first_bad(fmt.prefix_ok, prefix, good)
                    message = f"no string that starts like this is a valid {fmt.name}"
                    where = first + max(k - pos, 0)
                    kills.append((s, Reason(path, "format", message, None, where, start, k + 1)))
                    break
    return kills


def key_grow(frame: Frame, offset: int, text: str) -> Kills:
    """The key being read in the object on ``frame`` grew by ``text``: refuse it where no key
    an ``additionalProperties: false`` allows starts like it. The violation's path ends with the
    key as far as that proves it, whatever the chunking."""
    frame.key_parts.append(text)
    before = frame.key_len
    end = frame.key_len = before + len(text)
    kills: Kills = []
    closed = [s for s in frame.states if s.alive and s.conj.closed]
    if not closed or not _due(end, frame.key_checked):
        return kills
    good = frame.key_checked
    frame.key_checked = end
    prefix = "".join(frame.key_parts)
    first = max(offset - len(text), frame.key_start + 1)
    for s in closed:
        ok = s.conj.key_prefix_ok
        if not ok(prefix):
            k = first_bad(ok, prefix, good)
            bad = prefix[: k + 1]
            message = f"no allowed key starts with {bad!r}"
            where = first + max(k - before, 0)
            path = (*frame.path, bad)
            reason = Reason(path, "additionalProperties", message, bad, where, frame.key_start)
            kills.append((s, reason))
    return kills


def first_bad(ok: Callable[[str], bool], text: str, known_good: int) -> int:
    """The index of the first character of ``text`` after which ``ok`` fails (``ok`` holds for
    ``text[:known_good]`` and fails for ``text``; failing is final, so bisect)."""
    lo, hi = known_good, len(text)  # ok(text[:lo]) holds, ok(text[:hi]) fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(text[:mid]):
            lo = mid
        else:
            hi = mid
    return hi - 1


def common_length(member: str, text: str, pos: int) -> int:
    """How many characters of ``text`` match ``member`` from ``pos``."""
    n = 0
    for a, b in zip(member[pos:], text, strict=False):
        if a != b:
            break
        n += 1
    return n
