"""A loopback OpenAI-compatible server for the client benchmark and the soak test: it streams
recorded Chat Completions chunks, one token per server-sent event, and nothing else.

``python tests/integration/loopback_server.py`` listens on 127.0.0.1 and a free port, prints
``READY <base_url>`` and serves until its stdin closes (so it never outlives the process that
started it). :func:`start` does that from Python. It runs in its own process so that its CPU
time is not the client's and its sockets and tasks are not counted as the client's.

Any ``POST .../chat/completions`` is answered with an event stream (HTTP/1.1, chunked, one
event per chunk, keep-alive). What is streamed is read from the content of the request's first
message, when that is a JSON object (anything else gets the defaults):

- ``"doc"``: ``"weather"`` (default), the 177-token document recorded from the OpenAI API in
  ``tests/data/openai_sse/test_non_pydantic_response_format.sse``, its bytes as recorded; or
  ``"small"``, the 14-token ``test_parse_pydantic_model.sse`` document with ``"id": <id>``
  first, in the same chunk format (role chunk, content chunks, finish chunk, usage chunk,
  ``[DONE]``); or ``"catalog"``, the field-dense document (:data:`CATALOG_TOKENS`: 30 records
  of ``id``, ``name``, ``price``, ``tags``, short values, one token per event), in the same
  format.
- ``"id"``: the integer put in the small document.
- ``"interval"``: seconds to wait after each event (default 0: each event is written and
  drained, as fast as the client reads).
- ``"hold_after"``: after that many content events, send nothing more and wait for the client to
  close the connection (streams held open mid-document, for memory measurements).
- ``"drop_after"``: after that many content events, close the connection mid-body (the client
  sees the peer close without the end of the chunked body); ``"drops"`` (default 1) says for
  how many requests with this same command, so that a retry can get the whole document.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.integration.llama_server import ChildServer, start_child

DATA = Path(__file__).resolve().parents[1] / "data" / "openai_sse"
WEATHER_FILE = DATA / "test_non_pydantic_response_format.sse"
SMALL_FILE = DATA / "test_parse_pydantic_model.sse"


def recorded_events(path: Path) -> list[bytes]:
    """The events of a recorded ``text/event-stream`` body, each with its blank line."""
    text = path.read_bytes().replace(b"\r\n", b"\n")
    return [part + b"\n\n" for part in text.split(b"\n\n") if part.strip()]


def content_of(event: bytes) -> str | None:
    """The ``delta.content`` of an event, ``None`` for an event without content."""
    body = event.strip().removeprefix(b"data: ")
    if body == b"[DONE]":
        return None
    chunk = json.loads(body)
    for choice in chunk.get("choices", ()):
        content = choice.get("delta", {}).get("content")
        if content:
            return str(content)
    return None


WEATHER_EVENTS = recorded_events(WEATHER_FILE)
WEATHER_TOKENS = [t for t in map(content_of, WEATHER_EVENTS) if t is not None]
WEATHER_TEXT = "".join(WEATHER_TOKENS)
"""The weather document (177 tokens, 608 characters, leading whitespace and all)."""

_SMALL_EVENTS = recorded_events(SMALL_FILE)
_SMALL_TOKENS = [t for t in map(content_of, _SMALL_EVENTS) if t is not None]
_ENVELOPE = json.loads(_SMALL_EVENTS[0].strip().removeprefix(b"data: "))


def small_tokens(ident: int) -> list[str]:
    """The tokens of the small document for ``ident``: ``{"id":<ident>,"city":...}``."""
    assert _SMALL_TOKENS[0] == '{"'
    return ['{"', "id", '":', str(ident), ',"', *_SMALL_TOKENS[1:]]


def small_value(ident: int) -> dict[str, Any]:
    """The value of the small document for ``ident``."""
    value: dict[str, Any] = json.loads("".join(small_tokens(ident)))
    return value


_TAGS = ("tools", "steel", "garden", "kitchen", "outdoor", "sale", "new", "eco", "bulk", "kids")
_NOUNS = ("bolt", "hammer", "kettle", "lamp", "rope", "brush", "bucket", "clamp", "fan", "mug")
_ADJECTIVES = ("Small", "Large", "Red", "Blue", "Steel", "Light", "Heavy", "Quiet", "Smart")


def _catalog() -> dict[str, Any]:
    items = [
        {
            "id": 1001 + i * 7,
            "name": f"{_ADJECTIVES[i % 9]} {_NOUNS[i % 10]}, model {i + 1}",
            "price": round(1.25 + i * 3.37, 2),
            "tags": [_TAGS[(i + k) % 10] for k in range(2 + i % 3)],
        }
        for i in range(30)
    ]
    return {"items": items}


def _tokenize(text: str) -> list[str]:
    """A BPE-like split (what a model's tokens look like): words with their leading space,
    digits in runs of at most three, runs of punctuation, runs of whitespace."""
    return re.findall(r" ?[A-Za-z]+|\d{1,3}| ?[^\sA-Za-z\d]+|\s+", text)


CATALOG_VALUE = _catalog()
CATALOG_TEXT = json.dumps(CATALOG_VALUE)
"""The field-dense document: ``{"items": [...]}``, 30 records, 3 KB."""
CATALOG_TOKENS = _tokenize(CATALOG_TEXT)
assert "".join(CATALOG_TOKENS) == CATALOG_TEXT


def _chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
    keys = ("id", "object", "created", "model", "system_fingerprint")
    chunk = {k: _ENVELOPE[k] for k in keys} | {"choices": choices} | extra
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def events_for(tokens: list[str]) -> list[bytes]:
    """Chat Completions chunks for ``tokens``, one token each, in the recorded format."""

    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}

    usage = {
        "prompt_tokens": 79,
        "completion_tokens": len(tokens),
        "total_tokens": 79 + len(tokens),
    }
    return [
        _chunk([choice({"role": "assistant", "content": "", "refusal": None})]),
        *(_chunk([choice({"content": t})]) for t in tokens),
        _chunk([choice({}, "stop")]),
        _chunk([], usage=usage),
        b"data: [DONE]\n\n",
    ]


HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)


def _frame(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


def _frames(events: list[bytes]) -> list[tuple[bytes, bool]]:
    """Each event as an HTTP chunk, and whether it carries a token."""
    return [(_frame(e), content_of(e) is not None) for e in events]


_WEATHER_FRAMES = _frames(WEATHER_EVENTS)
_CATALOG_FRAMES = _frames(events_for(CATALOG_TOKENS))


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    """The request line's target and the body; ``None`` when the client closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return lines[0].split(b" ")[1], body


_seen: dict[str, int] = {}  # requests so far per command text (for "drops")


def _command(body: bytes) -> tuple[dict[str, Any], int]:
    """What the request asks the server to do, and how many requests came with this command
    before it."""
    try:
        # The first user message (a system message with the schema may come before it).
        messages = json.loads(body)["messages"]
        text = next(m["content"] for m in messages if m.get("role") == "user")
        command = json.loads(text)
    except (ValueError, KeyError, IndexError, TypeError, StopIteration, AttributeError):
        return {}, 0
    if not isinstance(command, dict):
        return {}, 0
    if "drop_after" not in command:
        return command, 0
    before = _seen.get(text, 0)
    _seen[text] = before + 1
    return command, before


async def _stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes) -> bool:
    """Answer one request; ``False`` when the connection is to be dropped."""
    command, before = _command(body)
    if command.get("doc") == "small":
        frames = _frames(events_for(small_tokens(int(command.get("id", 0)))))
    elif command.get("doc") == "catalog":
        frames = _CATALOG_FRAMES
    else:
        frames = _WEATHER_FRAMES
    interval = float(command.get("interval", 0))
    hold = command.get("hold_after")
    drop = command.get("drop_after") if before < int(command.get("drops", 1)) else None
    writer.write(HEAD)
    content = 0
    for frame, token in frames:
        writer.write(frame)
        if token:
            content += 1
            if content == hold:
                await writer.drain()
                await reader.read()  # until the client goes
                return False
            if content == drop:
                await writer.drain()
                return False
        if interval > 0:
            await asyncio.sleep(interval)
        else:
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while (request := await _read_request(reader)) is not None:
            target, body = request
            if not target.endswith(b"/chat/completions"):
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            if not await _stream(reader, writer, body):
                break
    except ConnectionError:
        pass  # the client went away mid-stream: the normal end of an abandoned stream
    finally:
        writer.close()


async def serve(ready: Any = None) -> None:
    """Serve on 127.0.0.1 (a free port) until cancelled; ``ready(base_url)`` once listening."""
    server = await asyncio.start_server(_handle, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    if ready is not None:
        ready(f"http://127.0.0.1:{port}/v1")
    async with server:
        await server.serve_forever()


async def _main() -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(serve(lambda url: print(f"READY {url}", flush=True)))
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    task.cancel()


class LoopbackServer(ChildServer):
    """A running server: ``base_url`` ends in ``/v1``."""


def start() -> LoopbackServer:
    """Start the server in a child process; returns once it listens."""
    return LoopbackServer(*start_child([__file__], what="the loopback server"))


if __name__ == "__main__":
    asyncio.run(_main())
