"""Closing the source: on cancellation, on leaving early, and at once on a violation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import anyio
import pytest

from sdk._errors import SchemaViolation, TransportError
from sdk._events import FieldEvent
from sdk._retry import Retry
from sdk._structured import stream_structured
from tests.sdk.stream._stream_support import HANG, PERSON, Scripted, chunks

pytestmark = pytest.mark.anyio

TEXT = json.dumps({"name": "Ada", "role": "user", "tags": []})


class CountingIterator:
    """An async iterator that is not a generator: counts reads and ``aclose()`` calls."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.reads = 0
        self.aclosed = 0

    def __aiter__(self) -> CountingIterator:
        return self

    async def __anext__(self) -> str:
        await anyio.lowlevel.checkpoint()
        if self.reads >= len(self.pieces):
            raise StopAsyncIteration
        self.reads += 1
        return self.pieces[self.reads - 1]

    async def aclose(self) -> None:
        self.aclosed += 1


async def test_cancelling_the_consumer_closes_the_source() -> None:
    source = Scripted(['{"name": "Ada", ', HANG])
    seen: list[str] = []
    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            async with stream_structured(source, schema=PERSON) as s:
                async for ev in s:
                    seen.append(ev.pointer)  # noqa: PERF401 - must record before the cancel

        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        assert source.closed == []  # still reading, blocked on the source
        tg.cancel_scope.cancel()
    assert seen == ["/name"]
    assert source.closed == [1]


async def test_cancelling_a_plain_generator_source_closes_it() -> None:
    closed: list[bool] = []

    async def gen() -> AsyncIterator[str]:
        try:
            yield '{"name": "Ada", '
            await anyio.sleep_forever()
            yield "never"
        finally:
            closed.append(True)

    with anyio.CancelScope() as scope:
        async with stream_structured(gen(), schema=PERSON) as s:
            async for ev in s:
                assert ev.path == ("name",)
                scope.cancel()
    assert scope.cancelled_caught
    assert closed == [True]


async def test_cancelling_while_blocked_in_the_body_closes_the_source() -> None:
    source = Scripted(chunks(TEXT))
    with anyio.CancelScope() as scope:
        async with stream_structured(source, schema=PERSON) as s:
            async for _ in s:
                scope.cancel()
                await anyio.sleep_forever()
    assert source.closed == [1]
    assert source.pulls[0] < len(chunks(TEXT))


async def test_cancelling_closes_an_async_iterator_with_aclose() -> None:
    it = CountingIterator(['{"name": "Ada", ', '"role": "user"}'])
    with anyio.CancelScope() as scope:
        async with stream_structured(it, schema=PERSON) as s:
            async for _ in s:
                scope.cancel()
                await anyio.lowlevel.checkpoint()
    assert it.aclosed >= 1


async def test_cancelling_cancels_running_callbacks() -> None:
    outcome: list[str] = []

    async def cb(ev: FieldEvent) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            outcome.append("ended")

    source = Scripted(['{"name": "Ada", ', HANG])
    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            async with stream_structured(
                source, schema=PERSON, on_field={"/name": cb}, pending_callbacks="wait"
            ) as s:
                await s.result()

        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert outcome == ["ended"]  # cancelled even under "wait": a timeout must end the stream
    assert source.closed == [1]


async def test_cancelling_during_backoff_starts_no_new_attempt() -> None:
    source = Scripted([TransportError("unavailable", status=503)], [TEXT])
    with anyio.CancelScope() as scope:
        async with stream_structured(
            source,
            schema=PERSON,
            retry=Retry(backoff=3600.0, max_delay=3600.0, jitter=0.0),
            max_retries=1,
        ) as s:
            async with anyio.create_task_group() as tg:
                tg.start_soon(s.result)
                await anyio.wait_all_tasks_blocked()  # sleeping before attempt 2
                scope.cancel()
    assert len(source.attempts) == 1
    assert source.closed == [1]


async def test_violation_closes_the_source_before_reading_more() -> None:
    pieces = ['{"name": "Ada", ', '"role": "boss"', ', "tags": []', "}"]
    it = CountingIterator(pieces)
    async with stream_structured(it, schema=PERSON) as s:
        with pytest.raises(SchemaViolation):
            async for _ in s:
                pass
        # Closed at once, inside the stream, not when the block is left.
        assert it.aclosed == 1
        assert it.reads == 2


async def test_leaving_the_block_early_closes_the_source() -> None:
    it = CountingIterator(chunks(TEXT))
    async with stream_structured(it, schema=PERSON) as s:
        async for _ in s:
            break
    assert it.aclosed == 1
    assert it.reads < len(chunks(TEXT))


async def test_an_exception_in_the_body_closes_the_source_and_propagates() -> None:
    source = Scripted(chunks(TEXT))
    with pytest.raises(KeyError):
        async with stream_structured(source, schema=PERSON) as s:
            async for _ in s:
                raise KeyError("user code")
    assert source.closed == [1]


async def test_a_source_that_fails_to_close_does_not_hide_the_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class BadClose(CountingIterator):
        async def aclose(self) -> None:
            raise OSError("socket already gone")

    it = BadClose(['{"name": "Ada", ', '"role": "boss"', "}"])
    async with stream_structured(it, schema=PERSON) as s:
        with pytest.raises(SchemaViolation):
            await s.result()
    assert "closing the stream's source failed" in caplog.text
