"""The AWS event-stream decoder (``sdk/_http/_eventstream.py``) against botocore's own parser
(``botocore.eventstream.EventStreamBuffer``) as the oracle: random messages with headers of
every type, read whole, byte by byte and in random splits; and hostile frames (a bad CRC in
the prelude or the message, truncated, lengths over the limits or too short, headers that do
not fit), each a typed error that says where and what, sticky."""

from __future__ import annotations

import random
import struct
import uuid
import zlib
from typing import Any

import pytest

from sdk._http._eventstream import (
    MAX_HEADERS_LENGTH,
    EventStreamDecoder,
    EventStreamFrameError,
    EventStreamMessage,
)
from sdk._http._framing import EventStreamError
from tests.sdk._eventstream_support import frame, header

eventstream = pytest.importorskip("botocore.eventstream", reason="botocore is the bedrock extra")


def random_headers(rng: random.Random) -> bytes:
    out = b""
    for i in range(rng.randint(0, 6)):
        kind = rng.randint(0, 9)
        name = f":h{i}-{rng.choice(['é', 'x', 'event-type'])}"
        value: Any = {
            0: True,
            1: False,
            2: rng.randint(-128, 127),
            3: rng.randint(-(2**15), 2**15 - 1),
            4: rng.randint(-(2**31), 2**31 - 1),
            5: rng.randint(-(2**63), 2**63 - 1),
            6: rng.randbytes(rng.randint(0, 40)),
            7: "".join(rng.choice("ab€\U0001f600") for _ in range(rng.randint(0, 20))),
            8: rng.randint(0, 2**41),
            9: uuid.UUID(int=rng.getrandbits(128)),
        }[kind]
        out += header(name, kind, value)
    return out


def botocore_view(raw: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(raw)
    out = []
    for message in buffer:
        headers = dict(message.headers)
        for name, value in headers.items():
            if hasattr(value, "timestamp") and not isinstance(value, (int, str)):
                headers[name] = int(value.timestamp() * 1000)  # a datetime: ours is the int
        out.append((headers, message.payload))
    return out


def our_view(messages: list[EventStreamMessage]) -> list[tuple[dict[str, Any], bytes]]:
    return [(dict(m.headers), m.payload) for m in messages]


def splits(raw: bytes, rng: random.Random) -> list[list[bytes]]:
    out = [[raw], [raw[i : i + 1] for i in range(len(raw))]]
    for _ in range(4):
        cuts = sorted(rng.sample(range(1, len(raw)), k=min(len(raw) - 1, rng.randint(1, 30))))
        out.append([raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)])
    return out


def decode(parts: list[bytes]) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder()
    out = [m for part in parts for m in decoder.feed(part)]
    decoder.end()
    return out


@pytest.mark.parametrize("seed", range(12))
def test_random_messages_read_as_botocore_reads_them(seed: int) -> None:
    rng = random.Random(seed)
    frames = [
        frame(random_headers(rng), rng.randbytes(rng.choice([0, 1, 50, 3000])))
        for _ in range(rng.randint(1, 5))
    ]
    raw = b"".join(frames)
    expected = botocore_view(raw)
    assert len(expected) == len(frames)
    for parts in splits(raw, rng):
        messages = decode(parts)
        assert our_view(messages) == expected
        offsets = [sum(map(len, frames[:i])) for i in range(len(frames))]
        assert [m.offset for m in messages] == offsets


def test_timestamps_and_every_type_by_value() -> None:
    some = uuid.UUID(int=7)
    headers = (
        header(":message-type", 7, "event")
        + header("t", 0, None)
        + header("f", 1, None)
        + header("ts", 8, 1_700_000_000_123)
        + header("id", 9, some)
        + header("b", 6, b"\x00\xff")
    )
    (message,) = decode([frame(headers, b"{}")])
    assert message.headers == {
        ":message-type": "event",
        "t": True,
        "f": False,
        "ts": 1_700_000_000_123,
        "id": some.bytes,
        "b": b"\x00\xff",
    }
    assert message.payload == b"{}"


