"""Several tools on the local engine, with the real model, through ``Client.stream(tools=...)``:
each call's arguments are tracked against its own tool's schema (events carry the call's index,
tool name and id; ``results()`` gives each call's typed value), one tool via ``tools=`` works,
jump-forward writes the same calls, and a call its own tool's model rejects fails the stream
(on asyncio and trio)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, field_validator

from sdk import Client, FieldEvent, SchemaViolation, Tool
from sdk._backend import Delta
from sdk._local import LocalBackend, LocalToolCalls
from tests.sdk.local._local_support import collect, constrained, drafts_expected

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


class Weather(BaseModel):
    city: str


class Search(BaseModel):
    query: str


class StrictSearch(BaseModel):
    query: str

    @field_validator("query")
    @classmethod
    def no_pastry(cls, value: str) -> str:
        if "croissant" in value.lower():
            raise ValueError("no pastry searches")
        return value


PROMPT = "Get the weather in Paris. Also search the web for 'croissant recipes'."
MESSAGES = [{"role": "user", "content": PROMPT}]
TOOLS = [
    Tool("get_weather", Weather, "Get the current weather in a city"),
    Tool("search", Search, "Search the web"),
]


async def test_two_tools_give_two_typed_calls(local_backend: LocalBackend) -> None:
    client = Client.from_backend(local_backend, max_retries=0)
    async with client.stream(messages=MESSAGES, tools=TOOLS, max_tokens=80) as stream:
        events = [ev async for ev in stream]
        results = await stream.results()
    assert [type(r) for r in results] == [Weather, Search]
    assert isinstance(results[0], Weather) and results[0].city == "Paris"
    # Each call's events say which call and which tool they belong to.
    fields = [ev for ev in events if isinstance(ev, FieldEvent)]
    parts = {(ev.tool_call, ev.tool_name) for ev in fields}
    assert parts == {(0, "get_weather"), (1, "search")}
    assert {ev.path for ev in fields if ev.tool_call == 1} == {("query",), ()}
    ids = {ev.tool_call: ev.tool_call_id for ev in fields}
    assert len(set(ids.values())) == 2 and all(i and i.startswith("call_") for i in ids.values())
    # The attempt's record has each call's raw arguments, nothing of the wrapping text.
    calls = stream.attempts[-1].tool_calls
    assert [(c.index, c.name, c.id) for c in calls] == [
        (0, "get_weather", ids[0]),
        (1, "search", ids[1]),
    ]
    assert [json.loads(c.arguments) for c in calls] == [r.model_dump() for r in results]
    assert stream.attempts[-1].text == ""


async def test_one_tool_through_tools(local_backend: LocalBackend) -> None:
    client = Client.from_backend(local_backend, max_retries=0)
    async with client.stream(
        messages=[{"role": "user", "content": "What's the weather in Oslo?"}],
        tools=TOOLS[:1],
        max_tokens=48,
    ) as stream:
        results = await stream.results()
    assert len(results) >= 1 and all(isinstance(r, Weather) for r in results)


async def test_a_call_is_checked_against_its_own_tool(local_backend: LocalBackend) -> None:
    client = Client.from_backend(local_backend, max_retries=0)
    tools = [TOOLS[0], Tool("search", StrictSearch, "Search the web")]
    fields: list[FieldEvent] = []  # filled as the events come, up to the failure
    # The field validator runs the moment `query` is final, before its event (dispatch
    # "validated"): the refusal is a SchemaViolation at the field, not at the call's end.
    with pytest.raises(SchemaViolation, match="no pastry") as caught:
        async with client.stream(messages=MESSAGES, tools=tools, max_tokens=80) as stream:
            async for ev in stream:
                if isinstance(ev, FieldEvent):
                    fields.append(ev)  # noqa: PERF401 (a comprehension would lose them)
    # The weather call passed its own schema and was handed over before the search failed.
    assert any(ev.tool_name == "get_weather" and ev.path == () for ev in fields)
    assert caught.value.path == ("query",) and caught.value.tool_name == "search"
    assert not any(ev.tool_name == "search" and ev.path == ("query",) for ev in fields)


@pytest.mark.usefixtures("crowd")
def test_jump_forward_writes_the_same_calls(
    local_backend: LocalBackend, plain_backend: LocalBackend
) -> None:
    request = constrained(PROMPT, tools=TOOLS, max_tokens=80)
    assert isinstance(local_backend.generate(request), LocalToolCalls)
    on, off = collect(local_backend, request), collect(plain_backend, request)
    assert calls_of(on) == calls_of(off)
    assert on[-1].finish_reason == off[-1].finish_reason == "tool_calls"
    assert on[-1].usage is not None and off[-1].usage is not None
    assert on[-1].usage.completion_tokens == off[-1].usage.completion_tokens
    assert (on[-1].usage.forced_tokens > 0) == drafts_expected(local_backend)
    assert off[-1].usage.forced_tokens == 0
    assert [name for name, _ in calls_of(on)] == ["get_weather", "search"]


def calls_of(deltas: list[Delta]) -> list[tuple[str | None, str]]:
    """Each call's tool name and arguments text (every delta with text belongs to a call)."""
    calls: dict[int, tuple[str | None, str]] = {}
    for d in deltas:
        if d.tool_name is not None:
            assert d.tool_call is not None and d.tool_call not in calls and not d.text
            calls[d.tool_call] = (d.tool_name, "")
        elif d.text:
            assert d.tool_call is not None
            name, text = calls[d.tool_call]
            calls[d.tool_call] = (name, text + d.text)
    return list(calls.values())
