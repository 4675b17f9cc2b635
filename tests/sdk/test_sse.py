"""sdk.format_sse and sdk.sse_events: stream events as server-sent events for a browser."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from sdk import (
    AttemptFailed,
    AttemptStarted,
    FieldEvent,
    ReasoningDelta,
    Retry,
    SchemaViolation,
    StreamEnded,
    TextDelta,
    Usage,
    UsageReported,
    format_sse,
    sse_events,
    stream_structured,
)

pytestmark = pytest.mark.anyio


def parse(message: str) -> tuple[str, Any]:
    """One SSE message read back as a browser's EventSource reads it."""
    assert message.endswith("\n\n") and message.count("\n") == 3, repr(message)
    name, data = message[:-2].split("\n")
    assert name.startswith("event: ") and data.startswith("data: ")
    return name[len("event: ") :], json.loads(data[len("data: ") :])


def test_a_field_event_is_one_message_with_its_path_and_value() -> None:
    event = FieldEvent(("a/b", 0), {"x": "line\nbreak"}, offset=9, attempt=2)
    name, data = parse(format_sse(event))
    assert name == "field"
    assert data == {
        "path": ["a/b", 0],
        "pointer": "/a~1b/0",
        "value": {"x": "line\nbreak"},  # a newline in a value stays inside the one data line
        "attempt": 2,
        "forced": 0,
    }


def test_a_tool_calls_event_says_which_call() -> None:
    event = FieldEvent(("city",), "Oslo", offset=3, tool_call=1, tool_name="get_weather")
    _, data = parse(format_sse(event))
    assert data["tool_call"] == 1 and data["tool_name"] == "get_weather"
    assert "tool_call_id" not in data and "segment" not in data


def test_every_progress_event_has_its_name() -> None:
    usage = Usage(prompt_tokens=5, completion_tokens=7)
    error = SchemaViolation("not one of the choices", path=("mood",), keyword="enum", offset=4)
    events = {
        "text": TextDelta((), "neg"),
        "reasoning": ReasoningDelta("hmm"),
        "attempt": AttemptStarted(2),
        "attempt_failed": AttemptFailed(1, error, True, usage),
        "usage": UsageReported(1, usage),
        "end": StreamEnded(2, usage),
    }
    for expected, event in events.items():
        name, _ = parse(format_sse(event))
        assert name == expected
    _, failed = parse(format_sse(events["attempt_failed"]))
    assert failed["error"] == {
        "type": "SchemaViolation",
        "message": "not one of the choices",
        "pointer": "/mood",
        "keyword": "enum",
        "offset": 4,
    }
    assert failed["usage"]["completion_tokens"] == 7 and failed["retrying"] is True


def test_something_else_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="takes a stream event, not dict"):
        format_sse({"path": []})  # type: ignore[arg-type]


class Person(BaseModel):
    name: str
    mood: str


async def pieces(*chunks: str) -> AsyncIterator[str]:
    for chunk in chunks:
        yield chunk


async def test_sse_events_runs_the_stream_then_sends_the_result() -> None:
    stream = stream_structured(pieces('{"name": "Ada", ', '"mood": "calm"}'), schema=Person)
    messages = [parse(m) async for m in sse_events(stream)]
    assert [name for name, _ in messages] == ["field", "field", "field", "result"]
    assert [data.get("pointer") for _, data in messages[:3]] == ["/name", "/mood", ""]
    assert messages[-1][1] == {"name": "Ada", "mood": "calm"}  # the model, as JSON


async def test_a_failed_stream_ends_with_its_error_not_an_exception() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}}
    stream = stream_structured(pieces('{"n": 42}'), schema=schema, progress=True)
    messages = [parse(m) async for m in sse_events(stream)]
    names = [name for name, _ in messages]
    assert names == ["attempt", "attempt_failed", "failed"]
    assert messages[-1][1]["type"] == "SchemaViolation"
    assert messages[-1][1]["pointer"] == "/n" and messages[-1][1]["keyword"] == "maximum"


async def test_a_retry_shows_as_attempts() -> None:
    sources = iter([pieces('{"n": 42}'), pieces('{"n": 4}')])
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}}
    stream = stream_structured(
        lambda attempt: next(sources), schema=schema, retry=Retry(max_attempts=2), progress=True
    )
    names = [parse(m)[0] async for m in sse_events(stream)]
    assert names == ["attempt", "attempt_failed", "attempt", "field", "field", "end", "result"]


async def test_closing_the_iterator_early_closes_the_stream() -> None:
    closed: list[bool] = []

    async def endless() -> AsyncIterator[str]:
        try:
            yield '{"name": "Ada", '
            while True:
                yield " "
        finally:
            closed.append(True)

    messages = sse_events(stream_structured(endless(), schema=Person))
    name, _ = parse(await messages.__anext__())
    assert name == "field"
    await messages.aclose()  # a browser that went away: the response is cancelled
    assert closed == [True]
