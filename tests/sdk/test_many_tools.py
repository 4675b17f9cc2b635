"""Several tools: each call's arguments tracked against the tool the call names; events carry
the call's index, tool name and id; exactly-once dispatch keyed by the call and its tool.
Sans-I/O (the attempt state) and through a stream (asyncio and trio)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sdk import (
    Delta,
    FieldEvent,
    Retry,
    SchemaViolation,
    StreamUsageError,
    Tool,
    stream_structured,
)
from sdk._http.openai._chat_decoder import ToolIdDecoder
from sdk._stream._attempt import AttemptState
from sdk._trackers._target import compile_target
from tests.sdk.http.openai.test_recorded import (  # the recorded stream's tools
    GetStockPrice,
    GetWeatherArgs,
)
from tests.sdk.stream._stream_support import Scripted

CORPUS = Path(__file__).resolve().parents[1] / "data" / "openai_sse"


TOOLS = [Tool("GetWeatherArgs", GetWeatherArgs), Tool("get_stock_price", GetStockPrice)]


def recorded_deltas() -> list[Delta]:
    """The deltas of a stream OpenAI recorded (two parallel calls of two tools), as the
    Chat Completions backend decodes them."""
    decoder = ToolIdDecoder()
    out: list[Delta] = []
    text = (CORPUS / "test_parse_multiple_pydantic_tools.sse").read_text()
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            out.extend(decoder.feed_event("", block[len("data: ") :]))
    return out


def test_the_decoder_puts_each_calls_id_on_its_first_delta() -> None:
    firsts = [d for d in recorded_deltas() if d.tool_name is not None]
    assert [(d.tool_call, d.tool_name, d.tool_call_id) for d in firsts] == [
        (0, "GetWeatherArgs", "call_JMW1whyEaYG438VE1OIflxA2"),
        (1, "get_stock_price", "call_DNYTawLBoN8fj3KN6qU9N1Ou"),
    ]


def test_each_call_is_tracked_against_the_tool_it_names() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    events = [ev for d in recorded_deltas() for ev in state.feed(d)]
    events += state.finish()
    roots = [e for e in events if isinstance(e, FieldEvent) and e.path == ()]
    assert [(e.tool_call, e.tool_name, e.tool_call_id) for e in roots] == [
        (0, "GetWeatherArgs", "call_JMW1whyEaYG438VE1OIflxA2"),
        (1, "get_stock_price", "call_DNYTawLBoN8fj3KN6qU9N1Ou"),
    ]
    assert all(
        e.tool_name == ("GetWeatherArgs" if e.tool_call == 0 else "get_stock_price") for e in events
    )
    assert state.close() == [
        GetWeatherArgs(city="Edinburgh", country="GB", units="c"),
        GetStockPrice(ticker="AAPL", exchange="NASDAQ"),
    ]
    calls = state.record(None).tool_calls
    assert [(c.name, c.id) for c in calls] == [
        ("GetWeatherArgs", "call_JMW1whyEaYG438VE1OIflxA2"),
        ("get_stock_price", "call_DNYTawLBoN8fj3KN6qU9N1Ou"),
    ]


def test_a_call_breaks_its_own_tools_schema_not_another_ones() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    state.feed(Delta(text='{"ticker": "A", ', tool_call=0, tool_name="get_stock_price"))
    # "city" is no key of GetStockPrice: fine for the schema (extra keys allowed), but
    # "exchange" must be a string.
    with pytest.raises(SchemaViolation) as info:
        state.feed(Delta(text='"exchange": 3', tool_call=0))
    assert (info.value.path, info.value.keyword) == (("exchange",), "type")


def test_a_call_of_a_tool_not_offered_is_a_violation_at_its_first_delta() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    with pytest.raises(
        SchemaViolation, match="'delete_all', which is not one of the tools"
    ) as info:
        state.feed(Delta(text="{", tool_call=0, tool_name="delete_all"))
    assert info.value.keyword == "tools" and info.value.value == "delete_all"


@pytest.mark.parametrize(
    "choice", [None, "required", {"type": "function", "name": "get_stock_price"}]
)
def test_a_reply_that_calls_no_tool_where_one_is_required_fails_at_its_first_letter(
    choice: Any,
) -> None:
    # Issue 20: reported only after max_tokens (13.4 s on llama.cpp's server). A server that
    # forces the call streams nothing but the call: the first letter of text proves there is
    # none, whatever follows.
    state = AttemptState(1, compile_target(None, TOOLS, tool_choice=choice))
    assert state.feed(Delta(text="\n ")) == []  # whitespace proves nothing yet
    with pytest.raises(SchemaViolation, match=r"calls none of the tools.*'I'") as info:
        state.feed(Delta(text="I"))
    assert info.value.keyword == "tool_calls" and info.value.offset == 2


def test_a_reply_with_nothing_at_all_calls_no_tool() -> None:
    state = AttemptState(1, compile_target(None, TOOLS))
    state.feed(Delta(finish_reason="stop"))
    with pytest.raises(SchemaViolation, match=r"calls none of the tools"):
        state.finish()


def test_prose_before_the_calls_is_kept_but_not_parsed_under_auto() -> None:
    state = AttemptState(1, compile_target(None, TOOLS, tool_choice="auto"))
    state.feed(Delta(text="Let me look that up. "))
    state.feed(
        Delta(text='{"ticker": "X", "exchange": "Y"}', tool_call=0, tool_name="get_stock_price")
    )
    state.finish()
    assert state.close() == [GetStockPrice(ticker="X", exchange="Y")]
    assert state.record(None).text == "Let me look that up. "


def test_one_tool_calls_without_a_name_are_that_tools() -> None:
    state = AttemptState(1, compile_target(None, TOOLS[1:]))
    state.feed(Delta(text='{"ticker": "X", "exchange": "Y"}', tool_call=0))
    state.finish()
    assert state.close() == [GetStockPrice(ticker="X", exchange="Y")]


def test_tools_and_schema_together_are_refused() -> None:
    with pytest.raises(TypeError, match="schema= or tools=, not both"):
        compile_target(GetStockPrice, TOOLS)
    with pytest.raises(TypeError, match="schema= is required"):
        compile_target(None)


def call(index: int, name: str, args: dict[str, Any], call_id: str) -> list[Delta]:
    text = json.dumps(args)
    return [
        Delta(text=text[:5], tool_call=index, tool_name=name, tool_call_id=call_id),
        Delta(text=text[5:], tool_call=index),
    ]


@pytest.mark.anyio
async def test_results_give_each_calls_typed_value_and_result_needs_one_call() -> None:
    source = Scripted(
        [
            *call(0, "get_stock_price", {"ticker": "A", "exchange": "X"}, "c1"),
            *call(1, "GetWeatherArgs", {"city": "Oslo", "country": "NO"}, "c2"),
            Delta(finish_reason="tool_calls"),
        ]
    )
    async with stream_structured(source, tools=TOOLS) as s:
        events = [ev async for ev in s]
        with pytest.raises(StreamUsageError, match="2 tool calls"):
            await s.result()
        values = await s.results()
    assert values == [
        GetStockPrice(ticker="A", exchange="X"),
        GetWeatherArgs(city="Oslo", country="NO", units="c"),
    ]
    assert {
        (e.tool_call, e.tool_name, e.tool_call_id) for e in events if isinstance(e, FieldEvent)
    } == {
        (0, "get_stock_price", "c1"),
        (1, "GetWeatherArgs", "c2"),
    }


@pytest.mark.anyio
async def test_exactly_once_is_keyed_by_the_call_and_its_tool_across_retries() -> None:
    fired: list[tuple[int | None, str | None, Any]] = []
    good = {"ticker": "A", "exchange": "X"}
    source = Scripted(
        [  # attempt 1: a good call, then a call whose arguments break its schema
            *call(0, "get_stock_price", good, "a1"),
            *call(1, "GetWeatherArgs", {"city": 3}, "a2"),
        ],
        [  # attempt 2: the same good call (same index, tool, value: not fired again), and
            # the same value under another tool at index 1 (a different field: fired)
            *call(0, "get_stock_price", good, "b1"),
            *call(1, "get_stock_price", good, "b2"),
            Delta(finish_reason="tool_calls"),
        ],
    )
    async with stream_structured(
        source,
        tools=TOOLS,
        retry=Retry(max_attempts=2),
        on_field={"": lambda ev: fired.append((ev.tool_call, ev.tool_name, ev.value))},
    ) as s:
        values = await s.results()
    assert values == [GetStockPrice(**good), GetStockPrice(**good)]
    assert fired == [(0, "get_stock_price", good), (1, "get_stock_price", good)]
    assert [a.tool_calls[0].id for a in s.attempts] == ["a1", "b1"]


def test_lenient_keeps_prose_before_the_calls_where_one_is_forced() -> None:
    # A server that does not constrain may write prose before its calls: lenient reads past it.
    state = AttemptState(1, compile_target(None, TOOLS), lenient=True)
    assert state.feed(Delta(text="Let me look that up. ")) == []
    state.feed(
        Delta(text='{"ticker": "X", "exchange": "Y"}', tool_call=0, tool_name="get_stock_price")
    )
    state.finish()
    assert state.close() == [GetStockPrice(ticker="X", exchange="Y")]
    lone = AttemptState(1, compile_target(None, TOOLS), lenient=True)
    lone.feed(Delta(text="I'd rather not."))
    with pytest.raises(SchemaViolation, match=r"calls none of the tools.*I'd rather not"):
        lone.finish()
