"""Constraints through ``Client.local``-style streams on the real model: a Choice, a Regex and a
GBNF grammar stream their text and end in the result; a structural tag gives its segment's
field events and a ``TaggedText`` (on asyncio and trio)."""

from __future__ import annotations

import pytest
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
)
from sdk._constraints import TextConstraint
from sdk._local import LocalBackend

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


class Weather(BaseModel):
    city: str


CASES: list[tuple[TextConstraint, str]] = [
    (
        Choice(["positive", "negative", "neutral"]),
        "Is this review positive, negative or neutral? Review: 'I loved this film.'",
    ),
    (Regex(r"[0-9]{3}-[0-9]{4}"), "Give a phone number in the format 555-0123."),
    (
        Grammar('root ::= "SELECT " col " FROM users"\ncol ::= "name" | "email"'),
        "Write an SQL query that selects the name column of the users table.",
    ),
]


@pytest.mark.parametrize(("constraint", "prompt"), CASES, ids=lambda c: type(c).__name__)
async def test_a_text_constraint_streams_its_text(
    local_backend: LocalBackend, constraint: TextConstraint, prompt: str
) -> None:
    client = Client.from_backend(local_backend, max_retries=0)
    messages = [{"role": "user", "content": prompt}]
    async with client.stream(messages=messages, schema=constraint, max_tokens=16) as stream:
        events = [ev async for ev in stream]
        result = await stream.result()
    text = "".join(ev.text for ev in events if isinstance(ev, TextDelta))
    assert text == result
    (final,) = [ev for ev in events if isinstance(ev, FieldEvent)]
    assert final.value == result and final.path == ()
    if isinstance(constraint, Choice):
        assert result in constraint.choices
    elif isinstance(constraint, Regex):
        assert constraint.compiled.fullmatch(result)
    else:
        assert result == "SELECT name FROM users" or result == "SELECT email FROM users"


async def test_a_structural_tag_gives_segments(local_backend: LocalBackend) -> None:
    tag = StructuralTag(
        [Tag("<function=get_weather>", Weather, "</function>", name="weather")],
        ["<function="],
        at_least_one=True,
        stop_after_first=True,
    )
    client = Client.from_backend(local_backend, max_retries=0)
    prompt = (
        "What's the weather in Paris? Call the function as "
        '<function=get_weather>{"city": ...}</function>.'
    )
    messages = [{"role": "user", "content": prompt}]
    async with client.stream(messages=messages, schema=tag, max_tokens=40) as stream:
        events = [ev async for ev in stream]
        result = await stream.result()
    assert isinstance(result, TaggedText)
    (segment,) = result.segments
    assert isinstance(segment.value, Weather) and segment.tag == "weather"
    assert result.text[segment.start : segment.end] == result.text  # nothing but the segment
    city = [ev for ev in events if isinstance(ev, FieldEvent) and ev.path == ("city",)]
    assert [(ev.value, ev.segment, ev.tag) for ev in city] == [(segment.value.city, 0, "weather")]
