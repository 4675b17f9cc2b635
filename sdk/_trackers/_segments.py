"""The segment tracker: a structural-tag output in, text and field events out (sans-I/O).

:class:`SegmentTracker` follows an output constrained by a :class:`~sdk.StructuralTag` the way
the server's grammar produces it: free text until a trigger; then the rest of one tag's
``begin``; that tag's JSON, fed to a :class:`~sdk.FieldTracker` of its own (so every early
check of the schema applies inside the segment, and its events carry ``segment`` and ``tag``);
whitespace and the tag's ``end``; free text again. Each segment is validated whole (jsonschema,
then pydantic) the moment its JSON ends, not at the end of the output.

Free text is held back only while it may be the start of a trigger, then streams as
:class:`~sdk.TextDelta` events (path ``()``, ``segment`` ``None``). A begin that matches no tag,
anything but ``end`` after a segment's JSON, text before the first segment under
``at_least_one`` or after it under ``stop_after_first`` raise :class:`~sdk.OutputSyntaxError`
at that character; a schema violation inside a segment says which segment in its message, and
its ``offset`` counts from the start of the output. The result is a :class:`TaggedText`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._constraints import StructuralTag, Tag
from sdk._errors import (
    OutputSyntaxError,
    Path,
    SchemaViolation,
    StreamError,
    StreamUsageError,
    TruncatedError,
)
from sdk._events import FieldEvent, TextDelta, TrackerEvent
from sdk._trackers._extent import JsonExtent
from sdk._trackers._field import Dispatch, FieldTracker
from sdk._trackers._runaway import DEFAULT_RUNAWAY, RunawayLimits

__all__ = ["Segment", "SegmentTracker", "TaggedText"]

_FREE, _OPENING, _CONTENT, _CLOSING, _DONE = range(5)
_WS = " \t\r\n"


@dataclass(frozen=True, slots=True)
class Segment:
    """One tagged segment of a :class:`TaggedText`."""

    index: int
    """Its position among the segments (0-based): ``ev.segment`` of its events."""
    tag: str
    """The name of its :class:`~sdk.Tag`: ``ev.tag`` of its events."""
    value: Any
    """Its JSON, validated: the model instance, or the plain value for a dict schema."""
    start: int
    """Offset of its ``begin`` in the output."""
    end: int
    """Offset just after its ``end``: ``text[start:end]`` is the whole segment."""


@dataclass(frozen=True, slots=True)
class TaggedText:
    """The result of a :class:`~sdk.StructuralTag` stream: the whole output, and its segments."""

    text: str
    """The output as written, tags and free text included."""
    segments: tuple[Segment, ...]
    """The tagged segments, in output order."""

    @property
    def free_text(self) -> str:
        """The output without its segments."""
        pieces, at = [], 0
        for seg in self.segments:
            pieces.append(self.text[at : seg.start])
            at = seg.end
        pieces.append(self.text[at:])
        return "".join(pieces)


class SegmentTracker:
    """Tracks one output against ``constraint``; ``attempt`` is stamped on its events, and
    ``deltas`` asks for string deltas inside segments (free text always streams),
    ``regex_timeout`` is each segment tracker's pattern budget, ``runaway`` its runaway limits
    (:class:`~sdk.RunawayLimits`). Errors are sticky."""

    def __init__(
        self,
        constraint: StructuralTag,
        *,
        attempt: int = 1,
        deltas: bool = False,
        dispatch: Dispatch = "validated",
        regex_timeout: float = DEFAULT_REGEX_TIMEOUT,
        runaway: RunawayLimits | None = DEFAULT_RUNAWAY,
    ) -> None:
        self._constraint = constraint
        self._runaway = runaway
        self._dispatch: Dispatch = dispatch
        self._regex_timeout = regex_timeout
        self.attempt = attempt
        self._deltas = deltas
        self._triggers = constraint.triggers
        self._longest = max(len(t) for t in self._triggers)
        self._text: list[str] = []
        self._offset = 0  # characters consumed
        self._held = ""  # free text that may be the start of a trigger
        self._opening = ""  # the begin matched so far
        self._candidates: tuple[Tag, ...] = constraint.structures
        self._state = _OPENING if constraint.at_least_one else _FREE
        self._tag: Tag | None = None
        self._tracker: FieldTracker | None = None
        self._extent = JsonExtent()
        self._start = 0  # offset of the open segment's begin
        self._base = 0  # offset of the open segment's JSON
        self._closing = ""  # the end matched so far
        self._segments: list[Segment] = []
        self._snapshots: list[Any] = []
        self._error: StreamError | None = None
        self._finished = False

    @property
    def snapshot(self) -> Any:
        """The segments' values so far, plain JSON, the open one's partial value last."""
        if self._tracker is not None and self._state == _CONTENT:
            return [*self._snapshots, self._tracker.snapshot]
        return list(self._snapshots)

    @property
    def open_paths(self) -> list[Path]:
        """The open segment's open paths (empty outside a segment)."""
        if self._tracker is not None and self._state == _CONTENT:
            return self._tracker.open_paths
        return []

    def feed(self, text: str, *, forced: bool = False) -> list[TrackerEvent]:
        """Take the output's next characters; return the events they made certain."""
        if self._error is not None:
            raise self._error
        if self._finished:
            raise StreamUsageError("feed() after finish(): this tracker's input has ended")
        events: list[TrackerEvent] = []
        self._text.append(text)
        i, n = 0, len(text)
        try:
            while i < n:
                state = self._state
                if state == _FREE:
                    i = self._free(text, i, events)
                elif state == _OPENING:
                    i = self._open(text, i)
                elif state == _CONTENT:
                    i = self._content(text, i, forced, events)
                elif state == _CLOSING:
                    i = self._close(text, i)
                else:
                    self._syntax(
                        "the output must end with its first tagged segment (stop_after_first)",
                        self._offset,
                    )
        except StreamError as exc:
            self._error = exc
            raise
        return events

    def finish(self) -> list[TrackerEvent]:
        """End the input: the free text still held back, or :class:`~sdk.TruncatedError` when
        the output stopped inside a segment (or before the first, under ``at_least_one``)."""
        if self._error is not None:
            raise self._error
        if self._finished:
            return []
        state = self._state
        if state in (_FREE, _DONE):
            self._finished = True
            held, self._held = self._held, ""
            return [TextDelta((), held, self.attempt)] if held else []
        tag = self._tag
        if state == _CLOSING and tag is not None:
            where = f"before the end {tag.end!r} of tagged segment {len(self._segments) - 1}"
        elif state == _CONTENT and tag is not None:
            where = f"inside tagged segment {len(self._segments)} ({tag.name!r})"
        elif self._opening:
            where = f"inside the begin of a tag ({self._opening!r} arrived)"
        else:
            where = "before its first tagged segment (at_least_one)"
        self._error = TruncatedError(
            f"the output ended {where}",
            snapshot=self.snapshot,
            open_paths=self.open_paths or [()],
            reason="eof",
        )
        raise self._error

    def close(self) -> TaggedText:
        """End the input (if not yet): the output and its validated segments."""
        self.finish()
        return TaggedText("".join(self._text), tuple(self._segments))

    # ------------------------------------------------------------------ states

    def _free(self, text: str, i: int, events: list[TrackerEvent]) -> int:
        held = self._held
        buf = held + text[i:] if held else text[i:]
        best: tuple[int, int, str] | None = None  # (end, start, trigger): the first to end
        for trigger in self._triggers:
            at = buf.find(trigger)
            if at >= 0 and (best is None or (at + len(trigger), at) < best[:2]):
                best = (at + len(trigger), at, trigger)
        if best is None:
            keep = self._hold(buf)
            self._held = buf[len(buf) - keep :] if keep else ""
            emit = buf[: len(buf) - keep]
            if emit:
                events.append(TextDelta((), emit, self.attempt))
            self._offset += len(text) - i
            return len(text)
        end, at, trigger = best
        if at:
            events.append(TextDelta((), buf[:at], self.attempt))
        consumed = end - len(held)  # the trigger ends past what was held (held has none)
        self._offset += consumed
        self._held = ""
        self._start = self._offset - len(trigger)
        self._opening = trigger
        self._candidates = tuple(
            t for t in self._constraint.structures if t.begin.startswith(trigger)
        )
        self._state = _OPENING
        self._begin_if_complete()
        return i + consumed

    def _hold(self, buf: str) -> int:
        """How many characters at the end of ``buf`` may begin a trigger."""
        for k in range(min(len(buf), self._longest - 1), 0, -1):
            tail = buf[-k:]
            if any(t.startswith(tail) for t in self._triggers):
                return k
        return 0

    def _open(self, text: str, i: int) -> int:
        if not self._opening:
            self._start = self._offset
        while i < len(text) and self._state == _OPENING:
            opening = self._opening + text[i]
            candidates = tuple(t for t in self._candidates if t.begin.startswith(opening))
            if not candidates:
                begins = ", ".join(repr(t.begin) for t in self._candidates)
                first = self._constraint.at_least_one and not self._segments
                lead = (
                    "the output must begin with a tagged segment (at_least_one)"
                    if first
                    else (f"after {self._opening!r} the output must go on with a tag's begin")
                )
                self._syntax(f"{lead}: one of {begins}; got {opening!r}", self._offset)
            self._opening, self._candidates = opening, candidates
            self._offset += 1
            i += 1
            self._begin_if_complete()
        return i

    def _begin_if_complete(self) -> None:
        for tag in self._candidates:
            if tag.begin == self._opening:  # no begin is a prefix of another: this is the tag
                self._tag = tag
                self._tracker = FieldTracker(
                    tag.compiled,
                    attempt=self.attempt,
                    deltas=self._deltas,
                    dispatch=self._dispatch,
                    regex_timeout=self._regex_timeout,
                    runaway=self._runaway,
                )
                self._extent = JsonExtent()
                self._base = self._offset
                self._state = _CONTENT
                return

    def _content(self, text: str, i: int, forced: bool, events: list[TrackerEvent]) -> int:
        tracker, tag = self._tracker, self._tag
        assert tracker is not None and tag is not None
        stop = self._extent.scan(text, i)
        piece = text[i:] if stop is None else text[i:stop]
        index = len(self._segments)
        try:
            new = tracker.feed(piece, forced=forced) if piece else []
            if stop is not None:
                new = [*new, *tracker.finish()]
                value = tracker.close()
        except StreamError as exc:
            raise self._in_segment(exc, index, tag) from None
        if new:
            base = self._base
            events.extend(
                dataclasses.replace(ev, segment=index, tag=tag.name, offset=ev.offset + base)
                if type(ev) is FieldEvent
                else dataclasses.replace(ev, segment=index, tag=tag.name)
                for ev in new
            )
        self._offset += len(piece)
        if stop is None:
            return len(text)
        self._snapshots.append(tracker.snapshot)
        self._segments.append(Segment(index, tag.name, value, self._start, -1))
        self._closing = ""
        self._state = _CLOSING
        return stop

    def _close(self, text: str, i: int) -> int:
        tag = self._tag
        assert tag is not None
        end = tag.end
        while i < len(text) and self._state == _CLOSING:
            c = text[i]
            if not self._closing and c in _WS and end[0] not in _WS:
                pass  # whitespace between the JSON and the end tag
            elif end.startswith(self._closing + c):
                self._closing += c
            else:
                self._syntax(
                    f"tagged segment {len(self._segments) - 1} ({tag.name!r}) must end with "
                    f"{end!r} after its JSON; got {self._closing + c!r}",
                    self._offset,
                )
            self._offset += 1
            i += 1
            if self._closing == end:
                last = self._segments[-1]
                self._segments[-1] = dataclasses.replace(last, end=self._offset)
                self._tag, self._tracker, self._opening = None, None, ""
                self._state = _DONE if self._constraint.stop_after_first else _FREE
        return i

    # ------------------------------------------------------------------ errors

    def _syntax(self, message: str, offset: int) -> None:
        raise OutputSyntaxError(message, offset=offset)

    def _in_segment(self, exc: StreamError, index: int, tag: Tag) -> StreamError:
        """The segment tracker's error, placed in the whole output: its message names the
        segment, its offset (and a violation's ``start``) count from the output's start."""
        offset = getattr(exc, "offset", None)
        if isinstance(offset, int):
            exc.offset = offset + self._base  # type: ignore[attr-defined]
        if isinstance(exc, SchemaViolation) and exc.start is not None:
            exc.start += self._base
        label = f"in tagged segment {index} ({tag.name!r}): "
        message = getattr(exc, "message", None)
        if isinstance(message, str):
            exc.message = label + message  # type: ignore[attr-defined]
        else:
            exc.args = (label + str(exc), *exc.args[1:])
        return exc
