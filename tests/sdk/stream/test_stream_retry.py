"""Retries: exactly-once dispatch across attempts, feedback, backoff, Retry-After, usage."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import (
    CallbackError,
    OutputSyntaxError,
    RetriesExhausted,
    SchemaViolation,
    TransportError,
    TruncatedError,
)
from sdk._events import FieldEvent
from sdk._feedback import default_feedback
from sdk._records import Attempt, AttemptInfo
from sdk._retry import Retry
from sdk._structured import stream_structured
from tests.sdk.stream._stream_support import PERSON, Scripted, chunks

pytestmark = pytest.mark.anyio

GOOD = {"name": "Ada", "role": "admin", "tags": ["x", "z"]}
# Attempt 1 breaks the enum at /role after name and tags are final.
BAD = '{"name": "Ada", "tags": ["x", "y"], "role": "boss"}'


class FakeSleep:
    """Records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def no_wait(**kwargs: float) -> Retry:
    return Retry(jitter=0.0, sleep=FakeSleep(), **kwargs)  # type: ignore[arg-type]


async def test_exactly_once_across_two_attempts() -> None:
    source = Scripted(chunks(BAD, 5), chunks(json.dumps(GOOD), 5))
    fired: list[tuple[str, object, int]] = []
    events: list[tuple[str, object, int]] = []
    async with stream_structured(
        source,
        schema=PERSON,
        retry=no_wait(),
        on_field=lambda ev: fired.append((ev.pointer, ev.value, ev.attempt)),
    ) as s:
        async for ev in s:
            assert isinstance(ev, FieldEvent)
            events.append((ev.pointer, ev.value, ev.attempt))
        assert await s.result() == GOOD
    assert (
        fired
        == events
        == [
            ("/name", "Ada", 1),
            ("/tags/0", "x", 1),
            ("/tags/1", "y", 1),
            ("/tags", ["x", "y"], 1),
            # attempt 2 repeats /name and /tags/0 with the same values: not fired again
            ("/role", "admin", 2),
            ("/tags/1", "z", 2),  # the value changed: fired, from attempt 2
            ("/tags", ["x", "z"], 2),
            ("", GOOD, 2),
        ]
    )
    assert [a.number for a in s.attempts] == [1, 2]
    assert isinstance(s.attempts[0].error, SchemaViolation)
    assert s.attempts[1].error is None
    assert source.closed == [1, 2]


async def test_same_value_with_other_key_order_is_the_same_field() -> None:
    first = '{"name": "Ada", "tags": [], "role": "boss"}'
    second = '{"tags": [], "role": "user", "name": "Ada"}'
    source = Scripted(list(first), [second])
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        seen = [(ev.pointer, ev.attempt) async for ev in s if isinstance(ev, FieldEvent)]
    assert seen == [("/name", 1), ("/tags", 1), ("/role", 2), ("", 2)]


async def test_violation_aborts_the_attempt_before_more_is_pulled() -> None:
    # The violating chunk is the 3rd; ten more follow that must never be read.
    attempt1 = ['{"name": "Ada", ', '"tags": [], ', '"role": "boss"', *[" "] * 10, "}"]
    source = Scripted(attempt1, [json.dumps(GOOD)])
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        assert await s.result() == GOOD
    assert source.pulls == [3, 1]
    # Attempt 1 was closed before attempt 2 started.
    assert source.closed == [1, 2]


async def test_feedback_tells_the_model_what_where_and_which_value() -> None:
    source = Scripted(chunks(BAD, 5), chunks(BAD, 5), [json.dumps(GOOD)])
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        await s.result()
    first, second, third = source.attempts
    assert first == Attempt(1)
    assert second.number == 2
    assert isinstance(second.previous_error, SchemaViolation)
    assistant, user = second.feedback
    assert assistant["role"] == "assistant"
    # What was received up to the abort: the chunk with the violation, nothing after it.
    assert assistant["content"] == s.attempts[0].text
    assert BAD.startswith(assistant["content"])
    assert '"b' in assistant["content"]
    assert len(assistant["content"]) < len(BAD)
    assert user["role"] == "user"
    assert "/role" in user["content"]
    assert '"role": "b' in user["content"]  # the output up to where it went wrong
    assert "enum" in user["content"]
    # Feedback accumulates: attempt 3 sees both failed attempts.
    assert third.feedback[:2] == second.feedback
    assert len(third.feedback) == 4


async def test_custom_feedback_builder() -> None:
    def feedback(info: AttemptInfo) -> list[dict[str, str]]:
        return [{"role": "user", "content": f"attempt {info.number} failed"}]

    source = Scripted([BAD], [json.dumps(GOOD)])
    retry = Retry(feedback=feedback, sleep=FakeSleep())
    async with stream_structured(source, schema=PERSON, retry=retry) as s:
        await s.result()
    assert source.attempts[1].feedback == ({"role": "user", "content": "attempt 1 failed"},)


