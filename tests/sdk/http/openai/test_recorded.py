"""Every recorded OpenAI stream in tests/data/openai_sse, replayed through Client (respx).

The streams were recorded by openai-python's tests from gpt-4o-2024-08-06; the schemas below are
the ones those tests sent. Each body is served byte for byte, whole and in small pieces.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
import respx
from pydantic import BaseModel

from sdk._backend import Usage
from sdk._client import Client
from sdk._errors import (
    BackendError,
    OutputSyntaxError,
    RefusedError,
    StreamUsageError,
    TruncatedError,
)
from sdk._events import FieldEvent
from sdk._retry import Retry

# The recorded usage chunks carry completion_tokens_details, kept as they came.
REASONED = {"reasoning_tokens": 0}

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).resolve().parents[3] / "data" / "openai_sse"
BASE = "http://llm.test/v1"
MESSAGES = [{"role": "user", "content": "What's the weather like in SF?"}]


class Location(BaseModel):
    city: str
    temperature: float
    units: Literal["c", "f"]


class GetWeatherArgs(BaseModel):
    city: str
    country: str
    units: Literal["c", "f"] = "c"


class GetStockPrice(BaseModel):
    ticker: str
    exchange: str


def body(name: str) -> bytes:
    return (CORPUS / f"{name}.sse").read_bytes()


def test_the_corpus_is_all_here() -> None:
    names = sorted(p.stem for p in CORPUS.glob("*.sse"))
    assert names == sorted(
        [
            "test_allows_non_strict_tools_but_no_parsing",
            "test_content_logprobs_events",
            "test_non_pydantic_response_format",
            "test_parse_max_tokens_reached",
            "test_parse_multiple_pydantic_tools",
            "test_parse_nothing",
            "test_parse_pydantic_model",
            "test_parse_pydantic_model_multiple_choices",
            "test_parse_pydantic_model_refusal",
            "test_parse_pydantic_tool",
            "test_parse_strict_tools",
            "test_refusal_logprobs_events",
        ]
    )


class Served:
    """Serves one corpus body per request, in pieces of ``split`` bytes (whole if None)."""

    def __init__(self, router: respx.MockRouter, name: str, split: int | None) -> None:
        raw = body(name)
        self.parts = (
            [raw] if split is None else [raw[i : i + split] for i in range(0, len(raw), split)]
        )
        self.route = router.post("/chat/completions").mock(side_effect=self._respond)

    def _respond(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=httpx.ByteStream(b"") if not self.parts else _Parts(self.parts),
        )

    def sent(self, i: int = -1) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.route.calls[i].request.content)
        return result


class _Parts(httpx.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for part in self._parts:
            yield part


@pytest.fixture(params=[None, 13], ids=["whole", "split13"])
def split(request: pytest.FixtureRequest) -> int | None:
    value: int | None = request.param
    return value


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as mock:
        yield mock


@pytest.fixture
def client() -> Client:
    return Client(base_url=BASE, api_key="sk-test", model="gpt-4o-2024-08-06")


async def test_structured_output(
    router: respx.MockRouter, client: Client, split: int | None
) -> None:
    served = Served(router, "test_parse_pydantic_model", split)
    async with client.stream(messages=MESSAGES, schema=Location) as s:
        events = [ev async for ev in s]
        result = await s.result()
    assert result == Location(city="San Francisco", temperature=61, units="f")
    assert [(ev.path, ev.value) for ev in events if isinstance(ev, FieldEvent)] == [
        (("city",), "San Francisco"),
        (("temperature",), 61),
        (("units",), "f"),
        ((), {"city": "San Francisco", "temperature": 61, "units": "f"}),
    ]
    assert s.usage == Usage(79, 14, completion_tokens_details=REASONED)  # the usage-only chunk
    fmt = served.sent()["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Location"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert fmt["json_schema"]["schema"]["required"] == ["city", "temperature", "units"]


async def test_several_choices_are_refused(
    router: respx.MockRouter, client: Client, split: int | None
) -> None:
    # The server sends three choices although one was asked for: a clear error, not retried.
    served = Served(router, "test_parse_pydantic_model_multiple_choices", split)
    with pytest.raises(BackendError, match="choice 1"):
        async with client.stream(
            messages=MESSAGES, schema=Location, retry=Retry(max_attempts=3)
        ) as s:
            await s.result()
    assert served.route.call_count == 1


async def test_asking_for_three_choices_is_refused_before_any_request(
    router: respx.MockRouter, client: Client
) -> None:
    served = Served(router, "test_parse_pydantic_model_multiple_choices", None)
    with pytest.raises(StreamUsageError, match="n=3"):
        client.stream(messages=MESSAGES, schema=Location, extra_body={"n": 3})
    assert not served.route.called


async def test_length_after_the_first_token(
    router: respx.MockRouter, client: Client, split: int | None
) -> None:
    Served(router, "test_parse_max_tokens_reached", split)
    with pytest.raises(TruncatedError) as info:
        async with client.stream(messages=MESSAGES, schema=Location, max_tokens=1) as s:
            await s.result()
    assert info.value.reason == "length"
    assert () in info.value.open_paths
    assert s.attempts[0].text == '{"'
    assert s.usage == Usage(79, 1, completion_tokens_details=REASONED)


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        ("test_parse_pydantic_model_refusal", "I'm sorry, I can't assist with that request."),
        ("test_refusal_logprobs_events", "I'm very sorry, but I can't assist with that."),
    ],
)
async def test_refusal(
    router: respx.MockRouter, client: Client, split: int | None, name: str, refusal: str
) -> None:
    served = Served(router, name, split)
    with pytest.raises(RefusedError) as info:
        async with client.stream(
            messages=MESSAGES, schema=Location, retry=Retry(max_attempts=2)
        ) as s:
            await s.result()
    assert info.value.refusal == refusal
    assert served.route.call_count == 1  # a refusal is not retried


@pytest.mark.parametrize("name", ["test_content_logprobs_events", "test_parse_nothing"])
async def test_prose_is_not_json(
    router: respx.MockRouter, client: Client, split: int | None, name: str
) -> None:
    # "Foo!" (with logprobs on every chunk) and a paragraph of prose: no JSON document.
    Served(router, name, split)
    with pytest.raises(OutputSyntaxError):
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()


async def test_json_object_mode(
    router: respx.MockRouter, client: Client, split: int | None
) -> None:
    served = Served(router, "test_non_pydantic_response_format", split)
    expected = {
        "location": "San Francisco, CA",
        "weather": {
            "temperature": "18°C",
            "condition": "Partly Cloudy",
            "humidity": "72%",
            "windSpeed": "15 km/h",
            "windDirection": "NW",
        },
    }
    async with client.stream(messages=MESSAGES, schema={"type": "object"}, mode="json_object") as s:
        paths = [ev.path async for ev in s if isinstance(ev, FieldEvent)]
        result = await s.result()
    assert {k: result[k] for k in expected} == expected
    assert [day["day"] for day in result["forecast"]] == ["Monday", "Tuesday", "Wednesday"]
    assert ("forecast", 2, "condition") in paths
    # OpenAI's own form: it refuses a schema beside json_object (unknown_parameter).
    assert served.sent()["response_format"] == {"type": "json_object"}
    assert s.usage == Usage(19, 177, completion_tokens_details=REASONED)


async def test_tool_call(router: respx.MockRouter, client: Client, split: int | None) -> None:
    served = Served(router, "test_parse_pydantic_tool", split)
    async with client.stream(messages=MESSAGES, schema=GetWeatherArgs, mode="tool") as s:
        fields = [(ev.path, ev.value) async for ev in s if isinstance(ev, FieldEvent)]
        result = await s.result()
    assert result == GetWeatherArgs(city="Edinburgh", country="UK", units="c")
    assert fields[0] == (("city",), "Edinburgh")
    assert s.attempts[0].tool_calls[0].name == "GetWeatherArgs"
    sent = served.sent()
    assert sent["tools"][0]["function"]["name"] == "GetWeatherArgs"
    assert sent["tools"][0]["function"]["strict"] is True
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "GetWeatherArgs"}}
    assert s.usage == Usage(76, 24, completion_tokens_details=REASONED)


STRICT_WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "state": {"type": "string"}},
    "required": ["city", "state"],
    "additionalProperties": False,
}


async def test_strict_tool_call(
    router: respx.MockRouter, client: Client, split: int | None
) -> None:
    served = Served(router, "test_parse_strict_tools", split)
    async with client.stream(
        messages=MESSAGES, schema=STRICT_WEATHER, mode="tool", schema_name="get_weather"
    ) as s:
        assert await s.result() == {"city": "San Francisco", "state": "CA"}
    assert served.sent()["tools"][0]["function"]["parameters"] == STRICT_WEATHER


async def test_non_strict_tool_call(router: respx.MockRouter, split: int | None) -> None:
    served = Served(router, "test_allows_non_strict_tools_but_no_parsing", split)
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    client = Client(base_url=BASE, model="gpt-4o", strict=False)
    async with client.stream(
        messages=MESSAGES, schema=schema, mode="tool", schema_name="get_weather"
    ) as s:
        assert await s.result() == {"city": "New York City"}
    function = served.sent()["tools"][0]["function"]
    assert function["strict"] is False
    assert function["parameters"] == schema
    assert s.usage == Usage(44, 16, completion_tokens_details=REASONED)


async def test_parallel_tool_calls(
    router: respx.MockRouter, client: Client, split: int | None
) -> None:
    Served(router, "test_parse_multiple_pydantic_tools", split)
    async with client.stream(
        messages=MESSAGES, schema=GetWeatherArgs | GetStockPrice, mode="tool"
    ) as s:
        fields = [ev async for ev in s if isinstance(ev, FieldEvent)]
        results = await s.results()
    assert results == [
        GetWeatherArgs(city="Edinburgh", country="GB", units="c"),
        GetStockPrice(ticker="AAPL", exchange="NASDAQ"),
    ]
    assert [c.name for c in s.attempts[0].tool_calls] == ["GetWeatherArgs", "get_stock_price"]
    assert ("ticker",) in [ev.path for ev in fields]
    assert s.usage == Usage(149, 60, completion_tokens_details=REASONED)
