"""What llama.cpp's server (xllamacpp, SmolLM2-135M) does with the bodies sent to
``server="llamacpp"``: ``tool_choice`` (a text answer under ``"auto"``; one forced call asked
for as the answer, whose grammar the server applies, and read back as the call; several tools
under ``"required"`` sent as tools, which this server does not constrain: a reply that calls no
tool refused at its first word), and the Responses API's schema as the ``response_format`` it
reads there. Greedy decoding, small ``max_tokens``."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

from sdk import (
    Client,
    FieldEvent,
    OutputSyntaxError,
    SchemaViolation,
    TextDelta,
    Tool,
    TruncatedError,
)
from tests.integration.llama_server import LlamaServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one event loop is enough against a real server: time is the budget


class Weather(BaseModel):
    city: str = Field(max_length=30)


class Person(BaseModel):
    name: str = Field(max_length=30)
    age: int = Field(ge=0, le=150)


WEATHER = [Tool("get_weather", Weather, description="The current weather in a city.")]
HELLO = [{"role": "user", "content": "Say hello to me in one short sentence."}]
OSLO = [{"role": "user", "content": "What is the weather in Oslo?"}]
ANN = [{"role": "user", "content": "Ann is a 34 year old engineer. Give her as JSON."}]


async def test_auto_lets_the_model_answer_in_text(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.base_url, server="llamacpp") as client:
        async with client.stream(
            messages=HELLO, tools=WEATHER, tool_choice="auto", max_tokens=30, temperature=0
        ) as s:
            events = [ev async for ev in s]
            answer = await s.result()
    assert not s.called_tools
    assert isinstance(answer, str) and answer.strip()
    assert all(isinstance(e, TextDelta) for e in events[:-1]) and len(events) > 2
    assert isinstance(events[-1], FieldEvent) and events[-1].value == answer


async def test_one_forced_call_is_the_answer_the_server_constrains(
    llama_server: LlamaServer,
) -> None:
    # This server applies no grammar for tool_choice (its streams are plain content even under
    # "required"): one forced call is asked for as the answer (response_format, which it does
    # constrain) and read back as the call.
    sent: list[dict[str, Any]] = []

    async def keep(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    http = httpx.AsyncClient(timeout=120, event_hooks={"request": [keep]})
    async with Client(base_url=llama_server.base_url, server="llamacpp", http_client=http) as c:
        async with c.stream(messages=OSLO, tools=WEATHER, max_tokens=40, temperature=0) as s:
            events = [ev async for ev in s.fields()]
            weather = await s.result()
    await http.aclose()
    assert isinstance(weather, Weather) and weather.city
    assert s.called_tools and {ev.tool_name for ev in events} == {"get_weather"}
    [call] = s.assistant_message()["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert Weather.model_validate_json(call["function"]["arguments"]) == weather
    assert "tools" not in sent[0] and sent[0]["response_format"]["type"] == "json_schema"


async def test_a_reply_that_calls_no_tool_fails_at_its_first_word(
    llama_server: LlamaServer,
) -> None:
    # Issue 20: under "required" among several tools (sent as tools: only one forced call can
    # be asked for as the answer), this server lets the model write prose; the reply that
    # called no tool was reported only after max_tokens (13.4 s). Now the first word is enough.
    sent: list[dict[str, Any]] = []

    async def keep(request: httpx.Request) -> None:
        sent.append(json.loads(request.content))

    tools = [*WEATHER, Tool("get_person", Person, description="A person's details.")]
    http = httpx.AsyncClient(timeout=120, event_hooks={"request": [keep]})
    async with Client(base_url=llama_server.base_url, server="llamacpp", http_client=http) as c:
        with pytest.raises(SchemaViolation, match="calls none of the tools") as info:
            async with c.stream(
                messages=OSLO, tools=tools, tool_choice="required", max_tokens=200, temperature=0
            ) as s:
                await s.result()
    await http.aclose()
    assert info.value.keyword == "tool_calls"
    assert sent[0]["tool_choice"] == "required"
    text = s.attempts[0].text
    assert text.strip() and len(text.split()) <= 2, text  # read up to the first word only


async def test_the_responses_api_with_server_llamacpp_needs_no_extra_body(
    llama_server: LlamaServer,
) -> None:
    async with Client(base_url=llama_server.base_url, api="responses", server="llamacpp") as c:
        async with c.stream(messages=ANN, schema=Person, max_tokens=60, temperature=0) as s:
            person = await s.result()
    assert isinstance(person, Person)


async def test_the_responses_api_on_a_server_not_named_says_the_format_was_ignored(
    llama_server: LlamaServer,
) -> None:
    prose = [{"role": "user", "content": "Tell me about Ann, a 34 year old engineer."}]
    async with Client(base_url=llama_server.base_url, api="responses", max_retries=0) as c:
        with pytest.raises(OutputSyntaxError, match="may have ignored"):
            async with c.stream(messages=prose, schema=Person, max_tokens=30, temperature=0) as s:
                await s.result()


@pytest.mark.parametrize("name", ["max_completion_tokens", "max_tokens"])
async def test_the_token_limit_is_read_under_either_name(
    llama_server: LlamaServer, name: str
) -> None:
    # docs/servers.md: llama.cpp's server reads max_completion_tokens and max_tokens alike, so
    # max_completion_tokens= works on it; the usage and the finish reason say it stopped there.
    async with Client(base_url=llama_server.base_url, server="llamacpp") as client:
        stream = client.stream(
            messages=ANN,
            schema=Person,
            temperature=0,
            **{name: 3},  # type: ignore[arg-type]
        )
        async with stream as s:
            with pytest.raises(TruncatedError) as info:
                await s.result()
    assert info.value.reason == "length"
    (record,) = s.attempts
    assert record.finish_reason == "length"
    assert record.usage.completion_tokens == 3 and not record.usage.estimated
    assert record.response_id is not None and record.response_id.startswith("chatcmpl-")
