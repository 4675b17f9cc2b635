"""Text constraints and structural tags through a stream (asyncio and trio): text deltas then one
final event, abort at the first impossible character, retry with feedback, exactly-once
dispatch inside tagged segments."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from sdk import (
    Choice,
    Delta,
    FieldEvent,
    Regex,
    RetriesExhausted,
    Retry,
    SchemaViolation,
    StructuralTag,
    Tag,
    TaggedText,
    TextDelta,
    TruncatedError,
    stream_structured,
)
from tests.sdk.stream._stream_support import Scripted

pytestmark = pytest.mark.anyio

SENTIMENT = Choice(["positive", "negative", "neutral"])


async def test_a_choice_streams_text_deltas_then_one_field_event() -> None:
    async with stream_structured(Scripted(["neg", "at", "ive"]), schema=SENTIMENT) as s:
        events = [ev async for ev in s]
        assert await s.result() == "negative"
    assert [type(e).__name__ for e in events] == ["TextDelta"] * 3 + ["FieldEvent"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "negative"
    assert events[-1] == FieldEvent((), "negative", 7)
    assert s.json_schema == {"type": "string", "enum": ["positive", "negative", "neutral"]}


async def test_a_choice_is_aborted_at_its_first_wrong_character_and_retried_with_feedback() -> None:
    source = Scripted(["neg", "x", "never read"], ["neutral"])
    async with stream_structured(source, schema=SENTIMENT, retry=Retry(max_attempts=2)) as s:
        assert await s.result() == "neutral"
    assert source.pulls == [2, 1]  # the third chunk of attempt 1 was never read
    first = s.attempts[0].error
    assert isinstance(first, SchemaViolation) and first.offset == 3 and first.value == "negx"
    feedback = source.attempts[1].feedback
    assert feedback[0] == {"role": "assistant", "content": "negx"}
    assert "'negx' is not the beginning of any choice" in feedback[1]["content"]


async def test_a_regex_that_cannot_match_fails_the_stream() -> None:
    async with stream_structured(Scripted(["555-", "12a4"]), schema=Regex(r"\d{3}-\d{4}")) as s:
        with pytest.raises(SchemaViolation, match="cannot begin a match") as info:
            await s.result()
    assert info.value.offset == 6


async def test_a_text_cut_short_by_the_token_limit_is_truncated_with_reason_length() -> None:
    source = Scripted([Delta(text="555-12"), Delta(finish_reason="length")])
    async with stream_structured(source, schema=Regex(r"\d{3}-\d{4}")) as s:
        with pytest.raises(TruncatedError) as info:
            await s.result()
    assert info.value.reason == "length"


class Weather(BaseModel):
    city: str
    days: int


TAG = StructuralTag([Tag("<w>", Weather, "</w>")])


async def test_a_structural_tag_stream_gives_free_text_segment_fields_and_a_tagged_text() -> None:
    output = 'Here: <w>{"city": "Oslo", "days": 2}</w> and <w>{"city": "Rome", "days": 1}</w>.'
    chunks = [output[i : i + 5] for i in range(0, len(output), 5)]
    async with stream_structured(Scripted(chunks), schema=TAG, deltas=True) as s:
        events = [ev async for ev in s]
        result = await s.result()
    assert isinstance(result, TaggedText)
    assert result.text == output and result.free_text == "Here:  and ."
    assert [seg.value for seg in result.segments] == [
        Weather(city="Oslo", days=2),
        Weather(city="Rome", days=1),
    ]
    free = "".join(e.text for e in events if isinstance(e, TextDelta) and e.segment is None)
    assert free == "Here:  and ."
    fields = [(e.segment, e.tag, e.pointer) for e in events if isinstance(e, FieldEvent)]
    assert fields == [
        (0, "Weather", "/city"),
        (0, "Weather", "/days"),
        (0, "Weather", ""),
        (1, "Weather", "/city"),
        (1, "Weather", "/days"),
        (1, "Weather", ""),
    ]


async def test_exactly_once_inside_segments_across_retries() -> None:
    fired: list[tuple[int | None, str, Any]] = []
    source = Scripted(
        ['<w>{"city": "Oslo", "days": 2}</w> <w>{"city": "Rome", "days": "x"'],
        ['<w>{"city": "Oslo", "days": 2}</w> <w>{"city": "Rome", "days": 3}</w>'],
    )
    async with stream_structured(
        source,
        schema=TAG,
        retry=Retry(max_attempts=2),
        on_field={"/*": lambda ev: fired.append((ev.segment, ev.pointer, ev.value))},
    ) as s:
        result = await s.result()
    assert [seg.value.days for seg in result.segments] == [2, 3]
    # Segment 0 is the same in both attempts: its fields fired once. Segment 1's city fired in
    # attempt 1 (it was final before "days" broke), and is the same value in attempt 2.
    assert fired == [(0, "/city", "Oslo"), (0, "/days", 2), (1, "/city", "Rome"), (1, "/days", 3)]
    error = s.attempts[0].error
    assert isinstance(error, SchemaViolation) and "in tagged segment 1 ('Weather')" in str(error)


async def test_a_begin_no_tag_has_is_retried_then_exhausts_the_retries() -> None:
    # With the trigger "<", any "<" must go on with a tag's begin: "<x" cannot.
    tag = StructuralTag(TAG.structures, triggers=["<"])
    source = Scripted(["free <", "x>"], ["<w", "!"])
    async with stream_structured(source, schema=tag, retry=Retry(max_attempts=2)) as s:
        with pytest.raises(RetriesExhausted) as info:
            await s.result()
    assert [type(e).__name__ for e in info.value.errors] == ["OutputSyntaxError"] * 2
    assert [getattr(e, "offset", None) for e in info.value.errors] == [6, 2]
