"""on_field callbacks: patterns, sync and async, bounded concurrency, error policies."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from sdk._errors import CallbackError, SchemaViolation
from sdk._events import FieldEvent
from sdk._stream._dispatch import Dispatcher, idempotency_key
from sdk._structured import stream_structured
from tests.sdk.stream._stream_support import HANG, PERSON, Scripted, chunks

pytestmark = pytest.mark.anyio

DOC = {"name": "Ada", "role": "user", "tags": ["a", "b", "c", "d", "e"]}
TEXT = json.dumps(DOC)


def test_idempotency_key_is_canonical() -> None:
    a = idempotency_key(None, ("x",), {"b": 1, "a": [1, {"d": 2, "c": 3}]})
    b = idempotency_key(None, ("x",), {"a": [1, {"c": 3, "d": 2}], "b": 1})
    assert a == b
    assert idempotency_key(None, ("x",), 1) != idempotency_key(None, ("x",), "1")
    assert idempotency_key(None, ("x",), 1) != idempotency_key(0, ("x",), 1)
    assert idempotency_key(None, ("x",), 1) != idempotency_key(None, ("y",), 1)
    assert idempotency_key(None, ("x",), True) != idempotency_key(None, ("x",), 1)


def test_dispatcher_rejects_bad_on_field() -> None:
    with pytest.raises(TypeError):
        Dispatcher(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Dispatcher({"/a": "not callable"})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        Dispatcher({"a": print})


async def test_patterns_route_events() -> None:
    got: dict[str, list[Any]] = {"tag": [], "all": [], "name": []}
    on_field = {
        "/tags/*": lambda ev: got["tag"].append(ev.value),
        "/**": lambda ev: got["all"].append(ev.pointer),
        "/name": lambda ev: got["name"].append(ev.value),
    }
    async with stream_structured(Scripted(chunks(TEXT)), schema=PERSON, on_field=on_field) as s:
        await s.result()
    assert got["tag"] == ["a", "b", "c", "d", "e"]
    assert got["name"] == ["Ada"]
    assert got["all"][-1] == ""  # "/**" includes the root
    assert len(got["all"]) == 1 + 1 + 5 + 1 + 1


async def test_single_callable_gets_every_field() -> None:
    seen: list[str] = []
    async with stream_structured(
        Scripted([TEXT]), schema=PERSON, on_field=lambda ev: seen.append(ev.pointer)
    ) as s:
        await s.result()
    assert seen == ["/name", "/role", *[f"/tags/{i}" for i in range(5)], "/tags", ""]


async def test_keys_with_slash_and_tilde() -> None:
    schema = {"type": "object"}
    doc = {"a/b": 1, "c~d": {"e/~f": 2}}
    seen: list[tuple[str, Any]] = []

    def cb(ev: FieldEvent) -> None:
        seen.append((ev.pointer, ev.value))

    on_field = {"/a~1b": cb, "/c~0d/e~1~0f": cb}
    async with stream_structured(
        Scripted([json.dumps(doc)]), schema=schema, on_field=on_field
    ) as s:
        await s.result()
    assert seen == [("/a~1b", 1), ("/c~0d/e~1~0f", 2)]


async def test_sync_callback_runs_before_the_event_is_yielded() -> None:
    order: list[str] = []
    async with stream_structured(
        Scripted(chunks(TEXT)), schema=PERSON, on_field={"/name": lambda ev: order.append("cb")}
    ) as s:
        order.extend(["event" async for ev in s if ev.path == ("name",)])
    assert order == ["cb", "event"]


async def test_sync_callback_returning_an_awaitable_is_awaited() -> None:
    done: list[str] = []

    async def send(ev: FieldEvent) -> None:
        await anyio.lowlevel.checkpoint()
        done.append(ev.value)

    async with stream_structured(
        Scripted([TEXT]), schema=PERSON, on_field={"/name": lambda ev: send(ev)}
    ) as s:
        await s.result()
    assert done == ["Ada"]


async def test_async_callbacks_all_finish_before_the_result() -> None:
    done: list[str] = []

    async def slow(ev: FieldEvent) -> None:
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        done.append(ev.value)

    class Handler:
        async def __call__(self, ev: FieldEvent) -> None:
            await anyio.lowlevel.checkpoint()
            done.append(ev.pointer)

    async with stream_structured(
        Scripted(chunks(TEXT)), schema=PERSON, on_field={"/tags/*": slow, "/name": Handler()}
    ) as s:
        assert await s.result() == DOC
        assert sorted(done) == sorted(["/name", "a", "b", "c", "d", "e"])


async def test_async_callbacks_are_bounded() -> None:
    running = 0
    peak = 0
    finished = 0
    gate = anyio.Event()

    async def cb(ev: FieldEvent) -> None:
        nonlocal running, peak, finished
        running += 1
        peak = max(peak, running)
        try:
            await gate.wait()
        finally:
            running -= 1
            finished += 1

    async with stream_structured(
        Scripted(chunks(TEXT, 2)), schema=PERSON, on_field={"/tags/*": cb}, max_concurrency=2
    ) as s:
        async for ev in s:
            if ev.path == ():
                # Every tag's callback has started; let the first two take their slots.
                for _ in range(100):
                    if running == 2:
                        break
                    await anyio.lowlevel.checkpoint()
                await anyio.wait_all_tasks_blocked()
                assert running == 2
                gate.set()
    assert peak == 2
    assert finished == 5


async def test_sync_callback_error_fails_the_stream_and_closes_the_source() -> None:
    def boom(ev: FieldEvent) -> None:
        raise ValueError("bad name")

    source = Scripted([*chunks(TEXT, 4)])
    async with stream_structured(source, schema=PERSON, on_field={"/name": boom}) as s:
        with pytest.raises(CallbackError) as info:
            async for _ in s:
                pass
    assert info.value.path == ("name",)
    assert info.value.pointer == "/name"
    assert isinstance(info.value.__cause__, ValueError)
    assert source.closed == [1]
    assert source.pulls[0] < len(chunks(TEXT, 4))


async def test_async_callback_error_interrupts_a_waiting_read() -> None:
    async def boom(ev: FieldEvent) -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("bad name")

    # After the name the source hangs: only the callback's failure can end the stream.
    source = Scripted(['{"name": "Ada", ', HANG])
    async with stream_structured(source, schema=PERSON, on_field={"/name": boom}) as s:
        with pytest.raises(CallbackError) as info:
            await s.result()
    assert isinstance(info.value.__cause__, ValueError)
    assert source.closed == [1]


async def test_async_callback_error_after_the_reader_left_is_raised_at_exit() -> None:
    async def boom(ev: FieldEvent) -> None:
        raise ValueError("late")

    with pytest.raises(CallbackError):
        async with stream_structured(
            Scripted(chunks(TEXT)), schema=PERSON, on_field={"/name": boom}
        ) as s:
            async for _ in s:
                break
            await anyio.wait_all_tasks_blocked()  # the callback runs and fails


async def test_policy_ignore() -> None:
    def boom(ev: FieldEvent) -> None:
        raise ValueError("ignored")

    async def aboom(ev: FieldEvent) -> None:
        raise ValueError("ignored too")

    async with stream_structured(
        Scripted([TEXT]),
        schema=PERSON,
        on_field={"/name": boom, "/role": aboom},
        on_callback_error="ignore",
    ) as s:
        assert await s.result() == DOC


async def test_policy_log(caplog: pytest.LogCaptureFixture) -> None:
    def boom(ev: FieldEvent) -> None:
        raise ValueError("logged")

    with caplog.at_level(logging.ERROR, logger="sdk"):
        async with stream_structured(
            Scripted([TEXT]), schema=PERSON, on_field={"/name": boom}, on_callback_error="log"
        ) as s:
            assert await s.result() == DOC
    [record] = caplog.records
    assert "/name" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)


@pytest.mark.parametrize("policy", ["cancel", "wait"])
async def test_running_callbacks_on_failure(policy: str) -> None:
    outcome: list[str] = []
    started = anyio.Event()

    async def cb(ev: FieldEvent) -> None:
        started.set()
        try:
            if policy == "cancel":
                await anyio.sleep_forever()
            for _ in range(10):
                await anyio.lowlevel.checkpoint()
            outcome.append("finished")
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise

    # The name fires the callback; then the role breaks the schema.
    source = Scripted(['{"name": "Ada", ', started, '"role": "boss"}'])
    async with stream_structured(
        source,
        schema=PERSON,
        on_field={"/name": cb},
        pending_callbacks=policy,  # type: ignore[arg-type]
    ) as s:
        with pytest.raises(SchemaViolation):
            await s.result()
        assert outcome == ["cancelled" if policy == "cancel" else "finished"]


async def test_leaving_early_cancels_running_callbacks() -> None:
    outcome: list[str] = []

    async def cb(ev: FieldEvent) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            outcome.append("ended")

    source = Scripted(chunks(TEXT))
    async with stream_structured(source, schema=PERSON, on_field={"/name": cb}) as s:
        async for ev in s:
            if ev.path == ("name",):
                await anyio.wait_all_tasks_blocked()
                break
    assert outcome == ["ended"]
    assert source.closed == [1]


async def test_leaving_early_with_wait_policy_waits_for_callbacks() -> None:
    outcome: list[str] = []

    async def cb(ev: FieldEvent) -> None:
        for _ in range(10):
            await anyio.lowlevel.checkpoint()
        outcome.append("finished")

    async def source() -> AsyncIterator[str]:
        for piece in chunks(TEXT):
            yield piece

    async with stream_structured(
        source(), schema=PERSON, on_field={"/name": cb}, pending_callbacks="wait"
    ) as s:
        async for _ in s:
            break
    assert outcome == ["finished"]
