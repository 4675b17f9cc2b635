"""The AWS event-stream binary framing (``application/vnd.amazon.eventstream``), bytes in,
messages out (sans-I/O): what Amazon Bedrock's ``invoke-with-response-stream`` answers with.

A message is::

    total length (uint32)  headers length (uint32)  prelude CRC32 (uint32, of the 8 bytes before)
    headers (headers length bytes)
    payload (total length - headers length - 16 bytes)
    message CRC32 (uint32, of every byte of the message before it)

all integers big-endian. A header is its name's length (uint8), the name (UTF-8), a type byte
and a value: ``0`` true, ``1`` false (no value), ``2`` int8, ``3`` int16, ``4`` int32, ``5``
int64, ``6`` bytes and ``7`` a string (a uint16 length first), ``8`` a timestamp (int64
milliseconds since the epoch), ``9`` a UUID (16 bytes, given as they are). This is the
reading botocore's own parser (``botocore.eventstream.EventStreamBuffer``) makes, which the
tests use as the oracle.

:class:`EventStreamDecoder` is fed the body in pieces of any size and gives the messages each
piece completes (:class:`EventStreamMessage`); a message is taken out of the buffer once whole,
and nothing is scanned twice (a piece is appended; the prelude is read once per message).
Limits, explicit: headers over :data:`MAX_HEADERS_LENGTH` bytes, a payload over ``max_payload``
bytes (:data:`MAX_PAYLOAD_LENGTH` by default, botocore's), a total length shorter than the
smallest message, a CRC that does not match, a header that does not fit its headers or has an
unknown type, a name given twice, and a body that ends inside a message: each raises
:class:`EventStreamFrameError`, which says where (the message's offset in the body) and what;
the decoder then stays failed (every later call raises the same error).

Exception tree::

    ValueError
    └── EventStreamError (sdk._http._framing: the read loop makes it a TransportError)
        └── EventStreamFrameError   a frame is malformed: offset, what
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import NamedTuple, TypeAlias

from sdk._http._framing import EventStreamError

__all__ = [
    "MAX_HEADERS_LENGTH",
    "MAX_PAYLOAD_LENGTH",
    "EventStreamDecoder",
    "EventStreamFrameError",
    "EventStreamMessage",
    "HeaderValue",
]

MAX_HEADERS_LENGTH = 128 * 1024
"""The most header bytes one message may have (botocore's ``_MAX_HEADERS_LENGTH``)."""

MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024
"""The most payload bytes one message may have by default (botocore's
``_MAX_PAYLOAD_LENGTH``)."""

_PRELUDE = 12  # total length, headers length, prelude CRC
_OVERHEAD = _PRELUDE + 4  # and the message CRC

HeaderValue: TypeAlias = bool | int | bytes | str
"""A header's value: a bool, an int (the integer types; a timestamp in milliseconds), bytes
(a byte array; a UUID's 16 bytes, as botocore gives them), a str."""

_INTEGERS = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


class EventStreamMessage(NamedTuple):
    """One message of the stream."""

    headers: Mapping[str, HeaderValue]
    """Its headers by name (``:message-type``, ``:event-type``, ``:exception-type``...)."""
    payload: bytes
    """Its payload, as sent."""
    offset: int
    """Where in the body it began."""


class EventStreamFrameError(EventStreamError):
    """A malformed frame: ``offset`` (where in the body the message began) and ``what``."""

    def __init__(self, offset: int, what: str) -> None:
        super().__init__(f"event-stream message at byte {offset}: {what}")
        self.offset = offset
        """Where in the body the bad message began."""
        self.what = what
        """What was wrong with it."""


class EventStreamDecoder:
    """Incremental decoder of the AWS event-stream framing; see the module docstring."""

    def __init__(self, *, max_payload: int = MAX_PAYLOAD_LENGTH) -> None:
        self.max_payload = max_payload
        self._buffer = bytearray()
        self._offset = 0  # where in the body the buffer begins
        self._total: int | None = None  # the message being read's length, once its prelude came
        self._failed: EventStreamFrameError | None = None

    def feed(self, piece: bytes) -> list[EventStreamMessage]:
        """The messages that ``piece`` (the next bytes of the body) completes, in order."""
        if self._failed is not None:
            raise self._failed
        self._buffer += piece
        messages: list[EventStreamMessage] = []
        try:
            while True:
                if self._total is None:
                    if len(self._buffer) < _PRELUDE:
                        break
                    self._total = self._prelude()
                if len(self._buffer) < self._total:
                    break
                messages.append(self._message(self._total))
                del self._buffer[: self._total]
                self._offset += self._total
                self._total = None
        except EventStreamFrameError as exc:
            self._failed = exc
            raise
        return messages

    def end(self) -> None:
        """The body ended: an error if it ended inside a message."""
        if self._failed is not None:
            raise self._failed
        if self._buffer:
            expected = "" if self._total is None else f" of {self._total}"
            self._failed = EventStreamFrameError(
                self._offset,
                f"the body ended inside it ({len(self._buffer)} bytes{expected} came)",
            )
            raise self._failed

    def _prelude(self) -> int:
        total, headers, crc = struct.unpack_from(">III", self._buffer)
        if zlib.crc32(memoryview(self._buffer)[:8]) != crc:
            raise self._error(f"prelude CRC mismatch (sent {crc:#010x})")
        if headers > MAX_HEADERS_LENGTH:
            raise self._error(f"headers length {headers} is over {MAX_HEADERS_LENGTH}")
        payload = total - headers - _OVERHEAD
        if payload < 0:
            raise self._error(f"total length {total} is too short for {headers} header bytes")
        if payload > self.max_payload:
            raise self._error(f"payload length {payload} is over {self.max_payload}")
        return int(total)

    def _message(self, total: int) -> EventStreamMessage:
        view = memoryview(self._buffer)[:total]
        try:
            (crc,) = struct.unpack_from(">I", view, total - 4)
            if zlib.crc32(view[:-4]) != crc:
                raise self._error(f"message CRC mismatch (sent {crc:#010x})")
            (size,) = struct.unpack_from(">I", view, 4)
            headers = self._headers(bytes(view[_PRELUDE : _PRELUDE + size]))
            payload = bytes(view[_PRELUDE + size : total - 4])
        finally:
            view.release()  # the buffer may be resized after
        return EventStreamMessage(headers, payload, self._offset)

    def _headers(self, data: bytes) -> dict[str, HeaderValue]:
        headers: dict[str, HeaderValue] = {}
        at, end = 0, len(data)
        while at < end:
            start = at
            size = data[at]
            name_bytes = data[at + 1 : at + 1 + size]
            at += 1 + size
            if at >= end:
                raise self._error(f"header at {start} (of the headers) does not fit the headers")
            try:
                name = name_bytes.decode("utf-8")
            except UnicodeDecodeError:
                raise self._error(f"header name at {start} is not UTF-8") from None
            kind = data[at]
            at += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in _INTEGERS:
                form = _INTEGERS[kind]
                width = struct.calcsize(form)
                if at + width > end:
                    raise self._error(f"header {name!r} does not fit the headers")
                (value,) = struct.unpack_from(form, data, at)
                at += width
            elif kind in (6, 7):
                if at + 2 > end:
                    raise self._error(f"header {name!r} does not fit the headers")
                (length,) = struct.unpack_from(">H", data, at)
                raw = data[at + 2 : at + 2 + length]
                at += 2 + length
                if at > end:
                    raise self._error(f"header {name!r} does not fit the headers")
                if kind == 6:
                    value = raw
                else:
                    try:
                        value = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        raise self._error(f"header {name!r} is not UTF-8") from None
            elif kind == 9:
                if at + 16 > end:
                    raise self._error(f"header {name!r} does not fit the headers")
                value = data[at : at + 16]
                at += 16
            else:
                raise self._error(f"header {name!r} has unknown type {kind}")
            if name in headers:
                raise self._error(f"header {name!r} is given twice")
            headers[name] = value
        return headers

    def _error(self, what: str) -> EventStreamFrameError:
        return EventStreamFrameError(self._offset, what)