async def test_retries_exhausted_lists_every_error() -> None:
    source = Scripted([BAD], ["{]"], ['{"name": "A'])
    async with stream_structured(source, schema=PERSON, retry=no_wait(max_attempts=3)) as s:
        with pytest.raises(RetriesExhausted) as info:
            await s.result()
    kinds = [type(e) for e in info.value.errors]
    assert kinds == [SchemaViolation, OutputSyntaxError, TruncatedError]
    assert info.value.__cause__ is info.value.errors[-1]
    assert [a.error for a in s.attempts] == info.value.errors


async def test_without_retry_the_error_itself_is_raised() -> None:
    source = Scripted([BAD], [json.dumps(GOOD)])
    async with stream_structured(source, schema=PERSON) as s:
        with pytest.raises(SchemaViolation):
            await s.result()
    assert len(source.attempts) == 1


async def test_output_errors_retry_at_once() -> None:
    sleep = FakeSleep()
    source = Scripted([BAD], [json.dumps(GOOD)])
    retry = Retry(backoff=5.0, sleep=sleep)
    async with stream_structured(source, schema=PERSON, retry=retry) as s:
        await s.result()
    assert sleep.delays == []


async def test_transport_errors_back_off_exponentially() -> None:
    sleep = FakeSleep()
    drop = TransportError("connection dropped", status=None)
    source = Scripted(
        ['{"name": ', TransportError("bad gateway", status=502)],
        ['{"name": "Ada", ', drop],
        ['{"name": "Ada", ', TransportError("unavailable", status=503)],
        [json.dumps(GOOD)],
    )
    retry = Retry(max_attempts=4, backoff=1.0, multiplier=2.0, jitter=0.0, sleep=sleep)
    fired: list[str] = []
    async with stream_structured(
        source,
        schema=PERSON,
        retry=retry,
        max_retries=3,
        on_field={"/name": lambda ev: fired.append(ev.value)},
    ) as s:
        assert await s.result() == GOOD
    assert sleep.delays == [1.0, 2.0, 4.0]
    assert fired == ["Ada"]
    # A transport failure adds no feedback: the request is sent again as it was.
    assert all(a.feedback == () for a in source.attempts)
    assert s.attempts[1].error is drop


async def test_backoff_is_capped_and_jittered() -> None:
    retry = Retry(backoff=10.0, multiplier=3.0, max_delay=20.0, jitter=0.5, rng=lambda: 0.5)
    err = TransportError("x", status=500)
    assert retry.delay(err, 1) == pytest.approx(10.0 * 0.75)
    assert retry.delay(err, 2) == pytest.approx(20.0 * 0.75)  # 30 capped to 20
    assert retry.delay(SchemaViolation("x"), 2) == 0.0


async def test_retry_after_is_honoured() -> None:
    sleep = FakeSleep()
    source = Scripted(
        [TransportError("slow down", status=429, retry_after=7.0)], [json.dumps(GOOD)]
    )
    retry = Retry(backoff=1.0, jitter=0.0, sleep=sleep)
    async with stream_structured(source, schema=PERSON, retry=retry, max_retries=1) as s:
        await s.result()
    assert sleep.delays == [7.0]


async def test_retry_after_longer_than_max_delay_is_waited_as_openai_python_waits_it() -> None:
    # openai-python (_calculate_retry_timeout) honours a server's wait up to two minutes,
    # whatever its own backoff cap (MAX_RETRY_DELAY, 8 s) is.
    sleep = FakeSleep()
    source = Scripted(
        [TransportError("slow down", status=429, retry_after=90.0)], [json.dumps(GOOD)]
    )
    retry = Retry(max_delay=30.0, jitter=0.0, sleep=sleep)
    async with stream_structured(source, schema=PERSON, retry=retry, max_retries=1) as s:
        assert await s.result() == GOOD
    assert sleep.delays == [90.0]


async def test_retry_after_longer_than_max_retry_after_is_raised() -> None:
    sleep = FakeSleep()
    error = TransportError("come back tomorrow", status=429, retry_after=86400.0)
    source = Scripted([error], [json.dumps(GOOD)])
    async with stream_structured(
        source, schema=PERSON, retry=Retry(sleep=sleep), max_retries=2
    ) as s:
        with pytest.raises(TransportError) as info:
            await s.result()
    assert info.value is error
    assert sleep.delays == []
    assert len(source.attempts) == 1
    # The bound is the policy's: a caller who can wait a day says so.
    source = Scripted([TransportError("later", status=429, retry_after=200.0)], [json.dumps(GOOD)])
    retry = Retry(max_retry_after=300.0, sleep=sleep)
    async with stream_structured(source, schema=PERSON, retry=retry, max_retries=1) as s:
        assert await s.result() == GOOD
    assert sleep.delays == [200.0]


@pytest.mark.parametrize("asked", [0.0, None])
async def test_retry_after_zero_or_absent_waits_the_backoff(asked: float | None) -> None:
    # openai-python: `0 < retry_after` or else its own backoff; a 0 is not "retry at once".
    sleep = FakeSleep()
    source = Scripted([TransportError("busy", status=503, retry_after=asked)], [json.dumps(GOOD)])
    retry = Retry(backoff=1.5, jitter=0.0, sleep=sleep)
    async with stream_structured(source, schema=PERSON, retry=retry, max_retries=1) as s:
        assert await s.result() == GOOD
    assert sleep.delays == [1.5]


