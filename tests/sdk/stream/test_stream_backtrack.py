"""Retry(backtrack=True) over a generation that can rewind: the attempt goes back to where the
offending value began and goes on; what came before stays and is not dispatched again. A
source that cannot rewind, or a rewind that fails, falls back to a fresh attempt."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio.lowlevel
import pydantic
import pytest

from sdk import (
    AttemptFailed,
    AttemptStarted,
    Backtracked,
    Client,
    FieldEvent,
    Retry,
    SchemaViolation,
    SyncClient,
    format_sse,
    sse_events,
)
from sdk._backend import Delta, GenerationRequest, Rewindable, Rewound, Usage
from sdk._errors import BackendError, RetriesExhausted
from sdk._records import Attempt
from sdk._structured import stream_structured

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["name", "tags"],
}


class Generation:
    """A rewindable generation: plays ``first``; each rewind plays the next of ``redo`` from
    the offset it was rewound to (ending on a token boundary 2 characters back at most). The
    finish delta reports the whole generation's usage: one token per delta, dropped ones
    included."""

    def __init__(self, first: str, redo: list[str], *, fail_rewind: bool = False) -> None:
        self.text = ""
        self.todo = _pieces(first)
        self.redo = list(redo)
        self.fail_rewind = fail_rewind
        self.decoded = 0
        self.rewinds: list[int] = []
        self.closed = False
        self.finished = False

    def __aiter__(self) -> Generation:
        return self

    async def __anext__(self) -> Delta:
        await anyio.lowlevel.checkpoint()
        if self.closed or self.finished:
            raise StopAsyncIteration
        if not self.todo:
            self.finished = True
            return Delta(finish_reason="stop", usage=Usage(7, self.decoded))
        piece = self.todo.pop(0)
        self.text += piece
        self.decoded += 1
        return Delta(piece, tokens=1)

    async def rewind(self, offset: int, *, ban: bool = True) -> Rewound:
        if self.fail_rewind or not self.redo:
            raise BackendError("no continuation left")
        self.rewinds.append(offset)
        self.text = self.text[:offset]
        self.todo = _pieces(self.redo.pop(0))
        self.finished = False
        return Rewound(offset, offset, 0, "x")

    async def aclose(self) -> None:
        self.closed = True


def _pieces(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def test_the_fake_is_rewindable() -> None:
    assert isinstance(Generation("", []), Rewindable)


DUP = '{"name": "Ada", "tags": ["red", "red"'
FIX = ', "blue"]}'  # written after the rewind to where the repeated "red" began


async def test_a_violation_rewinds_and_the_attempt_goes_on() -> None:
    gen = Generation(DUP + ', "x"]}', [FIX[2:]])
    calls: list[Attempt] = []

    def source(attempt: Attempt) -> AsyncIterator[Delta]:
        calls.append(attempt)
        return gen

    fired: list[tuple[str, Any]] = []
    async with stream_structured(
        source,
        schema=SCHEMA,
        retry=Retry(max_attempts=3, backtrack=True),
        progress=True,
        on_field=lambda ev: fired.append((ev.pointer, ev.value)),
    ) as s:
        events = [ev async for ev in s]
        result = await s.result()
    assert result == {"name": "Ada", "tags": ["red", "blue"]}
    start = DUP.rindex('"red"')
    assert gen.rewinds == [start]
    assert len(calls) == 1  # the same generation went on: no new request
    assert [a.error is not None for a in s.attempts] == [True, False]
    assert isinstance(s.attempts[0].error, SchemaViolation)
    assert s.attempts[1].text == json.dumps(result)
    # The kept fields fired once; the new item and the containers after it, once.
    assert fired == [
        ("/name", "Ada"),
        ("/tags/0", "red"),
        ("/tags/1", "blue"),
        ("/tags", ["red", "blue"]),
        ("", result),
    ]
    kinds = [type(ev).__name__ for ev in events if not isinstance(ev, FieldEvent)]
    assert kinds[:4] == ["AttemptStarted", "AttemptFailed", "Backtracked", "AttemptStarted"]
    failed = next(ev for ev in events if isinstance(ev, AttemptFailed))
    assert failed.retrying and failed.attempt == 1
    assert [ev.attempt for ev in events if isinstance(ev, AttemptStarted)] == [1, 2]


async def test_usage_is_split_between_the_attempts_of_one_generation() -> None:
    gen = Generation(DUP + ', "x"]}', [FIX[2:]])
    async with stream_structured(
        lambda attempt: gen, schema=SCHEMA, retry=Retry(backtrack=True)
    ) as s:
        await s.result()
    first, second = (a.usage for a in s.attempts)
    assert first.completion_tokens + second.completion_tokens == gen.decoded
    assert s.usage == Usage(7, gen.decoded)
    assert not s.usage.estimated


async def test_rewinds_count_against_max_attempts() -> None:
    gen = Generation(DUP + "]}", ['"red"]}', '"red"]}'])
    async with stream_structured(
        lambda attempt: gen, schema=SCHEMA, retry=Retry(max_attempts=3, backtrack=True)
    ) as s:
        with pytest.raises(RetriesExhausted) as info:
            await s.result()
    assert len(info.value.errors) == 3
    assert len(gen.rewinds) == 2


async def test_a_failed_rewind_falls_back_to_a_fresh_attempt_with_feedback() -> None:
    made: list[Generation] = []

    def source(attempt: Attempt) -> Generation:
        gen = Generation(
            DUP + "]}" if not made else '{"name": "Ada", "tags": ["red"]}', [], fail_rewind=True
        )
        made.append(gen)
        return gen

    async with stream_structured(source, schema=SCHEMA, retry=Retry(backtrack=True)) as s:
        assert await s.result() == {"name": "Ada", "tags": ["red"]}
    assert len(made) == 2 and made[0].closed


async def test_a_source_that_cannot_rewind_gets_a_fresh_attempt() -> None:
    texts = [DUP + "]}", '{"name": "Ada", "tags": ["red"]}']

    async def source(attempt: Attempt) -> AsyncIterator[str]:
        yield texts[attempt.number - 1]

    async with stream_structured(source, schema=SCHEMA, retry=Retry(backtrack=True)) as s:
        assert await s.result() == {"name": "Ada", "tags": ["red"]}
    assert "uniqueItems" in s.attempts[1 - 1].error.keyword  # type: ignore[union-attr]


class _Item(pydantic.BaseModel):
    a: int
    tag: str

    @pydantic.field_validator("tag")
    @classmethod
    def _lower(cls, v: str) -> str:
        if v != v.lower():
            raise ValueError("a tag is lower case")
        return v

    @pydantic.model_validator(mode="after")
    def _positive(self) -> _Item:
        if self.a < 0:
            raise ValueError("a >= 0")
        return self


class _Items(pydantic.BaseModel):
    items: list[_Item]


async def test_a_held_event_in_the_kept_text_goes_out_once_after_the_rewind() -> None:
    # /items/0/a is held (its _Item has a model validator) when the tag is refused; the rewind
    # keeps it, and it goes out once its _Item passes in the next attempt.
    first = '{"items": [{"a": 1, "tag": "ABC"}]}'
    gen = Generation(first, ['"abc"}]}'])
    fired: list[tuple[str, Any, int]] = []
    async with stream_structured(
        lambda attempt: gen,
        schema=_Items,
        retry=Retry(max_attempts=3, backtrack=True),
        on_field=lambda ev: fired.append((ev.pointer, ev.value, ev.attempt)),
    ) as s:
        result = await s.result()
    assert gen.rewinds == [first.index('"ABC"')]
    assert result == _Items(items=[_Item(a=1, tag="abc")])
    assert fired == [
        ("/items/0/a", 1, 2),
        ("/items/0/tag", "abc", 2),
        ("/items/0", {"a": 1, "tag": "abc"}, 2),
        ("/items", [{"a": 1, "tag": "abc"}], 2),
        ("", {"items": [{"a": 1, "tag": "abc"}]}, 2),
    ]


async def test_a_rewind_is_told_by_one_backtracked_event() -> None:
    gen = Generation(DUP + ', "x"]}', [FIX[2:]])
    async with stream_structured(
        lambda attempt: gen, schema=SCHEMA, retry=Retry(backtrack=True), progress=True
    ) as s:
        events = [ev async for ev in s]
    start = DUP.rindex('"red"')
    (back,) = [ev for ev in events if isinstance(ev, Backtracked)]
    assert back.type == "backtracked"
    assert back.path == ("tags",) and back.pointer == "/tags"
    assert back.text == '"red"'  # the repeated item, as the model wrote it
    assert back.error is s.attempts[0].error and back.error.keyword == "uniqueItems"
    assert back.offset == start == gen.rewinds[0]  # the output was cut back to here
    assert back.attempt == 1
    # Right after the attempt's failure, right before the attempt that rewrites it.
    i = events.index(back)
    assert isinstance(events[i - 1], AttemptFailed) and events[i - 1].attempt == 1
    assert isinstance(events[i + 1], AttemptStarted) and events[i + 1].attempt == 2
    # The rejected value never had a field event; the array has one, with the new item.
    fields = [(ev.pointer, ev.value) for ev in events if isinstance(ev, FieldEvent)]
    assert ("/tags/1", "red") not in fields
    assert ("/tags", ["red", "blue"]) in fields
    assert [p for p, _ in fields].count("/tags") == 1


async def test_without_progress_no_backtracked_event_is_yielded() -> None:
    gen = Generation(DUP + ', "x"]}', [FIX[2:]])
    async with stream_structured(
        lambda attempt: gen, schema=SCHEMA, retry=Retry(backtrack=True)
    ) as s:
        events = [ev async for ev in s]
    assert gen.rewinds and all(isinstance(ev, FieldEvent) for ev in events)


async def test_a_rejected_number_is_its_digits() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "maximum": 9},
            "tags": SCHEMA["properties"]["tags"],
        },
    }
    first = '{"n": 42, "tags": []}'
    gen = Generation(first, ['7, "tags": []}'])
    async with stream_structured(
        lambda attempt: gen, schema=schema, retry=Retry(backtrack=True), progress=True
    ) as s:
        events = [ev async for ev in s]
    (back,) = [ev for ev in events if isinstance(ev, Backtracked)]
    assert back.text == "42" and back.path == ("n",) and back.offset == first.index("42")
    assert [ev.value for ev in events if isinstance(ev, FieldEvent) and ev.path == ("n",)] == [7]


class _Checked(pydantic.BaseModel):
    a: int
    tag: str

    @pydantic.model_validator(mode="after")
    def _positive(self) -> _Checked:
        if self.a < 0:
            raise ValueError("a >= 0")
        return self


class _CheckedItems(pydantic.BaseModel):
    items: list[_Checked]


async def test_a_rejected_object_and_its_members_never_had_field_events() -> None:
    # The item's model validator refuses it once it closed: the whole object is the rejected
    # value; its members (held for the validator) and the containers never went out with it.
    first = '{"items": [{"a": -1, "tag": "abc"}]}'
    gen = Generation(first, ['{"a": 1, "tag": "abc"}]}'])
    fired: list[tuple[str, Any]] = []
    async with stream_structured(
        lambda attempt: gen,
        schema=_CheckedItems,
        retry=Retry(backtrack=True),
        progress=True,
        on_field=lambda ev: fired.append((ev.pointer, ev.value)),
    ) as s:
        events = [ev async for ev in s]
    (back,) = [ev for ev in events if isinstance(ev, Backtracked)]
    assert back.offset == first.index("{", 1)
    assert back.text == '{"a": -1, "tag": "abc"}'
    assert back.path == ("items", 0)
    before = events[: events.index(back)]
    assert not [ev for ev in before if isinstance(ev, FieldEvent)]
    assert fired == [
        ("/items/0/a", 1),
        ("/items/0/tag", "abc"),
        ("/items/0", {"a": 1, "tag": "abc"}),
        ("/items", [{"a": 1, "tag": "abc"}]),
        ("", {"items": [{"a": 1, "tag": "abc"}]}),
    ]


async def test_under_eager_dispatch_a_member_refused_later_had_its_event() -> None:
    # The contrast the docs state: "eager" sends /items/0/a = -1 before the item's model
    # validator refuses the item; the repair then sends the new value, once.
    first = '{"items": [{"a": -1, "tag": "abc"}]}'
    gen = Generation(first, ['{"a": 1, "tag": "abc"}]}'])
    async with stream_structured(
        lambda attempt: gen,
        schema=_CheckedItems,
        retry=Retry(backtrack=True),
        progress=True,
        dispatch="eager",
    ) as s:
        events = [ev async for ev in s]
    (back,) = [ev for ev in events if isinstance(ev, Backtracked)]
    before = [
        (ev.pointer, ev.value) for ev in events[: events.index(back)] if isinstance(ev, FieldEvent)
    ]
    assert ("/items/0/a", -1) in before
    after = [
        (ev.pointer, ev.value) for ev in events[events.index(back) :] if isinstance(ev, FieldEvent)
    ]
    assert after.count(("/items/0/a", 1)) == 1


class _Backend:
    """A backend whose one generation is ``gen`` (a client stream over it can rewind)."""

    def __init__(self, gen: Generation) -> None:
        self.gen = gen

    def generate(self, request: GenerationRequest) -> Generation:
        return self.gen

    async def aclose(self) -> None:
        pass


async def test_sse_events_sends_the_backtrack_between_the_attempts() -> None:
    gen = Generation(DUP + ', "x"]}', [FIX[2:]])
    async with Client.from_backend(_Backend(gen)) as client:
        stream = client.stream(
            messages=[{"role": "user", "content": "tags"}],
            schema=SCHEMA,
            retry=Retry(backtrack=True),
            progress=True,
        )
        frames = [frame async for frame in sse_events(stream)]
    names = [frame.split("\n", 1)[0].removeprefix("event: ") for frame in frames]
    assert names[names.index("attempt_failed") :][:3] == [
        "attempt_failed",
        "backtracked",
        "attempt",
    ]
    (frame,) = [f for f in frames if f.startswith("event: backtracked")]
    data = json.loads(frame.split("\n")[1].removeprefix("data: "))
    error = stream.attempts[0].error
    assert isinstance(error, SchemaViolation)
    assert data == {
        "path": ["tags"],
        "pointer": "/tags",
        "text": '"red"',
        "offset": DUP.rindex('"red"'),
        "attempt": 1,
        "error": {
            "type": "SchemaViolation",
            "message": error.message,
            "pointer": "/tags",
            "keyword": "uniqueItems",
            "offset": error.offset,
        },
    }
    # The frame is format_sse's, as for every event.
    assert frame == format_sse(Backtracked(("tags",), '"red"', error, DUP.rindex('"red"'), 1))


def test_the_sync_client_yields_the_backtracked_event() -> None:
    gen = Generation(DUP + ', "x"]}', [FIX[2:]])
    with SyncClient.from_backend(_Backend(gen)) as client:
        with client.stream(
            messages=[{"role": "user", "content": "tags"}],
            schema=SCHEMA,
            retry=Retry(backtrack=True),
            progress=True,
        ) as s:
            events = list(s)
            result = s.result()
    assert result == {"name": "Ada", "tags": ["red", "blue"]}
    (back,) = [ev for ev in events if isinstance(ev, Backtracked)]
    assert back.text == '"red"' and back.attempt == 1 and back.offset == gen.rewinds[0]
