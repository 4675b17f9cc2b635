"""A call of a tool that takes no arguments, on every provider: each streams it its own way
(Anthropic: a ``tool_use`` block with no ``input_json_delta``, or an empty one; OpenAI:
``"arguments": ""``; the Responses API: a ``function_call`` item with no arguments; Gemini: a
``functionCall`` without ``args``; Ollama: ``"arguments": {}``), and each comes out as a call
with ``{}`` arguments, after a text block too (``called_tools`` then says so, and a tool loop
runs the tool). Where the vendor's SDK is installed, it reads the same stream as the oracle."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import sdk
from sdk import Client

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "What time is it?"}]
NOW = sdk.Tool("now", {"type": "object", "properties": {}})
LATER = sdk.Tool("later", {"type": "object", "properties": {"h": {"type": "integer"}}})


def sse(*records: Any, events: list[str] | None = None) -> bytes:
    out = []
    for i, record in enumerate(records):
        data = record if isinstance(record, str) else json.dumps(record)
        head = f"event: {events[i]}\n" if events else ""
        out.append(f"{head}data: {data}\n\n")
    return "".join(out).encode()


async def calls(provider: str, body: bytes, content_type: str = "text/event-stream") -> Any:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://x.test")
    options: dict[str, Any] = {"provider": provider, "model": "m", "http_client": http}
    if provider == "responses":
        options = {**options, "provider": "openai", "api": "responses"}
    async with (
        Client(api_key="k", **options) as client,
        client.stream(messages=MESSAGES, tools=[NOW, LATER], tool_choice="auto") as s,
    ):
        values = await s.results()
        return values, s.called_tools, s.assistant_message()


# ---------------------------------------------------------------- Anthropic


def _anthropic_events(*, empty_delta: bool) -> list[dict[str, Any]]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "model": "m", "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hm."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": tool_use},
    ]
    if empty_delta:
        delta = {"type": "input_json_delta", "partial_json": ""}
        events.append({"type": "content_block_delta", "index": 1, "delta": delta})
    return [
        *events,
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": usage},
        {"type": "message_stop"},
    ]


@pytest.mark.parametrize("empty_delta", [False, True])
async def test_anthropic(empty_delta: bool) -> None:
    events = _anthropic_events(empty_delta=empty_delta)
    values, called, message = await calls(
        "anthropic", sse(*events, events=[e["type"] for e in events])
    )
    assert (values, called) == ([{}], True)
    assert message["tool_calls"][0]["function"] == {"name": "now", "arguments": "{}"}
    streaming = pytest.importorskip("anthropic.lib.streaming._messages")
    types = pytest.importorskip("anthropic.types")
    snapshot = None
    buffers: dict[int, bytes] = {}
    adapter = pytest.importorskip("pydantic").TypeAdapter(types.RawMessageStreamEvent)
    for event in events:
        snapshot = streaming.accumulate_event(
            event=adapter.validate_python(event), current_snapshot=snapshot, json_bufs=buffers
        )
    assert snapshot is not None
    oracle = [(b.name, b.input) for b in snapshot.content if b.type == "tool_use"]
    assert oracle == [("now", values[0])]


# ---------------------------------------------------------------- OpenAI: Chat Completions


def _chat_chunks() -> list[dict[str, Any]]:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    call = {"index": 0, "id": "call_1", "type": "function"}
    return [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hm."}}]},
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{**call, "function": {"name": "now", "arguments": ""}}]
                    },
                }
            ],
        },
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


async def test_openai_chat() -> None:
    chunks = _chat_chunks()
    values, called, message = await calls("openai", sse(*chunks, "[DONE]"))
    assert (values, called) == ([{}], True)
    assert message["tool_calls"][0]["function"] == {"name": "now", "arguments": "{}"}
    chat = pytest.importorskip("openai.lib.streaming.chat")
    completion = pytest.importorskip("openai.types.chat")
    state = chat.ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(completion.ChatCompletionChunk.model_validate(chunk))
    (said,) = state.current_completion_snapshot.choices[0].message.tool_calls or []
    # openai-python keeps the empty text as it came; the call, named, is there.
    assert (said.function.name, said.function.arguments) == ("now", "")


async def test_openai_chat_cut_off_invents_no_arguments() -> None:
    """A call whose arguments had not begun when the output was cut off (``length``) is not
    taken for a call with none: no ``{}`` is made up for it."""
    chunks = _chat_chunks()
    chunks[-1]["choices"][0]["finish_reason"] = "length"
    values, called, _ = await calls("openai", sse(*chunks, "[DONE]"))
    assert {} not in values and not called


# ---------------------------------------------------------------- OpenAI: Responses API


async def test_openai_responses() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "now"}
    response = {"id": "resp_1", "object": "response", "status": "completed", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "delta": "Hm."},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**item, "arguments": ""},
        },
        {"type": "response.completed", "response": response},
    ]
    kinds = [str(e["type"]) for e in events]
    values, called, _ = await calls("responses", sse(*events, events=kinds))
    assert (values, called) == ([{}], True)


# ---------------------------------------------------------------- Gemini


async def test_gemini() -> None:
    records = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hm."}]}}]},
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"functionCall": {"name": "now"}}]},
                    "finishReason": "STOP",
                }
            ]
        },
    ]
    values, called, _ = await calls("gemini", sse(*records))
    assert (values, called) == ([{}], True)
    types = pytest.importorskip("google.genai.types")
    parts = types.GenerateContentResponse.model_validate(records[1]).candidates[0].content.parts
    call = parts[0].function_call
    assert call.name == "now" and not call.args  # no arguments: ours are {}


# ---------------------------------------------------------------- Ollama


async def test_ollama() -> None:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "Hm."}, "done": False},
        {
            "model": "m",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "now", "arguments": {}}}],
            },
            "done": False,
        },
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    values, called, _ = await calls("ollama", body, "application/x-ndjson")
    assert (values, called) == ([{}], True)
    ollama = pytest.importorskip("ollama")
    said = ollama.ChatResponse.model_validate(lines[1]).message.tool_calls
    assert [(c.function.name, dict(c.function.arguments)) for c in said or []] == [
        ("now", values[0])
    ]