@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_client_errors_are_not_retried(status: int) -> None:
    error = TransportError("bad request", status=status, retryable=False)
    source = Scripted([error], [json.dumps(GOOD)])
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        with pytest.raises(TransportError):
            await s.result()
    assert len(source.attempts) == 1


async def test_callback_errors_are_not_retried() -> None:
    def boom(ev: FieldEvent) -> None:
        raise KeyError("nope")

    source = Scripted([json.dumps(GOOD)], [json.dumps(GOOD)])
    async with stream_structured(
        source, schema=PERSON, retry=no_wait(), on_field={"/name": boom}
    ) as s:
        with pytest.raises(CallbackError):
            await s.result()
    assert len(source.attempts) == 1
    assert isinstance(s.attempts[0].error, CallbackError)


async def test_other_exceptions_from_the_source_propagate_unchanged() -> None:
    source = Scripted(['{"name": ', ZeroDivisionError("bug")], [json.dumps(GOOD)])
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        with pytest.raises(ZeroDivisionError):
            await s.result()
    assert len(source.attempts) == 1


async def test_usage_is_summed_across_attempts() -> None:
    source = Scripted(
        [Delta(usage=Usage(100, 4)), Delta(text=BAD)],
        [Delta(text=json.dumps(GOOD)), Delta(finish_reason="stop"), Delta(usage=Usage(130, 20))],
    )
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        await s.result()
    assert [a.usage for a in s.attempts] == [Usage(100, 4), Usage(130, 20)]
    assert s.usage == Usage(230, 24)


async def test_truncation_retries_with_feedback() -> None:
    source = Scripted(
        [Delta(text='{"name": "Ad'), Delta(finish_reason="length")], [json.dumps(GOOD)]
    )
    async with stream_structured(source, schema=PERSON, retry=no_wait()) as s:
        assert await s.result() == GOOD
    error = s.attempts[0].error
    assert isinstance(error, TruncatedError)
    assert error.reason == "length"
    assert "token limit" in source.attempts[1].feedback[-1]["content"]


def test_default_feedback_for_a_transport_error_is_empty() -> None:
    info = AttemptInfo(1, TransportError("x", status=503), Usage(), '{"a"')
    assert default_feedback(info) == ()


def test_retry_rejects_bad_settings() -> None:
    with pytest.raises(ValueError):
        Retry(max_attempts=0)
    with pytest.raises(ValueError):
        Retry(jitter=2.0)
    with pytest.raises(ValueError):
        Retry(backoff=-1.0)


async def test_a_source_callable_that_raises_is_a_failed_attempt() -> None:
    scripted = Scripted([], [json.dumps(GOOD)])

    def source(attempt: Attempt) -> AsyncIterator[str | Delta]:
        if attempt.number == 1:
            raise TransportError("connect failed", status=None)
        return scripted(attempt)

    async with stream_structured(source, schema=PERSON, retry=no_wait(), max_retries=1) as s:
        assert await s.result() == GOOD
    assert [a.number for a in scripted.attempts] == [2]
    assert isinstance(s.attempts[0].error, TransportError)


async def test_feedback_for_a_text_constraint_speaks_of_text_not_json() -> None:
    from sdk import Choice

    source = Scripted(["maybe"], ["yes"])
    async with stream_structured(
        source, schema=Choice(["yes", "no"]), retry=Retry(max_attempts=2)
    ) as s:
        assert await s.result() == "yes"
    feedback = source.attempts[1].feedback
    assert feedback[0]["role"] == "assistant" and "maybe".startswith(feedback[0]["content"])
    words = feedback[-1]["content"]
    assert "the whole text the Choice asks for" in words
    assert "JSON" not in words
    # A JSON stream keeps its words.
    json_source = Scripted(chunks(BAD, 5), chunks(json.dumps(GOOD), 5))
    async with stream_structured(json_source, schema=PERSON, retry=Retry(max_attempts=2)) as s:
        await s.result()
    assert "the whole JSON document" in json_source.attempts[1].feedback[-1]["content"]


class _Cured(TruncatedError):
    """An output error that names what the next request should change."""

    def __init__(self, cure: str) -> None:
        super().__init__(f"ran away ({cure})")
        self.cure = cure


async def test_each_later_attempt_asks_for_every_cure_named_so_far() -> None:
    source = Scripted(
        [_Cured("compact_whitespace")],
        [_Cured("less_repetition")],
        [OutputSyntaxError("plain mistake")],
        [json.dumps(GOOD)],
    )
    async with stream_structured(source, schema=PERSON, retry=no_wait(max_attempts=4)) as s:
        assert await s.result() == GOOD
    assert [a.cures for a in source.attempts] == [
        frozenset(),
        {"compact_whitespace"},
        {"compact_whitespace", "less_repetition"},
        {"compact_whitespace", "less_repetition"},
    ]
