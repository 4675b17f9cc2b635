"""Constraints and the Responses API against a real server: llama.cpp (xllamacpp) on
SmolLM2-135M, the server the suite starts.

Choice, Regex, Grammar (GBNF and Lark) and a structural tag are sent as llama.cpp reads them
(``grammar``: GBNF, or llguidance Lark behind ``%llguidance {}``); the server's grammar
constrains decoding and the client checks and tracks the text. The Responses API runs against
the server's ``/v1/responses``, which streams real Responses events but ignores
``text.format``: those tests give it llama.cpp's own ``json_schema`` in ``extra_body``.
Greedy decoding (temperature 0) and small ``max_tokens`` throughout.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

from sdk import (
    Choice,
    Client,
    FieldEvent,
    Grammar,
    Regex,
    SchemaViolation,
    StructuralTag,
    Tag,
    TaggedText,
    TextDelta,
    TruncatedError,
)
from sdk._constraints import Constraint
from tests.integration.llama_server import LlamaServer
from tests.integration.test_openai_server import _idle, _metrics

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one event loop is enough against a real server: time is the budget


class Weather(BaseModel):
    city: str = Field(max_length=20)


WEATHER = StructuralTag(
    [Tag("<function=get_weather>", Weather, "</function>")],
    triggers=["<function="],
    at_least_one=True,  # the output starts with a call: the tiny model cannot dodge it
    stop_after_first=True,
)
CASES: list[tuple[Constraint, str]] = [
    (Choice(["yes", "no"]), "Is the sky blue? Answer yes or no."),
    (Regex(r"[0-9]{3}-[0-9]{4}"), "Give me a phone number."),
    (Grammar('root ::= "SELECT " col " FROM users"\ncol ::= "name" | "email"'), "SQL for names"),
    (Grammar('start: "The answer is " NUM\nNUM: /[0-9]{1,3}/'), "What is 6 times 7?"),
    (WEATHER, "What is the weather in Paris? Call get_weather."),
]


def check(constraint: Constraint, result: Any, events: list[Any]) -> None:
    if isinstance(constraint, StructuralTag):
        assert isinstance(result, TaggedText)
        assert [s.tag for s in result.segments] == ["Weather"]
        assert isinstance(result.segments[0].value, Weather)
        assert result.text.startswith("<function=get_weather>")
        assert result.text.endswith("</function>")
        assert {e.segment for e in events if isinstance(e, FieldEvent)} == {0}
        return
    assert isinstance(result, str)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == result and events[-1] == FieldEvent((), result, len(result) - 1)
    if isinstance(constraint, Choice):
        assert result in constraint.choices
    elif isinstance(constraint, Regex):
        assert re.fullmatch(constraint.pattern, result)
    elif constraint.syntax == "lark":
        assert re.fullmatch(r"The answer is [0-9]{1,3}", result)
    else:
        assert result in ("SELECT name FROM users", "SELECT email FROM users")


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(("constraint", "prompt"), CASES, ids=lambda c: type(c).__name__)
async def test_each_constraint_on_llamacpp(
    llama_server: LlamaServer, api: Any, constraint: Constraint, prompt: str
) -> None:
    async with Client(base_url=llama_server.base_url, server="llamacpp", api=api) as client:
        async with client.stream(
            messages=[{"role": "user", "content": prompt}],
            schema=constraint,
            max_tokens=60,
            temperature=0,
        ) as s:
            events = [ev async for ev in s]
            result = await s.result()
    check(constraint, result, events)
    assert s.usage.prompt_tokens > 0 and not s.usage.estimated


class Person(BaseModel):
    name: str = Field(max_length=30)
    age: int = Field(ge=0, le=150)


PERSON = [{"role": "user", "content": "Ann is a 34 year old engineer. Give her as JSON."}]


async def test_the_responses_api_streams_a_document(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.base_url, api="responses") as client:
        async with client.stream(
            messages=PERSON,
            schema=Person,
            max_tokens=60,
            temperature=0,
            extra_body={"json_schema": Person.model_json_schema()},
        ) as s:
            fields = [ev.pointer async for ev in s if isinstance(ev, FieldEvent)]
            person = await s.result()
    assert isinstance(person, Person)
    assert fields == ["/name", "/age", ""]
    assert s.usage.prompt_tokens > 0 and s.usage.completion_tokens > 0


async def test_the_responses_api_cut_short_is_a_truncation(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.base_url, api="responses") as client:
        with pytest.raises(TruncatedError) as info:
            async with client.stream(
                messages=PERSON,
                schema=Person,
                max_tokens=5,
                temperature=0,
                extra_body={"json_schema": Person.model_json_schema()},
            ) as s:
                await s.result()
    # llama.cpp ends a response cut by max_output_tokens as "completed", not "incomplete":
    # the stream sees an unfinished document at the end of the body.
    assert info.value.reason == "eof"
    assert info.value.open_paths


FRUITS = [{"role": "user", "content": "List one hundred fruits."}]
LOOSE: dict[str, Any] = {
    "type": "object",
    "properties": {"fruits": {"type": "array", "items": {"type": "string"}}},
    "required": ["fruits"],
}
STRICT = {**LOOSE, "properties": {"fruits": {**LOOSE["properties"]["fruits"], "maxItems": 2}}}


async def test_an_abort_over_the_responses_api_stops_the_servers_decoding(
    llama_server: LlamaServer,
) -> None:
    options: dict[str, Any] = {
        "max_tokens": 200,
        "temperature": 0,
        "extra_body": {"json_schema": LOOSE},
        # The same conversation for both schemas: the server's grammar is LOOSE's, and the
        # client alone checks STRICT (shown STRICT, the model would list two fruits).
        "show_schema": False,
    }
    # Idle connections dropped before the server's 5 s keep-alive ends (as the backend's own
    # client does): the polls below reuse none the server is closing.
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(keepalive_expiry=2.0)) as http:
        async with Client(
            base_url=llama_server.base_url, http_client=http, api="responses"
        ) as client:
            await _idle(llama_server)
            before = await _metrics(llama_server)
            # Unchecked, the model lists fruits until max_tokens cuts it.
            with pytest.raises(TruncatedError):
                async with client.stream(messages=FRUITS, schema=LOOSE, **options) as s:
                    await s.result()
            listed = s.attempts[0].text
            await _idle(llama_server)
            middle = await _metrics(llama_server)
            with pytest.raises(SchemaViolation) as info:
                async with client.stream(messages=FRUITS, schema=STRICT, **options) as s:
                    await s.result()
            await _idle(llama_server)
            after = await _metrics(llama_server)
    assert listed.count(",") > 2 and info.value.keyword == "maxItems"
    whole = middle["tokens_predicted_total"] - before["tokens_predicted_total"]
    aborted = after["tokens_predicted_total"] - middle["tokens_predicted_total"]
    assert 0 < aborted < whole / 2, (aborted, whole)
