"""The attempt state, sans-I/O: deltas in, events out, then values or the attempt's error.

No event loop anywhere in this file: the bookkeeping the stream relies on (routing by tool call,
prose next to tool calls, refusals, finish reasons, usage and its estimate, timings) is tested
by feeding values.
"""

from __future__ import annotations

import json
import sys
from itertools import count
from typing import Any

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import (
    ContentFilteredError,
    OutputSyntaxError,
    RefusedError,
    SchemaViolation,
    TruncatedError,
)
from sdk._events import FieldEvent, ReasoningDelta, TextDelta
from sdk._schema import compile_schema
from sdk._stream._attempt import AttemptState

PERSON = compile_schema(
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "maximum": 120}},
        "required": ["name"],
    }
)
DOC = {"name": "Ada", "age": 36}
TEXT = json.dumps(DOC)


def attempt(number: int = 1, **kwargs: Any) -> AttemptState:
    return AttemptState(number, PERSON, **kwargs)


def feed_all(state: AttemptState, *chunks: str | Delta) -> list[Any]:
    events: list[Any] = []
    for chunk in chunks:
        events.extend(state.feed(chunk))
    return events


def test_text_in_field_events_out_then_values() -> None:
    state = attempt(2)
    events = feed_all(state, TEXT[:9], Delta(TEXT[9:]), Delta(finish_reason="stop"))
    events += state.finish()
    assert [ev.pointer for ev in events] == ["/name", "/age", ""]
    assert all(isinstance(ev, FieldEvent) and ev.attempt == 2 for ev in events)
    assert state.close() == [DOC]
    assert state.snapshot == DOC
    info = state.record(None)
    assert (info.number, info.error, info.text) == (2, None, TEXT)


def test_deltas_are_text_events_when_asked() -> None:
    state = attempt(deltas=True)
    events = feed_all(state, '{"name": "A', 'da"}')
    assert [ev.text for ev in events if isinstance(ev, TextDelta)] == ["A", "da"]


def test_a_violation_propagates_and_is_recorded() -> None:
    state = attempt()
    with pytest.raises(SchemaViolation) as info:
        feed_all(state, '{"name": "Ada", "age": 130', "}")
    record = state.record(info.value)
    assert record.error is info.value
    assert record.text == '{"name": "Ada", "age": 130}'


def test_text_after_the_finish_reason_is_not_parsed() -> None:
    state = attempt()
    feed_all(state, Delta(TEXT, finish_reason="stop"), Delta("garbage"))
    state.finish()
    assert state.close() == [DOC]
    assert state.record(None).text == TEXT


def test_finish_length_is_truncation_with_its_reason() -> None:
    state = attempt()
    feed_all(state, '{"name": "Ad', Delta(finish_reason="length"), Delta(usage=Usage(5, 7)))
    with pytest.raises(TruncatedError) as info:
        state.finish()
    assert info.value.reason == "length"
    assert info.value.snapshot == {"name": "Ad"}
    assert ("name",) in info.value.open_paths
    assert state.usage == Usage(5, 7)


def test_the_source_ending_early_is_eof_truncation() -> None:
    state = attempt()
    feed_all(state, '{"name": "Ad')
    with pytest.raises(TruncatedError) as info:
        state.finish()
    assert info.value.reason == "eof"


def test_refusal_pieces_are_joined() -> None:
    state = attempt()
    feed_all(state, Delta(refusal="I can't "), Delta(refusal="do that."))
    with pytest.raises(RefusedError) as info:
        state.finish()
    assert info.value.refusal == "I can't do that."


def test_content_filter_carries_the_snapshot() -> None:
    state = attempt()
    feed_all(state, '{"name": "Ad', Delta(finish_reason="content_filter"))
    with pytest.raises(ContentFilteredError) as info:
        state.finish()
    assert info.value.snapshot == {"name": "Ad"}


# ~2,300 one-char pieces (no loop: a repeated phrase would be a RepeatedOutput)
LONG = json.dumps({"name": " ".join(f"Ada{i}" for i in range(400)) + " Lovelace", "age": 36})


