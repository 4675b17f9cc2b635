"""The shared framing for JSON lines (NDJSON), and the read loop driving it: every chunking, the
last line without its end, limits, the content type."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sdk._backend import Delta
from sdk._errors import TransportError
from sdk._http._framing import EventStreamError, JsonLinesReader, ServerSentEvent
from sdk._http._read_loop import Opened, stream_deltas
from tests.sdk._http_support import Body

LINES = [{"message": {"content": '{"a"'}}, {"message": {"content": ": 1}"}}, {"done": True}]
BODY = b"".join(json.dumps(line).encode() + b"\n" for line in LINES)


def splits(body: bytes, seed: int) -> Iterator[list[bytes]]:
    yield [body]
    yield [body[i : i + 1] for i in range(len(body))]
    rng = random.Random(seed)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(body)), rng.randint(1, 8)))
        yield [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def read(parts: list[bytes]) -> list[str | ServerSentEvent]:
    reader = JsonLinesReader()
    out: list[str | ServerSentEvent] = []
    for part in parts:
        out.extend(reader.feed_data(part))
    return out + reader.end()


@pytest.mark.parametrize("seed", range(5))
def test_every_chunking_gives_the_same_lines(seed: int) -> None:
    expected = [json.dumps(line) for line in LINES]
    for parts in splits(BODY, seed):
        assert read(parts) == expected


def test_crlf_blank_lines_and_a_last_line_without_its_end() -> None:
    assert read([b'{"a": 1}\r\n\r\n', b"\n  \n", b'{"b": "\xc3', b'\xa9"}']) == [
        '{"a": 1}',
        '{"b": "\u00e9"}',
    ]
    assert read([b"\xff\n"]) == ["\ufffd"]  # invalid UTF-8 replaced, never raised here


def test_a_line_over_the_limit_raises_whether_it_ends_or_not() -> None:
    with pytest.raises(EventStreamError, match="over 16 bytes with no end"):
        JsonLinesReader(max_size=16).feed_data(b"x" * 17)
    reader = JsonLinesReader(max_size=16)
    reader.feed_data(b"x" * 10)
    with pytest.raises(EventStreamError, match="over 16 bytes"):
        reader.feed_data(b"x" * 10 + b"\n")
    with pytest.raises(EventStreamError, match="over 16 bytes"):
        JsonLinesReader(max_size=16).feed_data(b"y" * 17 + b"\n")


class _Lines:
    """A decoder of JSON lines (as a provider's would be): each line's ``message.content``."""

    def __init__(self) -> None:
        self.done = False
        self.seen: list[tuple[str, str]] = []

    def decode(self, event: str, data: str) -> str | list[Delta]:
        self.seen.append((event, data))
        value: dict[str, Any] = json.loads(data)
        if value.get("done"):
            self.done = True
            return [Delta(finish_reason="stop")]
        return str(value["message"]["content"])

    def end(self) -> list[Delta]:
        return []


def opener(body: Body, content_type: str) -> Any:
    response = httpx.Response(200, headers={"content-type": content_type}, stream=body)

    async def open_response() -> Opened:
        async def release() -> None:
            pass

        return response, release

    return open_response


@pytest.mark.anyio
@pytest.mark.parametrize("tail", [b"\n", b""], ids=["ended", "no-final-newline"])
async def test_the_read_loop_reads_json_lines(tail: bytes) -> None:
    body = Body([BODY[:7], BODY[7:40], BODY[40:].rstrip(b"\n") + tail])
    decoder = _Lines()
    out = [
        d
        async for d in stream_deltas(
            opener(body, "application/x-ndjson"), decoder, framing=JsonLinesReader
        )
    ]
    assert out == [Delta(text='{"a"'), Delta(text=": 1}"), Delta(finish_reason="stop")]
    assert [event for event, _ in decoder.seen] == ["", "", ""]
    assert body.closed


@pytest.mark.anyio
async def test_json_lines_refuse_an_event_stream_and_the_reverse() -> None:
    with pytest.raises(TransportError, match="expected a stream of JSON lines"):
        async for _ in stream_deltas(
            opener(Body([BODY]), "text/event-stream"), _Lines(), framing=JsonLinesReader
        ):
            pass
    with pytest.raises(TransportError, match="expected an event stream"):
        async for _ in stream_deltas(opener(Body([BODY]), "application/x-ndjson"), _Lines()):
            pass
