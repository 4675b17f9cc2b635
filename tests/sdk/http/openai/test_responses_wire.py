"""The Responses API on the wire: the streams in tests/data/openai_responses replayed over HTTP
(respx for the httpx backend; a mock transport for the caller's openai client), through
``Client(api="responses")``: results, tool calls, refusals, incomplete responses, failures,
abort and retries (asyncio and trio)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
import respx
from pydantic import BaseModel, Field

from sdk import (
    Client,
    ContentFilteredError,
    FieldEvent,
    OutputSyntaxError,
    RefusedError,
    Retry,
    SchemaViolation,
    StructuralTag,
    Tag,
    Tool,
    TransportError,
    TruncatedError,
    UnsupportedConstraint,
    Usage,
)
from tests.sdk._http_support import Body

# The recorded usage carries its details (cached, reasoning tokens), kept as they came.
DETAILS: dict[str, Any] = {
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
DATA = Path(__file__).resolve().parents[3] / "data" / "openai_responses"
SSE = {"content-type": "text/event-stream"}
MESSAGES = [{"role": "user", "content": "What's the weather in Paris?"}]


class Weather(BaseModel):
    city: str
    temperature_c: float
    conditions: str


class GetWeather(BaseModel):
    """The current weather in a city."""

    city: str


class GetStockPrice(BaseModel):
    ticker: str
    exchange: str


def parts(name: str) -> list[bytes]:
    """The stream, one network read per event (as a server flushes them)."""
    text = (DATA / f"{name}.sse").read_bytes()
    return [block + b"\n\n" for block in text.strip().split(b"\n\n")]


def reply(name: str) -> httpx.Response:
    return httpx.Response(200, headers=SSE, stream=Body(parts(name)))


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


def client(**kw: Any) -> Client:
    # No default transport retries: each test says what it retries.
    kw.setdefault("max_retries", 0)
    return Client(base_url=BASE, api_key="sk-test", model="gpt-4o", api="responses", **kw)


async def test_json_output(mock: respx.MockRouter) -> None:
    route = mock.post("/responses").mock(return_value=reply("json_output"))
    async with (
        client(server="openai") as c,
        c.stream(messages=MESSAGES, schema=Weather, max_tokens=100, progress=True) as s,
    ):
        fields = [ev.pointer async for ev in s if isinstance(ev, FieldEvent)]
        weather = await s.result()
    assert weather == Weather(city="Paris", temperature_c=18.5, conditions="partly cloudy")
    assert fields == ["/city", "/temperature_c", "/conditions", ""]
    assert s.usage == Usage(52, 18, **DETAILS)
    sent = route.calls.last.request
    assert sent.url == BASE + "/responses"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = json.loads(sent.content)
    assert body["input"] == MESSAGES and body["max_output_tokens"] == 100
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["strict"] is True
    assert body["text"]["format"]["schema"]["additionalProperties"] is False


async def test_several_tools(mock: respx.MockRouter) -> None:
    route = mock.post("/responses").mock(return_value=reply("tool_calls"))
    tools = [Tool("get_weather", GetWeather), Tool("get_stock_price", GetStockPrice)]
    async with client() as c, c.stream(messages=MESSAGES, tools=tools) as s:
        roots = [ev async for ev in s if isinstance(ev, FieldEvent) and ev.path == ()]
        values = await s.results()
    assert values == [GetWeather(city="Paris"), GetStockPrice(ticker="AAPL", exchange="NASDAQ")]
    assert [(e.tool_call, e.tool_name, e.tool_call_id) for e in roots] == [
        (0, "get_weather", "call_Xk3vQ2pL8mN4rT6yW1zA9bC5"),
        (1, "get_stock_price", "call_Hj7fR2sD4gK9lP1qZ8xV3nM6"),
    ]
    body = json.loads(route.calls.last.request.content)
    assert body["tool_choice"] == "required"
    assert [t["name"] for t in body["tools"]] == ["get_weather", "get_stock_price"]
    assert body["tools"][0]["description"] == "The current weather in a city."


async def test_refusal(mock: respx.MockRouter) -> None:
    mock.post("/responses").mock(return_value=reply("refusal"))
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        with pytest.raises(RefusedError, match=re.escape("I'm sorry, I can't help with that.")):
            await s.result()


async def test_max_output_tokens_is_a_truncation_with_reason_length(mock: respx.MockRouter) -> None:
    mock.post("/responses").mock(return_value=reply("incomplete_max_output_tokens"))
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather, max_tokens=16) as s:
        with pytest.raises(TruncatedError) as info:
            await s.result()
    assert info.value.reason == "length"
    # The output stopped after `"temperature_c":18`: an open number is never shown.
    assert info.value.snapshot == {"city": "Paris"}
    assert ("temperature_c",) in info.value.open_paths
    assert s.usage == Usage(52, 16, **DETAILS)


async def test_content_filter(mock: respx.MockRouter) -> None:
    mock.post("/responses").mock(return_value=reply("incomplete_content_filter"))
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        with pytest.raises(ContentFilteredError) as info:
            await s.result()
    assert info.value.snapshot == {"city": "Paris"}


async def test_a_failed_response_is_retried_and_the_next_attempt_succeeds(
    mock: respx.MockRouter,
) -> None:
    route = mock.post("/responses").mock(side_effect=[reply("failed"), reply("json_output")])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    retry = Retry(max_attempts=1, sleep=sleep, jitter=0.0)
    async with (
        client() as c,
        c.stream(messages=MESSAGES, schema=Weather, retry=retry, max_retries=1) as s,
    ):
        assert (await s.result()).city == "Paris"
    assert route.call_count == 2 and slept == [0.5]  # a transport error backs off
    first = s.attempts[0].error
    assert isinstance(first, TransportError) and "server_error" in str(first)


async def test_a_non_retryable_nested_error_event_is_not_retried(mock: respx.MockRouter) -> None:
    # OpenAI's shape nests the error; its code decides: invalid_prompt will not go away.
    event = {
        "type": "error",
        "sequence_number": 1,
        "error": {"type": "invalid_request_error", "code": "invalid_prompt", "message": "no"},
    }
    body = f"event: error\ndata: {json.dumps(event)}\n\n".encode()
    route = mock.post("/responses").mock(
        return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=body
        )
    )
    async with client(max_retries=2) as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        with pytest.raises(TransportError, match=r"no \(invalid_prompt\)") as info:
            await s.result()
    assert not info.value.retryable
    assert route.call_count == 1


async def test_an_error_event_fails_the_stream(mock: respx.MockRouter) -> None:
    mock.post("/responses").mock(return_value=reply("error_event"))
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        with pytest.raises(TransportError, match="Rate limit reached"):
            await s.result()


async def test_http_errors_are_those_of_chat_completions(mock: respx.MockRouter) -> None:
    mock.post("/responses").mock(
        return_value=httpx.Response(
            429, headers={"retry-after": "7"}, json={"error": {"message": "slow"}}
        )
    )
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        with pytest.raises(TransportError) as info:
            await s.result()
    assert (info.value.status, info.value.retryable, info.value.retry_after) == (429, True, 7.0)


class OsloOnly(BaseModel):
    city: str = Field(pattern="^Oslo$")


async def test_a_violation_closes_the_response_at_once(mock: respx.MockRouter) -> None:
    body = Body(parts("json_output"))
    mock.post("/responses").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    async with client() as c, c.stream(messages=MESSAGES, schema=OsloOnly) as s:
        with pytest.raises(SchemaViolation):
            await s.result()
    assert body.closed
    assert body.pulled < len(body.parts)  # nothing was read after the violating value


async def test_a_constraint_the_server_cannot_take_is_refused_before_any_request(
    mock: respx.MockRouter,
) -> None:
    route = mock.post("/responses")
    async with client(server="openai") as c:
        with pytest.raises(UnsupportedConstraint, match="OpenAI cannot be sent a StructuralTag"):
            c.stream(messages=MESSAGES, schema=StructuralTag([Tag("<w>", Weather, "</w>")]))
        with pytest.raises(UnsupportedConstraint, match="takes no seed"):
            c.stream(messages=MESSAGES, schema=Weather, seed=3)
    assert not route.called


class Recorder:
    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        name = self.names.pop(0)
        return httpx2.Response(200, headers=SSE, content=(DATA / f"{name}.sse").read_bytes())


async def test_through_the_callers_openai_client(mock: respx.MockRouter) -> None:
    handler = Recorder("json_output", "tool_calls")
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    sdk_client = openai.AsyncOpenAI(
        api_key="sk-user", base_url="http://oai.test/v1", http_client=http
    )
    c = Client.from_openai(sdk_client, model="gpt-4o", api="responses", server="openai")
    async with c.stream(messages=MESSAGES, schema=Weather, max_tokens=100) as s:
        assert (await s.result()).conditions == "partly cloudy"
    tools = {"get_weather": GetWeather, "get_stock_price": GetStockPrice}
    async with c.stream(messages=MESSAGES, tools=tools) as s:
        assert [type(v) for v in await s.results()] == [GetWeather, GetStockPrice]
    sent = handler.requests[0]
    assert str(sent.url) == "http://oai.test/v1/responses"
    # The same JSON on the wire as the httpx backend sends.
    route = mock.post("/responses").mock(return_value=reply("json_output"))
    async with (
        client(server="openai") as direct,
        direct.stream(messages=MESSAGES, schema=Weather, max_tokens=100) as s,
    ):
        await s.result()
    assert json.loads(sent.content) == json.loads(route.calls.last.request.content)


def text_events(*pieces: str) -> httpx.Response:
    """A response whose output text is ``pieces`` (as llama.cpp's /responses streams it)."""
    events = [{"type": "response.output_text.delta", "delta": p} for p in pieces]
    events.append({"type": "response.completed", "response": {"status": "completed"}})
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    return httpx.Response(200, headers=SSE, content=body)


async def test_a_server_not_named_that_ignored_text_format_is_said_so(
    mock: respx.MockRouter,
) -> None:
    # Issue 20: llama.cpp's /responses ignores text.format; the model writes prose, and the
    # error was the parser's bare "found 'R'".
    mock.post("/responses").mock(return_value=text_events("\n", "Rome is", " sunny."))
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        with pytest.raises(
            OutputSyntaxError, match=r"ignored.*text\.format.*server='llamacpp'"
        ) as info:
            await s.result()
    assert info.value.offset == 1


async def test_a_server_not_named_that_writes_json_is_read_as_before(
    mock: respx.MockRouter,
) -> None:
    doc = {"city": "Rome", "temperature_c": 20, "conditions": "sunny"}
    mock.post("/responses").mock(
        return_value=text_events(" ", json.dumps(doc)[:9], json.dumps(doc)[9:])
    )
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        assert await s.result() == Weather(**doc)


async def test_llama_cpp_on_responses_is_sent_the_response_format_it_reads(
    mock: respx.MockRouter,
) -> None:
    doc = {"city": "Rome", "temperature_c": 20, "conditions": "sunny"}
    route = mock.post("/responses").mock(return_value=text_events(json.dumps(doc)))
    async with client(server="llamacpp") as c, c.stream(messages=MESSAGES, schema=Weather) as s:
        assert await s.result() == Weather(**doc)
    body = json.loads(route.calls.last.request.content)
    assert "text" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == [
        "city",
        "temperature_c",
        "conditions",
    ]


async def test_a_lenient_stream_skips_the_prose_itself(mock: respx.MockRouter) -> None:
    doc = {"city": "Rome", "temperature_c": 20, "conditions": "sunny"}
    mock.post("/responses").mock(return_value=text_events("Here it is: ", json.dumps(doc)))
    async with client() as c, c.stream(messages=MESSAGES, schema=Weather, lenient=True) as s:
        assert await s.result() == Weather(**doc)
