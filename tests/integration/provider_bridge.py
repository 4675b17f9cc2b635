"""A loopback server that speaks the native providers' APIs over llama.cpp's server: the model's
real tokens, as llama.cpp decodes them, arrive in Anthropic's, Gemini's or Ollama's framing.
For the end-to-end tests of ``Client(provider=...)`` (``test_provider_bridge.py``).

``python tests/integration/provider_bridge.py --upstream <llama.cpp /v1 URL> --log <file>``
listens on 127.0.0.1 and a free port, prints ``READY <base_url>`` and serves until its stdin
closes. Each request is translated to ``POST /chat/completions`` (the system text and the
turns' text as chat messages; the token limit, ``temperature`` and ``seed``; the schema as a
non-strict ``response_format`` json_schema, which llama.cpp applies with its grammar), and
llama.cpp's chunks are written back in the provider's framing:

- ``POST /v1/messages`` (Anthropic): named events, ``message_start``, a text block
  (``content_block_start``, ``ping``, one ``text_delta`` per chunk, ``content_block_stop``),
  ``message_delta`` with the stop reason (``stop`` -> ``end_turn``, ``length`` ->
  ``max_tokens``) and usage, ``message_stop``; the schema from ``output_config.format``.
- ``POST .../models/{model}:streamGenerateContent?alt=sse`` (Gemini): one record per chunk
  (``candidates[0].content.parts[0].text``), the last with ``finishReason`` (``STOP`` /
  ``MAX_TOKENS``) and ``usageMetadata``; the schema from ``generationConfig.responseJsonSchema``.
- ``POST /api/chat`` (Ollama): one JSON line per chunk, then ``done: true`` with
  ``done_reason`` and the counts; the schema from ``format``.

When the client closes the connection mid-stream, the upstream request is closed at once, so
llama.cpp stops decoding: the abort goes through both hops. One request per connection
(``connection: close``): the bridge watches the connection for the client's going away. Each
request body received is appended to the log file, one JSON line each.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

import httpx

from tests.integration.llama_server import ChildServer, start_child

_STOP = {"stop": "end_turn", "length": "max_tokens"}
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _head(content_type: str) -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\n"
        "request-id: req_bridge\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n"
    ).encode()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


class Framing:
    """One provider's side of the bridge: its request read as a chat, its stream written."""

    content_type = "text/event-stream"

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def chat(self) -> dict[str, Any]:
        raise NotImplementedError

    def start(self) -> bytes:
        return b""

    def piece(self, text: str) -> bytes:
        raise NotImplementedError

    def end(self, reason: str, usage: dict[str, int]) -> bytes:
        raise NotImplementedError


