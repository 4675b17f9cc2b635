"""The stream: events, result, snapshot, finish reasons, tool calls, usage, misuse."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest

from sdk._backend import Delta, Usage
from sdk._errors import (
    ContentFilteredError,
    OutputSyntaxError,
    RefusedError,
    SchemaViolation,
    StreamUsageError,
    TruncatedError,
)
from sdk._events import FieldEvent, TextDelta
from sdk._retry import Retry
from sdk._stream._stream import Stream
from sdk._structured import stream_structured
from tests.sdk.stream._stream_support import HANG, PERSON, Scripted, chunks

pytestmark = pytest.mark.anyio

DOC = {"name": "Ada", "role": "admin", "tags": ["x", "y"]}
TEXT = json.dumps(DOC)


async def text_source(*pieces: str) -> AsyncIterator[str]:
    for piece in pieces:
        yield piece


async def test_events_and_result_whole_and_char_by_char() -> None:
    for pieces in ([TEXT], list(TEXT), chunks(TEXT, 3)):
        async with stream_structured(text_source(*pieces), schema=PERSON) as s:
            events = [ev async for ev in s]
            assert await s.result() == DOC
        assert all(isinstance(ev, FieldEvent) for ev in events)
        seen = [(ev.pointer, ev.value, ev.attempt) for ev in events if isinstance(ev, FieldEvent)]
        assert seen == [
            ("/name", "Ada", 1),
            ("/role", "admin", 1),
            ("/tags/0", "x", 1),
            ("/tags/1", "y", 1),
            ("/tags", ["x", "y"], 1),
            ("", DOC, 1),
        ]
        assert [a.number for a in s.attempts] == [1]
        assert s.attempts[0].error is None
        assert s.attempts[0].text == TEXT


async def test_result_without_iterating_reads_everything_and_dispatches() -> None:
    fired: list[str] = []
    source = Scripted(chunks(TEXT))
    async with stream_structured(
        source, schema=PERSON, on_field={"/tags/*": lambda ev: fired.append(ev.value)}
    ) as s:
        assert await s.result() == DOC
        assert await s.result() == DOC  # again: the same value, nothing read
    assert fired == ["x", "y"]
    assert source.closed == [1]


async def test_snapshot_follows_the_output() -> None:
    async with stream_structured(
        text_source('{"name": "A', 'da", "ro', 'le": "user"}'), schema=PERSON
    ) as s:
        before = s.snapshot
        snapshots = [(ev.pointer, s.snapshot) async for ev in s]
        assert before is None
        assert s.snapshot == {"name": "Ada", "role": "user"}
    assert snapshots[0] == ("/name", {"name": "Ada"})


async def test_deltas_yield_live_text_then_the_field() -> None:
    async with stream_structured(
        text_source('{"name": "A', 'da", "role": "user"}'), schema=PERSON, deltas=True
    ) as s:
        events = [ev async for ev in s]
    name_events = [ev for ev in events if ev.path == ("name",)]
    assert [type(ev) for ev in name_events] == [TextDelta, TextDelta, FieldEvent]
    texts = [ev.text for ev in name_events if isinstance(ev, TextDelta)]
    assert "".join(texts) == "Ada"


async def test_deltas_off_yields_only_field_events() -> None:
    async with stream_structured(text_source(TEXT), schema=PERSON) as s:
        events = [ev async for ev in s]
    assert len(events) == 6
    assert all(isinstance(ev, FieldEvent) for ev in events)


async def test_delta_objects_and_usage() -> None:
    async def deltas() -> AsyncIterator[Delta]:
        yield Delta(text=TEXT[:10])
        yield Delta(text=TEXT[10:], forced=True)
        yield Delta(finish_reason="stop")
        yield Delta(usage=Usage(prompt_tokens=12, completion_tokens=9))

    async with stream_structured(deltas(), schema=PERSON) as s:
        assert await s.result() == DOC
    assert s.usage == Usage(12, 9)
    assert s.attempts[0].usage == Usage(12, 9)


async def test_syntax_error_fails_the_stream() -> None:
    source = Scripted(['{"name": "Ada"', ", ]", '"role": "user"}'])
    async with stream_structured(source, schema=PERSON) as s:
        with pytest.raises(OutputSyntaxError):
            await s.result()
    assert source.pulls == [2]
    assert source.closed == [1]


async def test_schema_violation_fails_the_stream_without_retry() -> None:
    source = Scripted(['{"name": "Ada", "role": "boss"', ', "tags": []}'])
    async with stream_structured(source, schema=PERSON) as s:
        with pytest.raises(SchemaViolation) as info:
            async for _ in s:
                pass
        assert info.value.path == ("role",)
        assert s.error is info.value
        with pytest.raises(SchemaViolation):  # sticky
            await s.result()
    assert source.pulls == [1]


async def test_source_that_ends_early_is_truncated() -> None:
    async with stream_structured(text_source('{"name": "Ad'), schema=PERSON) as s:
        with pytest.raises(TruncatedError) as info:
            await s.result()
    assert info.value.reason == "eof"


async def test_empty_source_is_truncated() -> None:
    async with stream_structured(text_source(), schema=PERSON) as s:
        with pytest.raises(TruncatedError):
            await s.result()


async def test_finish_reason_length_is_truncation_with_snapshot_and_open_paths() -> None:
    async def deltas() -> AsyncIterator[Delta]:
        yield Delta(text='{"name": "Ad')
        yield Delta(finish_reason="length")
        yield Delta(usage=Usage(5, 7))  # usage after the finish reason still counts

    async with stream_structured(deltas(), schema=PERSON) as s:
        with pytest.raises(TruncatedError) as info:
            await s.result()
    assert info.value.reason == "length"
    assert info.value.snapshot == {"name": "Ad"}
    assert ("name",) in info.value.open_paths
    assert s.usage == Usage(5, 7)


async def test_finish_reason_length_with_a_complete_document_is_fine() -> None:
    async def deltas() -> AsyncIterator[Delta]:
        yield Delta(text=TEXT, finish_reason="length")

    async with stream_structured(deltas(), schema=PERSON) as s:
        assert await s.result() == DOC


async def test_refusal_is_not_retried() -> None:
    source = Scripted(
        [Delta(refusal="I can't"), Delta(refusal=" help with that."), Delta(finish_reason="stop")],
        [TEXT],
    )
    async with stream_structured(source, schema=PERSON, retry=Retry(max_attempts=3)) as s:
        with pytest.raises(RefusedError) as info:
            await s.result()
    assert info.value.refusal == "I can't help with that."
    assert len(source.attempts) == 1


async def test_content_filter_carries_the_snapshot() -> None:
    source = Scripted([Delta(text='{"name": "A'), Delta(finish_reason="content_filter")], [TEXT])
    async with stream_structured(source, schema=PERSON, retry=Retry()) as s:
        with pytest.raises(ContentFilteredError) as info:
            await s.result()
    assert info.value.snapshot == {"name": "A"}
    assert len(source.attempts) == 1


async def test_tool_calls_one_tracker_per_index() -> None:
    a = {"name": "Al", "role": "admin"}
    b = {"name": "Bo", "role": "user"}

    async def deltas() -> AsyncIterator[Delta]:
        yield Delta(text='{"name": ', tool_call=0, tool_name="person")
        yield Delta(text=json.dumps(b), tool_call=1, tool_name="person")
        yield Delta(text='"Al", "role": "admin"}', tool_call=0)
        yield Delta(finish_reason="tool_calls")

    async with stream_structured(deltas(), schema=PERSON) as s:
        events = [ev async for ev in s]
        assert await s.results() == [a, b]
        with pytest.raises(StreamUsageError, match="results"):
            await s.result()
        assert s.snapshot == [a, b]
    roots = [ev.value for ev in events if isinstance(ev, FieldEvent) and ev.path == ()]
    assert roots == [b, a]  # in the order they completed
    # each event says which call it belongs to
    calls = [(ev.tool_call, ev.path, ev.value) for ev in events if isinstance(ev, FieldEvent)]
    assert (1, ("name",), "Bo") in calls
    assert (0, ("name",), "Al") in calls
    assert {ev.tool_call for ev in events} == {0, 1}
    info = s.attempts[0]
    assert info.text == ""
    assert [(c.index, c.name, json.loads(c.arguments)) for c in info.tool_calls] == [
        (0, "person", a),
        (1, "person", b),
    ]


async def test_single_tool_call_result() -> None:
    async def deltas() -> AsyncIterator[Delta]:
        yield Delta(text=TEXT, tool_call=0, tool_name="person")

    async with stream_structured(deltas(), schema=PERSON) as s:
        assert await s.result() == DOC
        assert await s.results() == [DOC]


async def test_stream_exposes_the_schema() -> None:
    s = stream_structured(text_source(), schema=PERSON)
    assert s.json_schema["properties"]["role"] == {"enum": ["admin", "user"]}
    assert isinstance(s.schema_name, str)
    assert isinstance(s, Stream)


# -- misuse -----------------------------------------------------------------------------------


async def test_iterating_twice_is_misuse() -> None:
    async with stream_structured(text_source(TEXT), schema=PERSON) as s:
        async for _ in s:
            pass
        with pytest.raises(StreamUsageError, match="once"):
            async for _ in s:
                pass


async def test_iterating_after_result_is_misuse() -> None:
    async with stream_structured(text_source(TEXT), schema=PERSON) as s:
        await s.result()
        with pytest.raises(StreamUsageError):
            async for _ in s:
                pass


async def test_use_outside_async_with_is_misuse() -> None:
    s = stream_structured(text_source(TEXT), schema=PERSON)
    with pytest.raises(StreamUsageError, match="async with"):
        async for _ in s:
            pass
    with pytest.raises(StreamUsageError, match="async with"):
        await s.result()


async def test_result_after_leaving_an_unfinished_stream_is_misuse() -> None:
    source = Scripted(chunks(TEXT))
    async with stream_structured(source, schema=PERSON) as s:
        async for _ in s:
            break
    assert source.closed == [1]
    with pytest.raises(StreamUsageError, match="closed before it ended"):
        await s.result()


async def test_result_after_leaving_a_finished_stream_is_fine() -> None:
    async with stream_structured(text_source(TEXT), schema=PERSON) as s:
        await s.result()
    assert await s.result() == DOC


async def test_entering_twice_is_misuse() -> None:
    s = stream_structured(text_source(TEXT), schema=PERSON)
    async with s:
        with pytest.raises(StreamUsageError, match="once"):
            await s.__aenter__()


async def test_reading_from_two_tasks_at_once_is_misuse() -> None:
    source = Scripted(["{", HANG])
    errors: list[BaseException] = []
    async with stream_structured(source, schema=PERSON) as s:
        async with anyio.create_task_group() as tg:

            async def reader() -> None:
                await s.result()

            tg.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            try:
                await s.result()
            except StreamUsageError as exc:
                errors.append(exc)
            tg.cancel_scope.cancel()
    assert len(errors) == 1
    assert "another task" in str(errors[0])


def test_bad_arguments_fail_at_the_call() -> None:
    with pytest.raises(TypeError):
        stream_structured(42, schema=PERSON)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be retried"):
        stream_structured(text_source(TEXT), schema=PERSON, retry=Retry(max_attempts=2))
    with pytest.raises(ValueError):
        stream_structured(text_source(TEXT), schema=PERSON, on_field={"name": print})
    with pytest.raises(ValueError):
        stream_structured(text_source(TEXT), schema=PERSON, max_concurrency=0)
    with pytest.raises(ValueError):
        stream_structured(
            text_source(TEXT),
            schema=PERSON,
            pending_callbacks="later",  # type: ignore[arg-type]
        )
    with pytest.raises(ValueError):
        stream_structured(
            text_source(TEXT),
            schema=PERSON,
            on_callback_error="swallow",  # type: ignore[arg-type]
        )
    # One attempt needs no callable source.
    stream_structured(text_source(TEXT), schema=PERSON, retry=Retry(max_attempts=1))


async def test_a_root_number_is_final_at_the_end() -> None:
    async with stream_structured(text_source("4", "2"), schema={"type": "integer"}) as s:
        events = [(ev.path, ev.value) async for ev in s if isinstance(ev, FieldEvent)]
        assert await s.result() == 42
    assert events == [((), 42)]


async def test_a_pydantic_model_gives_an_instance() -> None:
    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        tags: list[str] = []

    async with stream_structured(text_source('{"name": "Ada", "tags": ["x"]}'), schema=Person) as s:
        names = [ev.value async for ev in s if isinstance(ev, FieldEvent) and ev.path == ("name",)]
        person = await s.result()
    assert names == ["Ada"]
    assert person == Person(name="Ada", tags=["x"])
    assert s.schema_name == "Person"
    assert s.snapshot == {"name": "Ada", "tags": ["x"]}


async def test_a_source_yielding_something_else_is_a_type_error() -> None:
    async def wrong() -> AsyncIterator[object]:
        yield b'{"name": "Ada"}'

    async with stream_structured(wrong(), schema=PERSON) as s:  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="str or Delta"):
            await s.result()
