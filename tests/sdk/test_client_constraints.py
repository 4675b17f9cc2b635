"""Client.stream with constraints and several tools over Chat Completions, on the wire (respx):
what is sent to each server flavour, what comes back, and what is refused at the call."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from pydantic import BaseModel

from sdk import (
    Choice,
    Client,
    FieldEvent,
    Grammar,
    Regex,
    StructuralTag,
    Tag,
    TaggedText,
    TextDelta,
    Tool,
    UnsupportedConstraint,
)
from tests.sdk.http.openai.test_recorded import (  # the recorded stream's tools
    GetStockPrice,
    GetWeatherArgs,
)

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
SSE = {"content-type": "text/event-stream"}
MESSAGES = [{"role": "user", "content": "Classify: vLLM is wonderful!"}]
CORPUS = Path(__file__).resolve().parents[1] / "data" / "openai_sse"


def chunks(*pieces: str) -> httpx.Response:
    events = [
        {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces
    ]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": len(pieces)}})
    body = (
        b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    )
    return httpx.Response(200, headers=SSE, content=body)


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


async def test_a_choice_on_vllm(mock: respx.MockRouter) -> None:
    route = mock.post("/chat/completions").mock(return_value=chunks("pos", "itive"))
    async with (
        Client(base_url=BASE, server="vllm") as c,
        c.stream(messages=MESSAGES, schema=Choice(["positive", "negative"])) as s,
    ):
        events = [ev async for ev in s]
        assert await s.result() == "positive"
    assert [type(e) for e in events] == [TextDelta, TextDelta, FieldEvent]
    body = json.loads(route.calls.last.request.content)
    assert body["structured_outputs"] == {"choice": ["positive", "negative"]}
    assert "response_format" not in body


async def test_a_regex_on_llamacpp(mock: respx.MockRouter) -> None:
    route = mock.post("/chat/completions").mock(return_value=chunks("555", "-0123"))
    async with (
        Client(base_url=BASE, server="llamacpp") as c,
        c.stream(messages=MESSAGES, schema=Regex(r"\d{3}-\d{4}")) as s,
    ):
        assert await s.result() == "555-0123"
    assert json.loads(route.calls.last.request.content)["grammar"] == (
        "%llguidance {}\nstart: /[0-9]{3}-[0-9]{4}/\n"  # \\d spelled as ECMA-262 reads it
    )


class Weather(BaseModel):
    city: str


async def test_a_structural_tag_on_vllm(mock: respx.MockRouter) -> None:
    out = 'Checking. <function=get_weather>{"city": "Oslo"}</function>'
    route = mock.post("/chat/completions").mock(return_value=chunks(out[:15], out[15:40], out[40:]))
    tag = StructuralTag([Tag("<function=get_weather>", Weather, "</function>")], ["<function="])
    async with (
        Client(base_url=BASE, server="vllm") as c,
        c.stream(messages=MESSAGES, schema=tag) as s,
    ):
        result = await s.result()
    assert isinstance(result, TaggedText) and result.segments[0].value == Weather(city="Oslo")
    sent = json.loads(route.calls.last.request.content)["structured_outputs"]["structural_tag"]
    assert json.loads(sent)["triggers"] == ["<function="]


async def test_an_unnamed_server_refuses_a_constraint_unless_mode_none(
    mock: respx.MockRouter,
) -> None:
    route = mock.post("/chat/completions").mock(return_value=chunks("SELECT a"))
    grammar = Grammar('root ::= "SELECT " [a-z]')
    async with Client(base_url=BASE) as c:
        with pytest.raises(UnsupportedConstraint, match=re.escape("server='vllm' | 'llamacpp'")):
            c.stream(messages=MESSAGES, schema=grammar)
        assert not route.called
        async with c.stream(messages=MESSAGES, schema=grammar, mode="none") as s:
            assert await s.result() == "SELECT a"
    body = json.loads(route.calls.last.request.content)
    assert "grammar" not in body and "response_format" not in body


@pytest.mark.parametrize(
    ("schema", "tools", "mode", "error", "match"),
    [
        (Choice(["a"]), None, "tool", ValueError, "not as 'tool'"),
        (Regex("a"), None, "json_object", ValueError, "not as 'json_object'"),
        (None, {"f": Weather}, "json_schema", ValueError, "mode must be 'tool'"),
        (Weather, {"f": Weather}, None, TypeError, "not both"),
        (None, None, None, TypeError, "schema= is required"),
    ],
)
def test_mode_and_schema_mistakes_are_refused_at_the_call(
    schema: Any, tools: Any, mode: str | None, error: type[Exception], match: str
) -> None:
    c = Client(base_url=BASE, server="vllm")
    options: dict[str, Any] = {} if mode is None else {"mode": mode}
    with pytest.raises(error, match=match):
        c.stream(messages=MESSAGES, schema=schema, tools=tools, **options)


def test_unknown_api_or_server_are_refused() -> None:
    with pytest.raises(ValueError, match="api must be"):
        Client(base_url=BASE, api="completions")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="server must be one of"):
        Client(base_url=BASE, server="sglan")  # type: ignore[typeddict-item]


async def test_several_tools_over_chat_completions_with_a_recorded_openai_stream(
    mock: respx.MockRouter,
) -> None:
    recorded = (CORPUS / "test_parse_multiple_pydantic_tools.sse").read_bytes()
    route = mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=recorded)
    )
    tools = [Tool("GetWeatherArgs", GetWeatherArgs), Tool("get_stock_price", GetStockPrice)]
    async with (
        Client(base_url=BASE, server="openai") as c,
        c.stream(messages=MESSAGES, tools=tools) as s,
    ):
        ids = {ev.tool_call_id async for ev in s if isinstance(ev, FieldEvent)}
        values = await s.results()
    assert values == [
        GetWeatherArgs(city="Edinburgh", country="GB", units="c"),
        GetStockPrice(ticker="AAPL", exchange="NASDAQ"),
    ]
    assert ids == {"call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"}
    body = json.loads(route.calls.last.request.content)
    assert body["tool_choice"] == "required" and len(body["tools"]) == 2