def _chat(
    messages: list[dict[str, Any]], limit: Any, schema: Any, **sampling: Any
) -> dict[str, Any]:
    chat: dict[str, Any] = {
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": limit,
        **{k: v for k, v in sampling.items() if v is not None},
    }
    if schema is not None:
        chat["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    return chat


class Anthropic(Framing):
    def chat(self) -> dict[str, Any]:
        body = self.body
        messages = (
            [{"role": "system", "content": _text(body["system"])}] if body.get("system") else []
        )
        messages += [{"role": m["role"], "content": _text(m["content"])} for m in body["messages"]]
        schema = body.get("output_config", {}).get("format", {}).get("schema")
        return _chat(
            messages,
            body["max_tokens"],
            schema,
            temperature=body.get("temperature"),
            seed=body.get("seed"),
        )

    @staticmethod
    def _event(kind: str, **fields: Any) -> bytes:
        return _chunk(f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode())

    def start(self) -> bytes:
        message = {"id": "msg_bridge", "type": "message", "role": "assistant", "content": []}
        usage = {"input_tokens": 0, "output_tokens": 0}
        block = {"type": "text", "text": ""}
        return (
            self._event("message_start", message={**message, "usage": usage})
            + self._event("content_block_start", index=0, content_block=block)
            + self._event("ping")
        )

    def piece(self, text: str) -> bytes:
        return self._event(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": text}
        )

    def end(self, reason: str, usage: dict[str, int]) -> bytes:
        delta = {"stop_reason": _STOP.get(reason, "end_turn"), "stop_sequence": None}
        return (
            self._event("content_block_stop", index=0)
            + self._event(
                "message_delta",
                delta=delta,
                usage={"input_tokens": usage["prompt"], "output_tokens": usage["completion"]},
            )
            + self._event("message_stop")
        )


class Gemini(Framing):
    def chat(self) -> dict[str, Any]:
        body = self.body
        messages = []
        if body.get("systemInstruction"):
            messages.append(
                {"role": "system", "content": _text(body["systemInstruction"]["parts"])}
            )
        for content in body["contents"]:
            role = "assistant" if content["role"] == "model" else "user"
            messages.append({"role": role, "content": _text(content["parts"])})
        config = body.get("generationConfig", {})
        return _chat(
            messages,
            config.get("maxOutputTokens", 256),
            config.get("responseJsonSchema"),
            temperature=config.get("temperature"),
            seed=config.get("seed"),
        )

    @staticmethod
    def _record(record: dict[str, Any]) -> bytes:
        return _chunk(b"data: " + json.dumps(record).encode() + b"\r\n\r\n")

    def piece(self, text: str) -> bytes:
        content = {"role": "model", "parts": [{"text": text}]}
        return self._record({"candidates": [{"content": content, "index": 0}]})

    def end(self, reason: str, usage: dict[str, int]) -> bytes:
        candidate = {
            "content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": _FINISH.get(reason, "STOP"),
            "index": 0,
        }
        counts = {"promptTokenCount": usage["prompt"], "candidatesTokenCount": usage["completion"]}
        return self._record({"candidates": [candidate], "usageMetadata": counts})


class Ollama(Framing):
    content_type = "application/x-ndjson"

    def chat(self) -> dict[str, Any]:
        body = self.body
        options = body.get("options", {})
        messages = [{"role": m["role"], "content": m["content"]} for m in body["messages"]]
        schema = body.get("format") if isinstance(body.get("format"), dict) else None
        return _chat(
            messages,
            options.get("num_predict", 256),
            schema,
            temperature=options.get("temperature"),
            seed=options.get("seed"),
        )

    @staticmethod
    def _line(**fields: Any) -> bytes:
        return _chunk(json.dumps({"model": "smollm2", **fields}).encode() + b"\n")

    def piece(self, text: str) -> bytes:
        return self._line(message={"role": "assistant", "content": text}, done=False)

    def end(self, reason: str, usage: dict[str, int]) -> bytes:
        return self._line(
            message={"role": "assistant", "content": ""},
            done=True,
            done_reason=reason,
            prompt_eval_count=usage["prompt"],
            eval_count=usage["completion"],
        )


def framing_for(target: bytes) -> Callable[[dict[str, Any]], Framing] | None:
    """The provider a request's target names, if any."""
    path = target.partition(b"?")[0]
    if path.endswith(b"/v1/messages"):
        return Anthropic
    if path.endswith(b":streamGenerateContent"):
        return Gemini
    if path.endswith(b"/api/chat"):
        return Ollama
    return None


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
    writer: asyncio.StreamWriter, http: httpx.AsyncClient, upstream: str, framing: Framing
) -> None:
    writer.write(_head(framing.content_type) + framing.start())
    await writer.drain()
    reason = "stop"
    usage = {"prompt": 0, "completion": 0}
    async with http.stream("POST", upstream + "/chat/completions", json=framing.chat()) as r:
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = {
                    "prompt": chunk["usage"]["prompt_tokens"],
                    "completion": chunk["usage"]["completion_tokens"],
                }
            for choice in chunk.get("choices", []):
                text = choice.get("delta", {}).get("content")
                if text:
                    writer.write(framing.piece(text))
                    await writer.drain()
                if choice.get("finish_reason"):
                    reason = choice["finish_reason"]
    writer.write(framing.end(reason, usage) + b"0\r\n\r\n")
    await writer.drain()


def _append(log: str, body: dict[str, Any]) -> None:
    with open(log, "a") as file:
        file.write(json.dumps(body) + "\n")


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: str, log: str
) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        try:
            while (request := await _read_request(reader)) is not None:
                target, raw = request
                kind = framing_for(target)
                if kind is None:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    continue
                body = json.loads(raw)
                await asyncio.to_thread(_append, log, body)
                relay = asyncio.ensure_future(_relay(writer, http, upstream, kind(body)))
                gone = asyncio.ensure_future(reader.read(1))  # b"": the client closed
                done, _ = await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
                if gone in done:  # the abort: closing the upstream response stops llama.cpp
                    relay.cancel()
                    await asyncio.gather(relay, return_exceptions=True)
                    break
                gone.cancel()
                await asyncio.gather(gone, return_exceptions=True)
                relay.result()
                break  # one request per connection (connection: close)
        except ConnectionError:
            pass
        finally:
            writer.close()


async def _main(upstream: str, log: str) -> None:
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, upstream, log), "127.0.0.1", 0, backlog=64
    )
    port = server.sockets[0].getsockname()[1]
    print(f"READY http://127.0.0.1:{port}", flush=True)
    loop = asyncio.get_running_loop()
    async with server:
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin


class ProviderBridge(ChildServer):
    """A running bridge: ``base_url`` is its root (each provider's path below it)."""


def start(upstream: str, log: str) -> ProviderBridge:
    """Start the bridge in a child process in front of ``upstream``; returns once it listens."""
    argv = [__file__, "--upstream", upstream, "--log", log]
    return ProviderBridge(*start_child(argv, what="the provider bridge"))


if __name__ == "__main__":
    args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=True))
    asyncio.run(_main(args["--upstream"], args["--log"]))
