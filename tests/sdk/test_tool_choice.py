"""``tool_choice`` as the caller says: ``"auto"`` (text or calls), ``"none"`` (text only),
``"required"``, a named tool; forced by default. What is sent (an httpx ``MockTransport``
captures the body), how a text answer and calls stream, what the result says, and what is a
violation (at once), sans-I/O and through the client on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from sdk import (
    Client,
    Delta,
    FieldEvent,
    SchemaViolation,
    TextDelta,
    Tool,
    UnsupportedConstraint,
)
from sdk._backend import GenerationRequest
from sdk._stream._attempt import AttemptState
from sdk._trackers._target import compile_target

BASE = "http://llm.test/v1"
MESSAGES = [{"role": "user", "content": "Weather in Oslo?"}]


class Weather(BaseModel):
    city: str


class Search(BaseModel):
    query: str


TOOLS = [Tool("get_weather", Weather), Tool("search", Search)]


def sse(*deltas: dict[str, Any], finish: str = "stop") -> bytes:
    events = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return (
        b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    )


def text(*pieces: str) -> bytes:
    return sse(*({"content": p} for p in pieces))


def calls(*named: tuple[str, dict[str, Any]]) -> bytes:
    deltas: list[dict[str, Any]] = []
    for i, (name, args) in enumerate(named):
        first = {"index": i, "id": f"call_{i}", "type": "function"}
        deltas.append({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]})
        deltas.append({"tool_calls": [{"index": i, "function": {"arguments": json.dumps(args)}}]})
    return sse(*deltas, finish="tool_calls")


class Server:
    """A Chat Completions server that answers every request with ``reply`` and keeps the
    bodies it was sent."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=self.reply
        )

    def client(self, **kw: Any) -> Client:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self))
        return Client(base_url=BASE, api_key="k", model="m", http_client=http, max_retries=0, **kw)


@pytest.mark.anyio
async def test_auto_a_text_answer_streams_as_text_and_is_the_result() -> None:
    server = Server(text("It is ", "sunny", "\n\n", "in Oslo."))
    async with (
        server.client() as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice="auto") as s,
    ):
        events = [ev async for ev in s]
        answer = await s.result()
    assert answer == "It is sunny\n\nin Oslo."  # whitespace-only pieces are text here
    assert [type(e) for e in events] == [TextDelta] * 4 + [FieldEvent]
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "It is ",
        "sunny",
        "\n\n",
        "in Oslo.",
    ]
    final = events[-1]
    assert isinstance(final, FieldEvent) and final.path == () and final.tool_call is None
    assert s.called_tools is False
    assert server.bodies[0]["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in server.bodies[0]["tools"]] == ["get_weather", "search"]


@pytest.mark.anyio
async def test_auto_tool_calls_stream_as_today_each_against_its_own_tool() -> None:
    server = Server(calls(("search", {"query": "Oslo"}), ("get_weather", {"city": "Oslo"})))
    async with (
        server.client() as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice="auto") as s,
    ):
        roots = [ev async for ev in s if isinstance(ev, FieldEvent) and ev.path == ()]
        values = await s.results()
    assert values == [Search(query="Oslo"), Weather(city="Oslo")]
    assert [(e.tool_call, e.tool_name) for e in roots] == [(0, "search"), (1, "get_weather")]
    assert s.called_tools is True


@pytest.mark.anyio
async def test_auto_a_call_that_breaks_its_tool_is_a_violation() -> None:
    server = Server(calls(("get_weather", {"town": "Oslo"})))
    async with (
        server.client() as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice="auto") as s,
    ):
        with pytest.raises(SchemaViolation, match="city"):  # required, and missing
            await s.result()


@pytest.mark.anyio
async def test_none_sends_none_and_a_call_is_a_violation_at_its_first_delta() -> None:
    server = Server(calls(("search", {"query": "Oslo"})))
    async with (
        server.client() as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice="none") as s,
    ):
        with pytest.raises(SchemaViolation, match="tool_choice is 'none'") as info:
            await s.result()
    assert info.value.keyword == "tool_choice"
    assert server.bodies[0]["tool_choice"] == "none"


@pytest.mark.anyio
async def test_named_sends_the_name_and_a_call_of_another_tool_is_a_violation() -> None:
    server = Server(calls(("get_weather", {"city": "Oslo"})))
    choice = {"type": "function", "function": {"name": "search"}}
    async with (
        server.client() as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice=choice) as s,
    ):
        with pytest.raises(SchemaViolation, match="tool_choice names 'search'"):
            await s.result()
    assert server.bodies[0]["tool_choice"] == choice


