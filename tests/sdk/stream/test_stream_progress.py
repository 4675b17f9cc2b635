"""Progress events (opt-in), live usage, and the options checked at the call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import RetriesExhausted, SchemaViolation
from sdk._events import (
    AttemptFailed,
    AttemptStarted,
    FieldEvent,
    StreamEnded,
    StreamEvent,
    UsageReported,
)
from sdk._retry import Retry
from sdk._structured import stream_structured
from tests.sdk.stream._stream_support import PERSON, Scripted, chunks

pytestmark = pytest.mark.anyio

GOOD = {"name": "Ada", "role": "admin", "tags": ["x"]}
BAD = '{"name": "Ada", "role": "boss"}'


async def _no_sleep(seconds: float) -> None:
    pass


def kinds(events: list[StreamEvent]) -> list[str]:
    out = []
    for ev in events:
        if isinstance(ev, FieldEvent):
            out.append(f"field {ev.pointer or '/'}")
        else:
            out.append(type(ev).__name__)
    return out


async def test_progress_events_on_success() -> None:
    source = Scripted(
        [*chunks(json.dumps(GOOD), 8), Delta(finish_reason="stop", usage=Usage(10, 6))]
    )
    async with stream_structured(source, schema=PERSON, progress=True) as s:
        events = [ev async for ev in s]
    assert kinds(events) == [
        "AttemptStarted",
        "field /name",
        "field /role",
        "field /tags/0",
        "field /tags",
        "field /",
        "UsageReported",
        "StreamEnded",
    ]
    assert events[0] == AttemptStarted(1)
    assert events[6] == UsageReported(1, Usage(10, 6))
    assert events[-1] == StreamEnded(attempts=1, usage=Usage(10, 6))


async def test_progress_events_through_a_retry_and_an_aborted_attempts_usage() -> None:
    source = Scripted(chunks(BAD, 4), chunks(json.dumps(GOOD), 4))
    async with stream_structured(
        source, schema=PERSON, retry=Retry(sleep=_no_sleep), progress=True
    ) as s:
        events = [ev async for ev in s]
        assert await s.result() == GOOD
    failed = [ev for ev in events if isinstance(ev, AttemptFailed)]
    assert len(failed) == 1
    assert failed[0].attempt == 1 and failed[0].retrying
    assert isinstance(failed[0].error, SchemaViolation)
    # Aborted at "boss": never reported by the source, so counted (one token per delta).
    pulled = source.pulls[0]
    assert failed[0].usage == Usage(0, pulled, estimated=True)
    started = [ev.attempt for ev in events if isinstance(ev, AttemptStarted)]
    assert started == [1, 2]
    assert isinstance(events[-1], StreamEnded)
    assert events[-1].attempts == 2
    assert events[-1].usage.completion_tokens == pulled + source.pulls[1]


async def test_the_last_failure_is_yielded_before_the_error() -> None:
    source = Scripted(chunks(BAD, 4), chunks(BAD, 4))
    async with stream_structured(
        source, schema=PERSON, retry=Retry(max_attempts=2, sleep=_no_sleep), progress=True
    ) as s:
        events: list[StreamEvent] = []
        with pytest.raises(RetriesExhausted):
            async for ev in s:
                events.append(ev)  # noqa: PERF401 - the events before the error are the point
    failed = [ev for ev in events if isinstance(ev, AttemptFailed)]
    assert [(ev.attempt, ev.retrying) for ev in failed] == [(1, True), (2, False)]
    assert isinstance(events[-1], AttemptFailed)


async def test_without_progress_only_field_events() -> None:
    source = Scripted(chunks(BAD, 4), chunks(json.dumps(GOOD), 4))
    async with stream_structured(source, schema=PERSON, retry=Retry(sleep=_no_sleep)) as s:
        events = [ev async for ev in s]
    assert all(isinstance(ev, FieldEvent) for ev in events)


async def test_usage_is_live_while_the_attempt_streams() -> None:
    source = Scripted(chunks(json.dumps(GOOD), 4))
    seen: list[int] = []
    async with stream_structured(source, schema=PERSON) as s:
        async for _ in s:
            seen.append(s.usage.completion_tokens)  # noqa: PERF401 - read mid-stream
    assert seen == sorted(seen) and seen[0] > 0
    assert s.usage == Usage(0, source.pulls[0], estimated=True)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"on_feild": print}, TypeError, "'on_feild'"),
        ({"progress": "yes"}, TypeError, "progress must be True or False"),
        ({"retry": 3}, TypeError, "retry must be a sdk.Retry"),
        ({"max_concurrency": 0}, ValueError, "max_concurrency"),
        ({"pending_callbacks": "later"}, ValueError, "pending_callbacks must be one of"),
        ({"max_tokens": 10}, TypeError, "'max_tokens'"),  # a request option: not here
    ],
)
async def test_bad_options_fail_at_the_call(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        stream_structured(Scripted([]), schema=PERSON, **options)


async def test_formats_are_annotations_unless_asserted() -> None:
    from sdk._errors import SchemaViolation

    schema = {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}
    doc = '{"d": "2024-13-01"}'
    async with stream_structured(Scripted([doc]), schema=schema) as s:
        assert await s.result() == {"d": "2024-13-01"}
    async with stream_structured(Scripted([doc]), schema=schema, formats="assert") as s:
        with pytest.raises(SchemaViolation) as info:
            await s.result()
    assert info.value.keyword == "format"


async def test_each_event_says_its_type_and_fields_gives_field_events_only() -> None:
    source = Scripted([BAD], [json.dumps(GOOD)])
    retry = Retry(max_attempts=2, sleep=_no_sleep)
    names = {
        FieldEvent: "field",
        AttemptStarted: "attempt_started",
        AttemptFailed: "attempt_failed",
        UsageReported: "usage_reported",
        StreamEnded: "stream_ended",
    }
    async with stream_structured(
        source, schema=PERSON, retry=retry, progress=True, deltas=True
    ) as s:
        seen = [ev async for ev in s]
    assert {ev.type for ev in seen} >= {"field", "attempt_started", "attempt_failed"}
    for ev in seen:
        assert ev.type == names.get(type(ev), ev.type)
        assert (ev.type == "text_delta") == (type(ev).__name__ == "TextDelta")
    source = Scripted([BAD], [json.dumps(GOOD)])
    async with stream_structured(
        source, schema=PERSON, retry=retry, progress=True, deltas=True
    ) as s:
        fields = [ev async for ev in s.fields()]
    assert fields and all(type(ev) is FieldEvent for ev in fields)
    assert [ev.pointer for ev in fields] == [
        ev.pointer for ev in seen if isinstance(ev, FieldEvent)
    ]
