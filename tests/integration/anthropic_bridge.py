"""A loopback server that speaks Anthropic's Messages API over llama.cpp's server: the model's
real tokens, as llama.cpp decodes them, arrive in Anthropic's framing. For the end-to-end tests
of ``Client(provider="anthropic")`` (``test_anthropic_bridge.py``).

``python tests/integration/anthropic_bridge.py --upstream <llama.cpp /v1 URL> --log <file>``
listens on 127.0.0.1 and a free port, prints ``READY <base_url>`` and serves until its stdin
closes. ``POST /v1/messages`` (``stream: true``) is translated to ``POST /chat/completions``:
the ``system`` text and the turns' text blocks as chat messages, ``max_tokens``,
``temperature`` and ``seed`` as they are, ``output_config.format.schema`` as a (non-strict)
``response_format`` json_schema, which llama.cpp applies with its grammar. llama.cpp's chunks
come back as Anthropic's events: ``message_start``, a text block (``content_block_start``,
``ping``, one ``text_delta`` per chunk, ``content_block_stop``), ``message_delta`` with the
stop reason (``stop`` -> ``end_turn``, ``length`` -> ``max_tokens``) and the usage,
``message_stop``.

When the client closes the connection mid-stream, the upstream request is closed at once, so
llama.cpp stops decoding: the abort goes through both hops. Each request body received is
appended to the log file, one JSON line each.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
from llama_server import ChildServer, start_child

HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"request-id: req_bridge\r\ntransfer-encoding: chunked\r\n\r\n"
)
STOP = {"stop": "end_turn", "length": "max_tokens"}


def _event(kind: str, **fields: Any) -> bytes:
    data = f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions body for a Messages API body."""
    messages = []
    if body.get("system"):
        messages.append({"role": "system", "content": _text(body["system"])})
    messages += [{"role": m["role"], "content": _text(m["content"])} for m in body["messages"]]
    chat: dict[str, Any] = {
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": body["max_tokens"],
    }
    for key in ("temperature", "seed"):
        if key in body:
            chat[key] = body[key]
    schema = body.get("output_config", {}).get("format", {}).get("schema")
    if schema is not None:
        chat["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    return chat


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
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


async def _relay(
    writer: asyncio.StreamWriter, http: httpx.AsyncClient, upstream: str, body: dict[str, Any]
) -> None:
    writer.write(HEAD)
    message = {"id": "msg_bridge", "type": "message", "role": "assistant", "content": []}
    usage = {"input_tokens": 0, "output_tokens": 0}
    writer.write(_event("message_start", message={**message, "usage": usage}))
    writer.write(_event("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    writer.write(_event("ping"))
    await writer.drain()
    reason = "end_turn"
    async with http.stream("POST", upstream + "/chat/completions", json=chat_body(body)) as r:
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = {
                    "input_tokens": chunk["usage"]["prompt_tokens"],
                    "output_tokens": chunk["usage"]["completion_tokens"],
                }
            for choice in chunk.get("choices", []):
                text = choice.get("delta", {}).get("content")
                if text:
                    delta = {"type": "text_delta", "text": text}
                    writer.write(_event("content_block_delta", index=0, delta=delta))
                    await writer.drain()
                if choice.get("finish_reason"):
                    reason = STOP.get(choice["finish_reason"], "end_turn")
    writer.write(_event("content_block_stop", index=0))
    writer.write(
        _event("message_delta", delta={"stop_reason": reason, "stop_sequence": None}, usage=usage)
    )
    writer.write(_event("message_stop"))
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: str, log: str
) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        try:
            while (request := await _read_request(reader)) is not None:
                target, raw = request
                if not target.endswith(b"/v1/messages"):
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    continue
                body = json.loads(raw)
                await asyncio.to_thread(_append, log, body)
                relay = asyncio.ensure_future(_relay(writer, http, upstream, body))
                gone = asyncio.ensure_future(reader.read(1))  # b"": the client closed
                done, _ = await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:  # the abort: closing the upstream response stops llama.cpp
                    relay.cancel()
                    await asyncio.gather(relay, return_exceptions=True)
                    break
                gone.cancel()
                relay.result()
        except ConnectionError:
            pass
        finally:
            writer.close()


def _append(log: str, body: dict[str, Any]) -> None:
    with open(log, "a") as file:
        file.write(json.dumps(body) + "\n")


async def _main(upstream: str, log: str) -> None:
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, upstream, log), "127.0.0.1", 0, backlog=64
    )
    port = server.sockets[0].getsockname()[1]
    print(f"READY http://127.0.0.1:{port}", flush=True)
    loop = asyncio.get_running_loop()
    async with server:
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin


class AnthropicBridge(ChildServer):
    """A running bridge: ``base_url`` is the Messages API root (``/v1/messages`` below it)."""


def start(upstream: str, log: str) -> AnthropicBridge:
    """Start the bridge in a child process in front of ``upstream``; returns once it listens."""
    argv = [__file__, "--upstream", upstream, "--log", log]
    return AnthropicBridge(*start_child(argv, what="the Anthropic bridge"))


if __name__ == "__main__":
    args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=True))
    asyncio.run(_main(args["--upstream"], args["--log"]))