@pytest.mark.anyio
async def test_named_to_llama_cpp_is_asked_for_as_the_answer_and_read_as_the_call() -> None:
    # llama.cpp's server applies no grammar for tool_choice (a forced call was answered with
    # prose): the one call's arguments are asked for as the answer (response_format, which it
    # enforces), and the answer is read as that call.
    server = Server(text('{"query"', ': "Oslo"}'))
    choice = {"type": "function", "name": "search"}  # the Responses API's form is taken too
    async with (
        server.client(server="llamacpp") as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice=choice) as s,
    ):
        events = [ev async for ev in s.fields()]
        assert await s.result() == Search(query="Oslo")
    assert {(ev.tool_name, ev.tool_call) for ev in events} == {("search", 0)}
    assert s.assistant_message()["tool_calls"] == [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "search", "arguments": '{"query": "Oslo"}'},
        }
    ]
    body = server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "search"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["query"]


@pytest.mark.anyio
async def test_several_tools_to_llama_cpp_are_still_sent_as_tools() -> None:
    # Only one forced call can be the answer; "required" among several stays tools.
    server = Server(calls(("search", {"query": "Oslo"})))
    async with (
        server.client(server="llamacpp") as c,
        c.stream(messages=MESSAGES, tools=TOOLS, tool_choice="required") as s,
    ):
        assert await s.result() == Search(query="Oslo")
    body = server.bodies[0]
    assert body["tool_choice"] == "required" and "response_format" not in body
    assert len(body["tools"]) == len(TOOLS)


@pytest.mark.anyio
async def test_forced_by_default_text_fails_at_its_first_letter_not_at_the_end() -> None:
    # Issue 20: the reply that calls no tool was reported after max_tokens. The server here
    # would go on writing; the stream stops reading at the first letter.
    server = Server(text("  ", "I", " would rather", " not") + text(*["."] * 500))
    async with server.client() as c, c.stream(messages=MESSAGES, tools=TOOLS) as s:
        with pytest.raises(SchemaViolation, match="calls none of the tools") as info:
            await s.result()
    # (the decoder drops whitespace-only content where a call is forced: offset 0 is the "I")
    assert info.value.offset == 0 and info.value.value == "I"
    assert s.attempts[0].text == "I"  # nothing after the letter that proved it was read
    assert server.bodies[0]["tool_choice"] == "required"


def test_auto_prose_then_a_call_the_call_is_the_result() -> None:
    state = AttemptState(1, compile_target(None, TOOLS, tool_choice="auto"))
    events = list(state.feed(Delta(text="Let me check. ")))
    assert [type(e) for e in events] == [TextDelta]
    state.feed(Delta(text='{"city": "Oslo"}', tool_call=0, tool_name="get_weather"))
    state.finish()
    assert state.close() == [Weather(city="Oslo")] and state.tool_mode


def test_auto_an_empty_reply_is_a_violation() -> None:
    state = AttemptState(1, compile_target(None, TOOLS, tool_choice="auto"))
    state.feed(Delta(finish_reason="stop"))
    with pytest.raises(SchemaViolation, match="neither text nor a tool call"):
        state.finish()


@pytest.mark.parametrize(
    ("choice", "error"),
    [
        ("sometimes", "tool_choice must be 'auto', 'none', 'required'"),
        ({"type": "function", "function": {"name": "delete_all"}}, "'delete_all', which is not"),
        ({"type": "allowed_tools"}, "a named tool_choice is"),
    ],
)
def test_a_bad_tool_choice_is_refused_at_the_call(choice: Any, error: str) -> None:
    client = Client(base_url=BASE, api_key="k", model="m")
    with pytest.raises(ValueError, match=error):
        client.stream(messages=MESSAGES, tools=TOOLS, tool_choice=choice)


def test_tool_choice_without_tools_is_refused() -> None:
    client = Client(base_url=BASE, api_key="k", model="m")
    with pytest.raises(ValueError, match="tool_choice goes with tools="):
        client.stream(messages=MESSAGES, schema=Weather, tool_choice="auto")


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_the_local_engine_refuses_a_text_answer(choice: str) -> None:
    from sdk._local._constrain import check

    tools = tuple(TOOLS)
    request = GenerationRequest(
        messages=tuple(MESSAGES), schema={}, mode="tool", tools=tools, tool_choice=choice
    )
    with pytest.raises(UnsupportedConstraint, match="calls only"):
        check(request)


def test_the_emulated_call_decoder_reads_every_piece_of_the_answer_as_the_call() -> None:
    """Both of the chat decoder's paths (a chunk object, and the short path for a content
    token alone) give the answer's text as call 0 of the tool, named once."""
    from sdk._http.openai._chat_decoder import EmulatedCallDecoder

    decoder = EmulatedCallDecoder("search")
    pieces = ['{"query"', ': "Os', 'lo"}']
    deltas = []
    for piece in pieces:  # the first chunk goes the long way (nothing said yet), then short
        chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"content": piece}}]}
        deltas.extend(decoder.feed_event("", json.dumps(chunk)))
    end = {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    deltas.extend(decoder.feed_event("", json.dumps(end)))
    texts = [d for d in deltas if d.text]
    assert "".join(d.text for d in texts) == "".join(pieces)
    assert all(d.tool_call == 0 for d in texts)
    assert [d.tool_name for d in texts] == ["search", None, None]
