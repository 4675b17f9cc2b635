"""How a streamed body is cut into messages, bytes in, messages out (sans-I/O), for every
provider: server-sent events (:class:`EventStreamParser`: OpenAI, Anthropic, Gemini) and JSON
lines (:class:`JsonLinesReader`: Ollama's native API). Both have the face the read loop
(:mod:`sdk._http._read_loop`) drives (:class:`Framing`): ``feed_data(piece)`` gives the
messages a piece completes, a message being an event's data alone (a ``str``) or a
:class:`ServerSentEvent`; ``end()`` what the end of the body completes; ``content_types`` what
the response must say it is.

The event stream
----------------

:class:`EventStreamParser` is fed the body of a response as it arrives, in pieces of any size,
and hands back the events completed so far. It follows the WHATWG event-stream interpretation:

- lines end at ``\\r\\n``, ``\\r`` or ``\\n``, also when the two bytes of a ``\\r\\n`` arrive
  in different pieces; one UTF-8 byte-order mark at the start of the stream is skipped, even when
  it arrives split;
- a blank line ends an event; ``:`` lines are comments (keep-alives such as ``: ping``);
- ``data`` lines are joined with ``\\n``; ``event`` sets the event type (``""`` when absent);
  ``id`` sets the last event id (kept for later events, ignored when it contains NUL);
  ``retry`` is read when it is all ASCII digits; other fields are ignored; one space after the
  colon is dropped;
- an event cut off by the end of the body (no blank line after it) is never returned.

As httpx-sse did before it, an event is returned when any of ``event``, ``data``, ``id`` or
``retry`` was given (so ``event: error`` alone is an event with empty data). Text is decoded
as UTF-8 (the format's only encoding) with invalid bytes replaced; lines are split on bytes,
which is safe because ``\\r`` and ``\\n`` never occur inside a multi-byte UTF-8 character.

Limits: a line still waiting for its end, or the data of one event, longer than ``max_size``
bytes raises :class:`EventStreamError` (a server that never ends a line must not grow the
buffer forever).

Speed: servers write one event per token, so a piece is one complete ``data: ...\n\n`` event
when the client keeps up, and a run of them when it falls behind. :meth:`EventStreamParser.feed`
takes such a run with a few byte searches per event, without splitting lines (the rest of the
piece, from the first event of another shape, goes the general way), and
:meth:`EventStreamParser.feed_data` gives those events as their data alone, no event object
made.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Protocol

from sdk._constants import DEFAULT_MAX_EVENT_SIZE

__all__ = [
    "EventStreamError",
    "EventStreamParser",
    "Framing",
    "JsonLinesReader",
    "ServerSentEvent",
]

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")


class ServerSentEvent(NamedTuple):
    """One dispatched event."""

    event: str
    """The event type; ``""`` when the event had no ``event`` field."""
    data: str
    """The ``data`` lines joined with ``\\n``."""
    id: str
    """The last event id seen so far in the stream (``""`` when none)."""
    retry: int | None
    """The event's ``retry`` field in milliseconds, if it had a valid one."""


class EventStreamError(ValueError):
    """The stream broke a limit (a line or an event's data over ``max_size`` bytes)."""


class Framing(Protocol):
    """Bytes in, messages out: what the read loop needs of a stream's framing."""

    content_types: tuple[str, ...]
    """The content types a response in this framing may have."""

    def feed_data(self, piece: bytes) -> list[str | ServerSentEvent]:
        """The messages ``piece`` completes: data alone (``str``) or an event."""
        ...

    def end(self) -> list[str | ServerSentEvent]:
        """The body ended: what that completes."""
        ...