@pytest.mark.parametrize("as_delta", [False, True])
def test_a_long_output_fed_a_character_at_a_time_is_recorded_whole(as_delta: bool) -> None:
    # The attempt folds old pieces into blocks (sdk._stream._pieces): the text and the value are
    # those of every character, in order, whatever the folding.
    state = attempt()
    events = feed_all(state, *(Delta(c) if as_delta else c for c in LONG))
    assert [ev.pointer for ev in events] == ["/name", "/age", ""]
    assert state.text == LONG
    assert state.close() == [json.loads(LONG)]
    assert state.record(None).text == LONG


def test_long_tool_calls_interleaved_keep_each_calls_text() -> None:
    state = attempt()
    calls = [json.dumps({"name": "".join(f"{k}{i}" for i in range(250))}) for k in (1, 2)]
    feed_all(state, *(Delta(calls[k][:1], tool_call=k, tool_name="person") for k in (0, 1)))
    for a, b in zip(calls[0][1:], calls[1][1:], strict=True):
        feed_all(state, Delta(a, tool_call=0), Delta(b, tool_call=1))
    feed_all(state, Delta(finish_reason="tool_calls"))
    state.finish()
    assert [c.arguments for c in state.record(None).tool_calls] == calls
    assert state.close() == [json.loads(c) for c in calls]


def test_replayed_text_is_not_this_attempts_first_output() -> None:
    ticks = count()
    state = attempt(2, clock=lambda: float(next(ticks)))
    state.replay('{"name": "Ada", ')
    assert state.text == '{"name": "Ada", '
    assert state.record(None).first_output is None
    state.feed('"age": 36}')
    assert state.record(None).first_output is not None


def test_tool_calls_have_a_tracker_each_and_prose_is_not_parsed() -> None:
    state = attempt()
    events = feed_all(
        state,
        "\n ",  # message text before the first tool call: dropped from parsing
        Delta('{"name": ', tool_call=0, tool_name="person"),
        Delta('{"name": "Bo"}', tool_call=1, tool_name="person"),
        Delta('"Al"}', tool_call=0),
        "more prose",
        Delta(finish_reason="tool_calls"),
    )
    events += state.finish()
    assert sorted((ev.tool_call, ev.pointer) for ev in events) == [
        (0, ""),
        (0, "/name"),
        (1, ""),
        (1, "/name"),
    ]
    assert state.close() == [{"name": "Al"}, {"name": "Bo"}]
    assert state.snapshot == [{"name": "Al"}, {"name": "Bo"}]
    record = state.record(None)
    assert [(c.index, c.name, c.arguments) for c in record.tool_calls] == [
        (0, "person", '{"name": "Al"}'),
        (1, "person", '{"name": "Bo"}'),
    ]
    assert record.text == "\n more prose"


def test_a_bad_chunk_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="str or Delta"):
        attempt().feed(42)  # type: ignore[arg-type]


def test_syntax_errors_propagate() -> None:
    with pytest.raises(OutputSyntaxError):
        feed_all(attempt(), '{"name" 1')


# -- usage ------------------------------------------------------------------------------------


