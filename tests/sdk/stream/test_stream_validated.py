"""Validated, then dispatched, exactly once: a stream's field events (iterator and
``on_field`` alike) never carry a value pydantic refuses; a model validator's fields go out
once it passed; ``dispatch="eager"`` sends them as soon as they are final (the old way);
retries keep exactly-once for held events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk._errors import CallbackError, RetriesExhausted, SchemaViolation, ValidationFailed
from sdk._events import FieldEvent
from sdk._retry import Retry
from sdk._structured import stream_structured
from sdk._trackers._field import FieldTracker
from tests.sdk.stream._stream_support import Scripted, chunks
from tests.sdk.trackers.test_field_validators import TABLE, Modes, Outer, Range, Ranges, Tagged

pytestmark = pytest.mark.anyio


async def collect(
    source: Scripted, schema: Any, **options: Any
) -> tuple[list[tuple[str, Any, int]], list[tuple[str, Any, int]], BaseException | None]:
    """What ``on_field`` saw, what the iterator yielded (pointer, value, attempt), and the
    stream's error."""
    fired: list[tuple[str, Any, int]] = []
    yielded: list[tuple[str, Any, int]] = []
    error: BaseException | None = None
    async with stream_structured(
        source,
        schema=schema,
        on_field=lambda ev: fired.append((ev.pointer, ev.value, ev.attempt)),
        **options,
    ) as s:
        try:
            async for ev in s:
                assert isinstance(ev, FieldEvent)
                yielded.append((ev.pointer, ev.value, ev.attempt))
        except (SchemaViolation, RetriesExhausted) as exc:
            error = exc
    return fired, yielded, error


@pytest.mark.parametrize(("schema", "doc", "refused", "message"), TABLE)
async def test_no_callback_and_no_event_sees_a_refused_value(
    schema: Any, doc: str, refused: str, message: str
) -> None:
    fired, yielded, error = await collect(Scripted(chunks(doc, 3)), schema)
    assert isinstance(error, SchemaViolation) and message in str(error)
    assert fired == yielded
    assert refused not in [p for p, _, _ in fired]


@pytest.mark.parametrize(("schema", "doc", "refused", "message"), TABLE)
async def test_eager_dispatch_reproduces_the_old_behaviour(
    schema: Any, doc: str, refused: str, message: str
) -> None:
    # (One character a chunk: the events of the chunk that holds the error are not given.)
    fired, yielded, error = await collect(Scripted(chunks(doc, 1)), schema, dispatch="eager")
    assert isinstance(error, SchemaViolation) and message in str(error)
    assert fired == yielded
    assert refused in [p for p, _, _ in fired]


async def test_the_validated_value_rides_on_the_event() -> None:
    seen: list[tuple[str, Any, Any]] = []
    async with stream_structured(
        Scripted(chunks('{"before": " 7 ", "after": 4}')),
        schema=Modes,
        on_field={"/*": lambda ev: seen.append((ev.pointer, ev.value, ev.validated))},
    ) as s:
        result = await s.result()
    assert seen == [("/before", " 7 ", 7), ("/after", 4, 2)]
    assert (result.before, result.after) == (7, 2)


async def test_held_events_reach_callbacks_in_document_order() -> None:
    order: list[str] = []
    doc = '{"first": 1, "ranges": [{"lo": 1, "hi": 2}, {"lo": 3, "hi": 4}], "last": 9}'
    async with stream_structured(
        Scripted(chunks(doc, 2)), schema=Outer, on_field=lambda ev: order.append(ev.pointer)
    ) as s:
        await s.result()
    assert order == [
        "/first",
        "/ranges/0/lo",
        "/ranges/0/hi",
        "/ranges/0",
        "/ranges/1/lo",
        "/ranges/1/hi",
        "/ranges/1",
        "/ranges",
        "/last",
        "",
    ]


async def test_a_root_model_validator_holds_every_field_until_the_end() -> None:
    good = json.dumps({"lo": 1, "hi": 2})
    fired, yielded, error = await collect(Scripted(chunks(good)), Range)
    assert error is None
    assert fired == yielded == [("/lo", 1, 1), ("/hi", 2, 1), ("", {"lo": 1, "hi": 2}, 1)]
    fired, yielded, error = await collect(Scripted(chunks('{"lo": 3, "hi": 2}')), Range)
    assert isinstance(error, ValidationFailed) and "lo > hi" in str(error)
    assert fired == yielded == []


async def test_a_root_model_validator_failure_dispatches_nothing() -> None:
    fired: list[str] = []
    async with stream_structured(
        Scripted(chunks('{"lo": 3, "hi": 2}')),
        schema=Range,
        on_field=lambda ev: fired.append(ev.pointer),
    ) as s:
        with pytest.raises(ValidationFailed):
            await s.result()
    assert fired == []


async def test_a_held_event_of_a_failed_attempt_goes_out_once_in_the_retry() -> None:
    bad = '{"ranges": [{"lo": 5, "hi": 1}]}'  # lo = 5 held, then refused with its Range
    good = '{"ranges": [{"lo": 5, "hi": 9}]}'  # the same lo = 5, in a Range that passes
    source = Scripted(chunks(bad, 3), chunks(good, 3))
    fired, yielded, error = await collect(source, Ranges, retry=Retry(jitter=0.0))
    assert error is None
    assert (
        fired
        == yielded
        == [
            ("/ranges/0/lo", 5, 2),
            ("/ranges/0/hi", 9, 2),
            ("/ranges/0", {"lo": 5, "hi": 9}, 2),
            ("/ranges", [{"lo": 5, "hi": 9}], 2),
            ("", json.loads(good), 2),
        ]
    )


async def test_what_went_out_before_a_failure_is_not_dispatched_again() -> None:
    bad = '{"n": 1, "tag": "ABC"}'  # /n went out; the tag is refused
    good = '{"n": 1, "tag": "abc"}'
    source = Scripted(chunks(bad, 3), chunks(good, 3))
    fired, yielded, error = await collect(source, Tagged, retry=Retry(jitter=0.0))
    assert error is None
    assert fired == yielded == [("/n", 1, 1), ("/tag", "abc", 2), ("", {"n": 1, "tag": "abc"}, 2)]


async def test_a_refused_field_fails_the_stream_before_a_callback_raises() -> None:
    def refuse(ev: FieldEvent) -> None:
        raise RuntimeError("the callback must not see it")

    async with stream_structured(
        Scripted(chunks('{"tag": "ABC", "n": 1}')), schema=Tagged, on_field={"/tag": refuse}
    ) as s:
        with pytest.raises(SchemaViolation) as info:
            await s.result()
    assert not isinstance(info.value, CallbackError)


async def test_an_unknown_dispatch_mode_fails_at_the_call() -> None:
    with pytest.raises(ValueError, match="dispatch must be one of 'validated', 'eager'"):
        stream_structured(Scripted([]), schema=Tagged, dispatch="later")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="dispatch must be 'validated' or 'eager'"):
        FieldTracker(Tagged, dispatch="later")  # type: ignore[arg-type]
