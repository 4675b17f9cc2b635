"""Which tool call a piece of a stream belongs to, on the wire (issue 20): calls without an
``index`` (Gemini's OpenAI-compatible endpoint), a name or id sent after a call's first delta,
a Responses API item added twice; and errors that say which call broke (index, tool, id), in
their message and in the retry feedback. Through ``Client`` over respx (asyncio and trio), and
sans-I/O through the decoders and the attempt state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from pydantic import BaseModel

from sdk import (
    Client,
    Delta,
    FieldEvent,
    OutputSyntaxError,
    RetriesExhausted,
    Retry,
    SchemaViolation,
    Tool,
)
from sdk._feedback import default_feedback
from sdk._http.openai._chat_decoder import ChunkDecoder, ToolIdDecoder
from sdk._http.openai._responses_decoder import ResponsesDecoder
from sdk._stream._attempt import AttemptState
from sdk._trackers._target import compile_target
from tests.sdk._http_support import Body

BASE = "http://llm.test/v1"
SSE = {"content-type": "text/event-stream"}
MESSAGES = [{"role": "user", "content": "Weather in Oslo, and the news?"}]
RESPONSES = Path(__file__).resolve().parents[2] / "data" / "openai_responses"


class Weather(BaseModel):
    city: str


class Search(BaseModel):
    query: str


TOOLS = [Tool("weather", Weather), Tool("search", Search)]


def chunk(*calls: dict[str, Any], finish: str | None = None) -> bytes:
    delta: dict[str, Any] = {"tool_calls": list(calls)} if calls else {}
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    body["choices"][0]["finish_reason"] = finish
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def entry(
    arguments: str = "", *, index: int | None = None, id: str | None = None, name: str = ""
) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"arguments": arguments}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
    if name:
        call["function"]["name"] = name
    return call


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def reply(parts: list[bytes]) -> httpx.Response:
    return httpx.Response(200, headers=SSE, stream=Body([*parts, b"data: [DONE]\n\n"]))


def client(**kw: Any) -> Client:
    return Client(base_url=BASE, api_key="sk-test", model="m", max_retries=0, **kw)


async def run() -> tuple[list[Any], list[FieldEvent]]:
    async with client() as c, c.stream(messages=MESSAGES, tools=TOOLS) as s:
        events = [ev async for ev in s if isinstance(ev, FieldEvent)]
        return await s.results(), events


def calls_of(events: list[FieldEvent]) -> list[tuple[int | None, str | None, str | None]]:
    return [(e.tool_call, e.tool_name, e.tool_call_id) for e in events if e.path == ()]


# ---------------------------------------------------------------- chat: calls without index


@pytest.mark.anyio
async def test_calls_without_an_index_are_told_apart_by_their_ids(
    mock: respx.MockRouter,
) -> None:
    # Gemini's shape: each call whole in its own chunk, no index (openai-python#2806).
    mock.post("/chat/completions").mock(
        return_value=reply(
            [
                chunk(entry('{"city": "Oslo"}', id="c1", name="weather")),
                chunk(entry('{"query": "news"}', id="c2", name="search")),
                chunk(finish="tool_calls"),
            ]
        )
    )
    values, events = await run()
    assert values == [Weather(city="Oslo"), Search(query="news")]
    assert calls_of(events) == [(0, "weather", "c1"), (1, "search", "c2")]


@pytest.mark.anyio
async def test_calls_without_an_index_streamed_in_pieces(mock: respx.MockRouter) -> None:
    # The same without index, each call in several chunks; only the first names the call.
    mock.post("/chat/completions").mock(
        return_value=reply(
            [
                chunk(entry('{"city": ', id="c1", name="weather")),
                chunk(entry('"Oslo"}')),
                chunk(entry('{"query"', id="c2", name="search")),
                chunk(entry(': "news"}')),
                chunk(finish="tool_calls"),
            ]
        )
    )
    values, events = await run()
    assert values == [Weather(city="Oslo"), Search(query="news")]
    assert calls_of(events) == [(0, "weather", "c1"), (1, "search", "c2")]


def test_an_id_seen_before_goes_back_to_its_call() -> None:
    d = ChunkDecoder(ids=True)
    out = [
        delta
        for c in (
            [entry("{", id="a", name="weather")],
            [entry("{", id="b", name="search")],
            [entry("}", id="a")],
        )
        for delta in d.feed_chunk({"choices": [{"index": 0, "delta": {"tool_calls": c}}]})
    ]
    assert [(x.tool_call, x.text, x.tool_call_id) for x in out] == [
        (0, "{", "a"),
        (1, "{", "b"),
        (0, "}", None),
    ]


# ---------------------------------------------------------------- chat: name or id late


@pytest.mark.anyio
async def test_a_name_on_the_calls_second_delta(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(
        return_value=reply(
            [
                chunk(entry('{"ci', index=0, id="c1")),
                chunk(entry('ty": "Oslo"}', index=0, name="weather")),
                chunk(entry("", index=1, id="c2")),
                chunk(entry('{"query": "news"}', index=1, name="search")),
                chunk(finish="tool_calls"),
            ]
        )
    )
    values, events = await run()
    assert values == [Weather(city="Oslo"), Search(query="news")]
    assert calls_of(events) == [(0, "weather", "c1"), (1, "search", "c2")]


@pytest.mark.anyio
async def test_an_id_after_the_calls_first_delta_is_on_every_event(
    mock: respx.MockRouter,
) -> None:
    mock.post("/chat/completions").mock(
        return_value=reply(
            [
                chunk(entry('{"city": "Oslo"', index=0, name="weather")),
                chunk(entry("}", index=0, id="c1")),
                chunk(finish="tool_calls"),
            ]
        )
    )
    values, events = await run()
    assert values == [Weather(city="Oslo")]
    assert [(e.path, e.tool_call_id) for e in events] == [(("city",), "c1"), ((), "c1")]


def test_a_call_that_never_gets_an_id_is_let_go_at_the_next_call_and_the_finish() -> None:
    d = ToolIdDecoder()
    feed = [
        [entry('{"city": "Oslo"}', index=0, name="weather")],
        [entry('{"query": "news"}', index=1, name="search")],
    ]
    out = [x for c in feed for x in d.feed_chunk({"choices": [{"delta": {"tool_calls": c}}]})]
    assert [(x.tool_call, x.tool_name, x.text) for x in out] == [(0, "weather", '{"city": "Oslo"}')]
    out = d.feed_chunk({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    out += d.end()
    assert [(x.tool_call, x.tool_name, x.finish_reason) for x in out] == [
        (1, "search", None),
        (None, None, "tool_calls"),
    ]


def test_an_unnamed_call_of_several_tools_is_said_at_the_end() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    assert state.feed(Delta(text='{"city": "Oslo"}', tool_call=0, tool_call_id="c1")) == []
    with pytest.raises(SchemaViolation, match=r"tool call 0 \(id 'c1'\): .*names no tool"):
        state.finish()


# ---------------------------------------------------------------- responses: item added twice


def responses_parts(duplicate: bool) -> list[bytes]:
    text = (RESPONSES / "tool_calls.sse").read_bytes()
    blocks = [b + b"\n\n" for b in text.strip().split(b"\n\n")]
    if not duplicate:
        return blocks
    added = next(b for b in blocks if b"response.output_item.added" in b and b"function_call" in b)
    first_args = next(b for b in blocks if b"function_call_arguments.delta" in b)
    at = blocks.index(first_args) + 1
    return [*blocks[:at], added, *blocks[at:]]


@pytest.mark.anyio
async def test_responses_an_item_added_twice_is_one_call(mock: respx.MockRouter) -> None:
    tools = [
        Tool("get_weather", Weather),
        Tool("get_stock_price", {"type": "object", "properties": {"ticker": {}}}),
    ]
    results = []
    for duplicate in (False, True):
        mock.post("/responses").mock(
            return_value=httpx.Response(200, headers=SSE, stream=Body(responses_parts(duplicate)))
        )
        async with (
            Client(base_url=BASE, api_key="k", model="m", api="responses", max_retries=0) as c,
            c.stream(messages=MESSAGES, tools=tools) as s,
        ):
            roots = [ev async for ev in s if isinstance(ev, FieldEvent) and ev.path == ()]
            results.append((await s.results(), calls_of(roots), s.attempts[-1].tool_calls))
    assert results[1] == results[0]
    assert [c.name for c in results[1][2]] == ["get_weather", "get_stock_price"]


def test_responses_a_repeated_item_with_its_arguments_so_far_adds_only_what_is_new() -> None:
    d = ResponsesDecoder(tools=True)

    def added(arguments: str) -> str:
        item = {"type": "function_call", "id": "fc", "call_id": "c", "name": "weather"}
        return json.dumps(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": item | {"arguments": arguments},
            }
        )

    delta = json.dumps(
        {"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": '{"ci'}
    )
    out = [*d.feed_event("", added("")), *d.feed_event("", delta)]
    out += d.feed_event("", added('{"city": '))
    assert "".join(x.text for x in out) == '{"city": '
    assert {x.tool_call for x in out} == {0}


# ---------------------------------------------------------------- which call broke


def test_a_violation_names_its_call_index_tool_and_id() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    state.feed(Delta(text='{"city": "Oslo"}', tool_call=0, tool_name="weather", tool_call_id="a"))
    with pytest.raises(SchemaViolation) as caught:
        state.feed(Delta(text='{"query": 7', tool_call=1, tool_name="search", tool_call_id="b"))
    error = caught.value
    assert (error.tool_call, error.tool_name, error.tool_call_id) == (1, "search", "b")
    assert str(error).startswith("tool call 1 ('search', id 'b'): /query: ")


def test_a_syntax_error_and_a_truncation_name_their_call() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    state.feed(Delta(text='{"city": "Oslo"}', tool_call=0, tool_name="weather"))
    with pytest.raises(OutputSyntaxError, match=r"^tool call 1 \('search'\): "):
        state.feed(Delta(text="{]", tool_call=1, tool_name="search"))
    state = AttemptState(1, compile_target(None, TOOLS))
    state.feed(Delta(text='{"query": "n', tool_call=0, tool_name="search", tool_call_id="z"))
    state.feed(Delta(finish_reason="length"))
    with pytest.raises(Exception) as caught:
        state.finish()
    assert (caught.value.tool_call, caught.value.tool_call_id) == (0, "z")  # type: ignore[attr-defined]


def test_an_error_in_the_message_document_names_no_call() -> None:
    state = AttemptState(
        1, compile_target({"type": "object", "properties": {"a": {"type": "integer"}}})
    )
    with pytest.raises(SchemaViolation) as caught:
        state.feed('{"a": "x"')
    assert caught.value.tool_call is None and str(caught.value).startswith("/a: ")


def test_the_retry_feedback_names_the_calls_and_the_one_that_broke() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    state.feed(Delta(text='{"city": "Oslo"}', tool_call=0, tool_name="weather", tool_call_id="a"))
    try:
        state.feed(Delta(text='{"query": 7', tool_call=1, tool_name="search", tool_call_id="b"))
    except SchemaViolation as exc:
        info = state.record(exc)
    assistant, user = default_feedback(info)
    assert (
        assistant["content"]
        == 'weather (call 0, id a): {"city": "Oslo"}\nsearch (call 1, id b): {"query": 7'
    )
    assert "tool call 1 ('search', id 'b')" in user["content"]
    assert "At /query:" in user["content"]
    assert '`{"query": 7`' in user["content"]  # the excerpt is the broken call's own text


@pytest.mark.anyio
async def test_retries_exhausted_says_which_call_broke(mock: respx.MockRouter) -> None:
    bad = [
        chunk(entry('{"city": "Oslo"}', index=0, id="c1", name="weather")),
        chunk(entry('{"query": 7}', index=1, id="c2", name="search")),
        chunk(finish="tool_calls"),
    ]
    mock.post("/chat/completions").mock(side_effect=[reply(bad), reply(bad)])
    async with client() as c, c.stream(messages=MESSAGES, tools=TOOLS, retry=Retry(2)) as s:
        with pytest.raises(RetriesExhausted) as caught:
            await s.results()
    assert "tool call 1 ('search', id 'c2'): /query" in str(caught.value)
    sent = json.loads(mock.calls.last.request.content)["messages"]
    assert "tool call 1 ('search', id 'c2')" in sent[-1]["content"]


@pytest.mark.anyio
async def test_a_server_that_sends_no_ids_still_aborts_a_broken_call_early(
    mock: respx.MockRouter,
) -> None:
    # No id on any entry: the call's text waits for one only a few entries (HOLD_FOR_ID), then
    # is checked without it, so the violation (a number where `city` must be a string) stops
    # the stream long before the call's end.
    from sdk._http.openai._chat_decoder import HOLD_FOR_ID

    pieces = ['{"city"', ": ", "12", "3", *(["4"] * 40), "}"]
    parts = [chunk(entry(pieces[0], index=0, name="weather"))]
    parts += [chunk(entry(p, index=0)) for p in pieces[1:]]
    body = Body([*parts, chunk(finish="tool_calls"), b"data: [DONE]\n\n"])
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    with pytest.raises(SchemaViolation) as info:
        async with client() as c, c.stream(messages=MESSAGES, tools=TOOLS) as s:
            async for _ in s:
                pass
    assert info.value.pointer == "/city" and info.value.keyword == "type"
    # The violation is proven by the third entry ("12"); the stream read at most the entries
    # held waiting for an id past it (three), then closed the body: not the other 40.
    assert HOLD_FOR_ID == 3
    assert body.closed and body.pulled <= 6, body.pulled