def test_reported_usage_wins_over_the_count() -> None:
    state = attempt()
    feed_all(state, *[TEXT[i : i + 2] for i in range(0, len(TEXT), 2)])
    assert state.usage == Usage(0, (len(TEXT) + 1) // 2, estimated=True)
    feed_all(state, Delta(finish_reason="stop", usage=Usage(12, 40)))
    assert state.usage == Usage(12, 40)
    assert not state.usage.estimated


def test_a_later_report_replaces_an_earlier_one() -> None:
    state = attempt()
    feed_all(state, Delta(usage=Usage(12, 0)), Delta(TEXT), Delta(usage=Usage(12, 9)))
    assert state.usage == Usage(12, 9)


def test_an_aborted_attempt_is_counted_not_free() -> None:
    # The prompt was reported at the start; the completion never was: counted from deltas.
    state = attempt()
    feed_all(state, Delta(usage=Usage(30, 0)), Delta('{"na'), Delta('me": "A'))
    usage = state.record(SchemaViolation("x")).usage
    assert usage == Usage(30, 2, estimated=True)


def test_exact_token_counts_from_the_backend_are_not_estimates() -> None:
    state = attempt()
    feed_all(state, Delta('{"name": "', tokens=3, forced=True), Delta("Ada", tokens=2))
    assert state.usage == Usage(0, 5, 3)
    assert not state.usage.estimated


def test_usage_adds_up_and_keeps_the_estimate_mark() -> None:
    total = Usage(1, 2, 0) + Usage(3, 4, 1, estimated=True)
    assert total == Usage(4, 6, 1, estimated=True)
    assert total.total_tokens == 10


# -- timings ----------------------------------------------------------------------------------


def test_the_record_carries_timings() -> None:
    ticks = count()
    state = attempt(clock=lambda: float(next(ticks)))  # started at 0
    feed_all(state, Delta(TEXT[:5]), Delta(TEXT[5:]), Delta(finish_reason="stop"))  # 1st at 1
    feed_all(state, Delta(usage=Usage(3, 8)))
    state.finish()
    state.close()
    info = state.record(None)  # ends at 2
    assert (info.seconds, info.first_output) == (2.0, 1.0)
    assert info.tokens_per_second == 8.0


def test_no_output_no_rate() -> None:
    info = attempt().record(TruncatedError("x"))
    assert info.first_output is None
    assert info.tokens_per_second is None


def test_this_file_runs_without_an_event_loop() -> None:
    # The attempt state's module (and what it imports) needs neither anyio nor httpx.
    import subprocess

    code = (
        "import sys; import sdk._stream._attempt; "
        "loaded = {'anyio', 'httpx', 'trio'} & set(sys.modules); "
        "print(sorted(loaded)); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# -- reasoning --------------------------------------------------------------------------------


def test_reasoning_deltas_are_kept_apart_and_given_when_asked() -> None:
    state = attempt(reasoning=True)
    events = feed_all(state, Delta(reasoning="Let me see {"), Delta(reasoning=" ok."), Delta(TEXT))
    assert [ev.text for ev in events if isinstance(ev, ReasoningDelta)] == ["Let me see {", " ok."]
    events += state.finish()
    assert state.close() == [DOC]
    info = state.record(None)
    assert (info.reasoning, info.text) == ("Let me see { ok.", TEXT)


def test_reasoning_is_recorded_but_not_yielded_by_default() -> None:
    state = attempt()
    events = feed_all(state, Delta(reasoning="hmm"), Delta(TEXT))
    assert not any(isinstance(ev, ReasoningDelta) for ev in events)
    assert state.record(None).reasoning == "hmm"


THINK = '  <think>I need {"name": ...} here</think>\n' + TEXT


@pytest.mark.parametrize("split", range(len(THINK) + 1))
def test_a_think_block_before_the_document_is_reasoning_in_lenient_mode(split: int) -> None:
    state = attempt(lenient=True, reasoning=True)
    events = feed_all(state, THINK[:split], THINK[split:]) + list(state.finish())
    thought = "".join(ev.text for ev in events if isinstance(ev, ReasoningDelta))
    assert thought == 'I need {"name": ...} here'
    assert state.close() == [DOC]
    assert state.record(None).reasoning == thought


def test_a_think_block_char_by_char() -> None:
    state = attempt(lenient=True)
    feed_all(state, *THINK)
    state.finish()
    assert state.close() == [DOC]
    assert state.record(None).reasoning == 'I need {"name": ...} here'


def test_without_lenient_a_think_block_is_not_json() -> None:
    with pytest.raises(OutputSyntaxError):
        feed_all(attempt(), THINK)


def test_only_a_block_at_the_start_is_reasoning() -> None:
    state = attempt(lenient=True)
    feed_all(state, "Here: " + TEXT + " <think>late</think>")
    state.finish()
    assert state.close() == [DOC]
    assert state.record(None).reasoning == ""