def fails(raw: bytes, match: str, *, offset: int = 0, max_payload: int | None = None) -> None:
    """``raw`` fed whole and byte by byte: the same error, where and what, then sticky."""
    for parts in ([raw], [raw[i : i + 1] for i in range(len(raw))]):
        decoder = (
            EventStreamDecoder()
            if max_payload is None
            else EventStreamDecoder(max_payload=max_payload)
        )
        with pytest.raises(EventStreamFrameError, match=match) as info:
            for part in parts:
                decoder.feed(part)
            decoder.end()
        assert info.value.offset == offset
        assert isinstance(info.value, EventStreamError)  # the read loop's TransportError
        with pytest.raises(EventStreamFrameError, match=match):
            decoder.feed(b"")  # sticky
        with pytest.raises(EventStreamFrameError, match=match):
            decoder.end()


GOOD = frame(header(":event-type", 7, "chunk"), b'{"bytes": "e30="}')


def test_a_bad_prelude_crc() -> None:
    bad = bytearray(GOOD)
    bad[9] ^= 1
    fails(GOOD + bytes(bad), rf"at byte {len(GOOD)}: prelude CRC mismatch", offset=len(GOOD))
    with pytest.raises(eventstream.ChecksumMismatch):
        botocore_view(bytes(bad))


def test_a_bad_message_crc() -> None:
    bad = bytearray(GOOD)
    bad[-6] ^= 0x20  # in the payload
    fails(bytes(bad), "message CRC mismatch")
    with pytest.raises(eventstream.ChecksumMismatch):
        botocore_view(bytes(bad))


def test_truncated() -> None:
    fails(GOOD + GOOD[:5], r"the body ended inside it \(5 bytes came\)", offset=len(GOOD))
    fails(GOOD[:-1], rf"ended inside it \({len(GOOD) - 1} bytes of {len(GOOD)} came\)")
    assert botocore_view(GOOD[:-1]) == []


def test_oversized_lengths() -> None:
    headers = struct.pack(">II", 16 + MAX_HEADERS_LENGTH + 1, MAX_HEADERS_LENGTH + 1)
    raw = headers + struct.pack(">I", zlib.crc32(headers))
    fails(raw, f"headers length {MAX_HEADERS_LENGTH + 1} is over")  # known at the prelude
    with pytest.raises(eventstream.InvalidHeadersLength):
        botocore_view(raw)
    payload = struct.pack(">II", 16 + 1001, 0)
    raw = payload + struct.pack(">I", zlib.crc32(payload))
    fails(raw, "payload length 1001 is over 1000", max_payload=1000)
    huge = struct.pack(">II", 2**32 - 1, 0)
    raw = huge + struct.pack(">I", zlib.crc32(huge))
    fails(raw, f"payload length {2**32 - 17} is over")  # refused before any of it is held
    with pytest.raises(eventstream.InvalidPayloadLength):
        botocore_view(raw)


def test_lengths_that_do_not_add_up() -> None:
    fails(frame(b"", b"", total=15), "total length 15 is too short for 0 header bytes")
    fails(frame(b"\x05ab", b""), "does not fit the headers")  # a name cut off
    fails(frame(b"\x01a\x07\x00\x09xy", b""), "header 'a' does not fit")  # a string cut off
    fails(frame(b"\x01a\x0c", b""), "header 'a' has unknown type 12")
    fails(frame(header("a", 0, None) * 2, b""), "header 'a' is given twice")
    with pytest.raises(eventstream.DuplicateHeader):
        botocore_view(frame(header("a", 0, None) * 2, b""))


def test_many_messages_in_one_piece_and_none_rescanned() -> None:
    raw = GOOD * 2000
    decoder = EventStreamDecoder()
    assert len(decoder.feed(raw)) == 2000
    assert decoder.feed(b"") == []
    decoder.end()