class _LineHolder:
    """What both framings share: the pieces of a line whose end has not arrived, held up to
    ``max_size`` bytes (:class:`EventStreamError` beyond, naming the stream as ``_stream``)."""

    _stream = "stream"

    def __init__(self, *, max_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_size = max_size
        self._partial: list[bytes] = []  # pieces of a line whose end has not arrived
        self._partial_size = 0

    def _hold(self, piece: bytes) -> None:
        if not piece:
            return
        self._partial_size += len(piece)
        if self._partial_size > self.max_size:
            raise EventStreamError(
                f"a line of the {self._stream} is over {self.max_size} bytes with no end"
            )
        self._partial.append(piece)


class EventStreamParser(_LineHolder):
    """Incremental ``text/event-stream`` parser; see the module docstring for the rules."""

    content_types: tuple[str, ...] = ("text/event-stream",)
    _stream = "event stream"

    def __init__(self, *, max_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        super().__init__(max_size=max_size)
        self._start = b""  # the first bytes, until we know whether they begin with a BOM
        self._started = False
        self._skip_lf = False  # the last piece ended with \r: a \n first in the next is its pair
        self._event = ""
        self._data: list[bytes] = []
        self._data_size = 0
        self._retry: int | None = None
        self._fields = False  # the event being read has had a field
        self._id = ""
        self._clean = False  # started, between events, nothing held: the fast path may run

    def feed(self, piece: bytes) -> list[ServerSentEvent]:
        """The events that ``piece`` (the next bytes of the body) completes, in order."""
        last_id = self._id  # the id of the plain events: they come before any "id:" line
        return [
            ServerSentEvent("", e, last_id, None) if isinstance(e, str) else e
            for e in self.feed_data(piece)
        ]

    def end(self) -> list[str | ServerSentEvent]:
        """The body ended: nothing (an event cut off by the end is never dispatched)."""
        return []

    def feed_data(self, piece: bytes) -> list[str | ServerSentEvent]:
        """As :meth:`feed`, except that an event of one ``data`` line and nothing else is given
        as its data (a ``str``): its type is ``""``, its ``id`` the last id so far, no retry."""
        if not self._clean or not piece.startswith(b"data: ") or b"\r" in piece:
            return self._feed(piece)
        # A run of one-line data events: each "data: " up to its "\n\n".
        events: list[str | ServerSentEvent] = []
        start, size, limit = 0, len(piece), self.max_size
        while True:
            end = piece.find(b"\n", start)
            if end < 0 or end + 1 == size or piece[end + 1] != 10:  # 10: "\n"
                break  # not one: from here the general way
            if end - start - 6 > limit:
                raise EventStreamError(f"an event's data is over {limit} bytes")
            events.append(piece[start + 6 : end].decode("utf-8", "replace"))
            start = end + 2
            if start == size:
                return events
            if not piece.startswith(b"data: ", start):
                break
        events.extend(self._feed(piece[start:]))
        return events

    def _feed(self, piece: bytes) -> list[str | ServerSentEvent]:
        events = self._lines(piece)
        self._clean = self._started and not self._partial and not self._fields and not self._skip_lf
        return events

    def _lines(self, piece: bytes) -> list[str | ServerSentEvent]:
        # Every line the general way (events are ServerSentEvent here).
        if not piece:
            return []
        if not self._started:
            piece = self._start + piece
            if len(piece) < len(_BOM) and _BOM.startswith(piece):
                self._start = piece  # too short to tell yet
                return []
            self._started = True
            self._start = b""
            if piece.startswith(_BOM):
                piece = piece[len(_BOM) :]
        if self._skip_lf:
            self._skip_lf = False
            if piece.startswith(b"\n"):
                piece = piece[1:]
        if b"\n" not in piece and b"\r" not in piece:
            self._hold(piece)  # no line ends here: all of it waits (joined once, at the end)
            return []
        if self._partial:
            self._partial.append(piece)
            piece = b"".join(self._partial)
            self._partial = []
            self._partial_size = 0
        events: list[str | ServerSentEvent] = []
        start = 0
        for end in _LINE_END.finditer(piece):
            event = self._line(piece[start : end.start()])
            if event is not None:
                events.append(event)
            start = end.end()
        if start < len(piece):
            self._hold(piece[start:])
        elif piece.endswith(b"\r"):
            self._skip_lf = True
        return events

    def _line(self, line: bytes) -> ServerSentEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b":"):
            return None  # a comment
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data_size += len(value) + 1
            if self._data_size > self.max_size:
                raise EventStreamError(f"an event's data is over {self.max_size} bytes")
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            self._id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)
        else:
            return None  # a field the format does not define, or an invalid id or retry
        self._fields = True
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._fields:
            return None
        event = ServerSentEvent(
            self._event, b"\n".join(self._data).decode("utf-8", "replace"), self._id, self._retry
        )
        self._event = ""
        self._data = []
        self._data_size = 0
        self._retry = None
        self._fields = False
        return event


class JsonLinesReader(_LineHolder):
    """Incremental reader of a stream of JSON lines (NDJSON): each line that is not blank is
    one message, given as its text (UTF-8, invalid bytes replaced, a ``\\r`` before the
    ``\\n`` dropped). A last line without its ``\\n`` is given at :meth:`end`. A line longer
    than ``max_size`` bytes raises :class:`EventStreamError`. The text is not parsed here: the
    provider's decoder reads it, as it reads an event's data."""

    content_types: tuple[str, ...] = (
        "application/x-ndjson",
        "application/jsonl",
        "application/json",
    )

    def feed_data(self, piece: bytes) -> list[str | ServerSentEvent]:
        """The lines ``piece`` completes, in order."""
        end = piece.find(b"\n")
        if end < 0:
            self._hold(piece)
            return []
        lines: list[str | ServerSentEvent] = []
        if self._partial:
            self._partial.append(piece[:end])
            first = b"".join(self._partial)
            self._partial, self._partial_size = [], 0
        else:
            first = piece[:end]
        self._line(first, lines)
        start = end + 1
        while (end := piece.find(b"\n", start)) >= 0:
            self._line(piece[start:end], lines)
            start = end + 1
        self._hold(piece[start:])
        return lines

    def end(self) -> list[str | ServerSentEvent]:
        """The body ended: its last line, if it had no ``\\n``."""
        lines: list[str | ServerSentEvent] = []
        if self._partial:
            self._line(b"".join(self._partial), lines)
            self._partial, self._partial_size = [], 0
        return lines

    def _line(self, line: bytes, out: list[str | ServerSentEvent]) -> None:
        if len(line) > self.max_size:
            raise EventStreamError(f"a line of the stream is over {self.max_size} bytes")
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():
            out.append(line.decode("utf-8", "replace"))
