"""A runaway stops the attempt at the chunk that passed the limit (nothing more is pulled), and
the retry asks for the error's cure, with feedback that does not show the model its loop."""

from __future__ import annotations

import json

import pytest

from sdk import RepeatedOutput, RetriesExhausted, RunawayLimits, RunawayWhitespace
from sdk._structured import stream_structured
from tests.sdk.stream._stream_support import PERSON, Scripted, chunks
from tests.sdk.stream.test_stream_retry import GOOD, no_wait

pytestmark = pytest.mark.anyio

HEAD = '{"name": "Ada", "role": "admin", "tags": ['
NEWLINES = [HEAD, *["\n"] * 1000]
LOOP = [HEAD + '"x", "Serve with bacon', *[" and bacon"] * 1000]


async def test_whitespace_runaway_stops_at_its_chunk_and_the_retry_asks_for_compact_json() -> None:
    source = Scripted(NEWLINES, chunks(json.dumps(GOOD)))
    async with stream_structured(source, schema=PERSON, retry=no_wait(max_attempts=2)) as s:
        assert await s.result() == GOOD
    first = s.attempts[0]
    assert isinstance(first.error, RunawayWhitespace)
    assert source.pulls[0] == 1 + 49  # the head, then 32 + 2 * 8 newlines allowed, the 49th
    assert [a.cures for a in source.attempts] == [frozenset(), {"compact_whitespace"}]
    feedback = source.attempts[1].feedback
    assert [m["role"] for m in feedback] == ["user"]  # the runaway is not shown back
    assert "whitespace without end" in feedback[0]["content"]


async def test_a_loop_in_a_string_stops_and_the_retry_asks_for_less_repetition() -> None:
    source = Scripted(LOOP, chunks(json.dumps(GOOD)))
    async with stream_structured(source, schema=PERSON, retry=no_wait(max_attempts=2)) as s:
        assert await s.result() == GOOD
    error = s.attempts[0].error
    assert isinstance(error, RepeatedOutput) and error.pointer == "/tags/1"
    assert source.pulls[0] < 40  # of 1001 chunks
    assert source.attempts[1].cures == {"less_repetition"}
    assert "repeated the same text" in source.attempts[1].feedback[0]["content"]


async def test_every_attempt_running_away_exhausts_the_retries_with_the_runaways() -> None:
    source = Scripted(NEWLINES, LOOP)
    with pytest.raises(RetriesExhausted) as info:
        async with stream_structured(source, schema=PERSON, retry=no_wait(max_attempts=2)) as s:
            await s.result()
    assert [type(e) for e in info.value.errors] == [RunawayWhitespace, RepeatedOutput]
    assert source.attempts[1].cures == {"compact_whitespace"}


async def test_the_runaway_option_sets_the_limits_or_turns_them_off() -> None:
    text = HEAD + '"x"' + " " * 60 + "]}"
    cases = [(None, True), (RunawayLimits(whitespace=100), True), (RunawayLimits(), False)]
    for runaway, ok in cases:
        source = Scripted([text])
        async with stream_structured(source, schema=PERSON, runaway=runaway) as s:
            if ok:
                assert await s.result() == {"name": "Ada", "role": "admin", "tags": ["x"]}
            else:
                with pytest.raises(RunawayWhitespace):
                    await s.result()


def test_a_runaway_option_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match=r"runaway must be a sdk\.RunawayLimits"):
        stream_structured(Scripted(), schema=PERSON, runaway=32)  # type: ignore[arg-type]
