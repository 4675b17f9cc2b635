"""What an attempt makes of each finish reason, fed as the backends send it: the local engine's
deltas (a token count on each piece, the finish reason and usage on a delta of their own), the
HTTP backends' finishing delta with the provider's own word kept (``Delta.response``), and the
feedback each error gives the model. The providers' own tables are tested on the wire in
``tests/sdk/http/test_stop_reasons.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk import Regex, stream_structured
from sdk._backend import LENGTH, MALFORMED, STOP, Delta, Usage
from sdk._constraints import Tool
from sdk._errors import (
    ContentFilteredError,
    OutputSyntaxError,
    SchemaViolation,
    TruncatedError,
)
from sdk._feedback import default_feedback, describe_error
from sdk._schema import compile_schema
from sdk._stream._attempt import AttemptState
from sdk._trackers._target import compile_target
from tests.sdk.stream._stream_support import Scripted

PERSON = compile_schema(
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
)
NUMBER = compile_schema({"type": "number"})


def local_engine(text: str, finish: str) -> list[Delta]:
    """The local engine's deltas for ``text`` (one token a character) ended by ``finish``."""
    pieces = [Delta(c, tokens=1) for c in text]
    return [*pieces, Delta(finish_reason=finish, usage=Usage(9, len(text)))]


def run(compiled: Any, chunks: list[Delta]) -> tuple[list[Any], AttemptState]:
    state = AttemptState(1, compiled)
    for chunk in chunks:
        state.feed(chunk)
    state.finish()
    return state.close(), state


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        (PERSON, '{"name": "Ada"}'),
        (compile_schema({"type": "array"}), "[1, 2]"),
        (compile_schema({"type": "string"}), '"Ada"'),
        (compile_schema({"type": "boolean"}), "false"),
        (compile_schema({"type": "null"}), "null"),
        (NUMBER, "12\n"),  # the newline ended the number before the limit
    ],
)
def test_the_local_engine_at_max_tokens_after_a_document_that_closed_itself(
    schema: Any, text: str
) -> None:
    values, state = run(schema, local_engine(text, LENGTH))
    assert values == [json.loads(text)]
    assert state.record(None).finish_reason == LENGTH
    assert state.usage == Usage(9, len(text))


@pytest.mark.parametrize("text", ["12", "-3.5", "1e9", "0"])
def test_the_local_engine_at_max_tokens_after_a_root_number(text: str) -> None:
    with pytest.raises(TruncatedError) as info:
        run(NUMBER, local_engine(text, LENGTH))
    assert info.value.reason == LENGTH and info.value.snapshot == json.loads(text)
    assert "root number" in str(info.value)
    # Ended by the model (its stop token), the same number is the answer.
    assert run(NUMBER, local_engine(text, STOP))[0] == [json.loads(text)]


def test_a_root_number_at_the_limit_is_cut_not_judged() -> None:
    """``10`` below a minimum of 100 may have been cut from ``100``: not a violation."""
    at_least = compile_schema({"type": "integer", "minimum": 100})
    with pytest.raises(TruncatedError) as info:
        run(at_least, local_engine("10", LENGTH))
    assert info.value.reason == LENGTH
    with pytest.raises(SchemaViolation):  # ended by the model: the verdict stands
        run(at_least, local_engine("10", STOP))


def test_a_tool_calls_arguments_that_closed_themselves_at_the_limit_are_its_arguments() -> None:
    tools = compile_target(None, tools=(Tool("f", {"type": "object"}),))
    chunks = [
        Delta('{"q": ', tool_call=0, tool_name="f", tool_call_id="c1"),
        Delta("1}", tool_call=0),
        Delta(finish_reason=LENGTH),
    ]
    values, _ = run(tools, chunks)
    assert values == [{"q": 1}]


def test_the_providers_word_is_named_by_each_error() -> None:
    said = {"stop_reason": "max_tokens"}
    with pytest.raises(TruncatedError, match="'length', the provider's 'max_tokens'"):
        run(PERSON, [Delta('{"name": "A'), Delta(finish_reason=LENGTH, response=said)])
    said = {"stop_reason": "SAFETY"}
    with pytest.raises(ContentFilteredError, match=r"\(the provider's 'SAFETY'\)"):
        run(PERSON, [Delta('{"name": "A'), Delta(finish_reason="content_filter", response=said)])
    said = {"stop_reason": "MALFORMED_FUNCTION_CALL", "stop_message": "Malformed call: f(q=)"}
    with pytest.raises(OutputSyntaxError) as info:
        run(PERSON, [Delta(finish_reason=MALFORMED, response=said)])
    assert "'MALFORMED_FUNCTION_CALL': Malformed call: f(q=)" in str(info.value)


def test_a_malformed_finish_after_a_whole_document_keeps_the_document() -> None:
    values, state = run(PERSON, [Delta('{"name": "Ada"}'), Delta(finish_reason=MALFORMED)])
    assert values == [{"name": "Ada"}] and state.record(None).finish_reason == MALFORMED


def feedback_for(chunks: list[Delta]) -> tuple[BaseException, str]:
    state = AttemptState(1, PERSON)
    for chunk in chunks:
        state.feed(chunk)
    with pytest.raises(Exception) as info:
        state.finish()
    *_, told = default_feedback(state.record(info.value))
    return info.value, str(told["content"])


def test_the_feedback_fits_what_happened() -> None:
    cut = [Delta('{"name": "A'), Delta(finish_reason=LENGTH)]
    _, told = feedback_for(cut)
    assert "token limit" in told and "shorter" in told
    _, told = feedback_for([Delta('{"name": "A')])  # the source ended: eof
    assert "cut off" in told
    error, told = feedback_for([Delta('{"name": "A'), Delta(finish_reason="pause_turn")])
    assert isinstance(error, TruncatedError) and error.reason == "pause_turn"
    assert "'pause_turn'" in told and "shorter" not in told and "cut off" not in told
    _, told = feedback_for([Delta('{"name": "A'), Delta(finish_reason=MALFORMED)])
    assert "is not valid JSON" in told and "shorter" not in told
    assert told.endswith("Reply again with the whole JSON document, corrected, and nothing else.")


def test_a_tool_calls_error_of_a_providers_own_reason_says_which_call() -> None:
    error = TruncatedError("the provider stopped the output", reason="OTHER")
    error.attribute(1, "search", "call_b")
    text = describe_error(error)
    assert "(tool call 1 ('search', id 'call_b'))" in text and "'OTHER'" in text


@pytest.mark.anyio
async def test_a_text_constraint_at_the_limit_is_judged_by_its_own_final_check() -> None:
    """A text has no end of its own: whatever the finish reason, the constraint's final check
    decides (the text that matches whole is the answer, ``length`` kept in the record)."""
    source = Scripted([Delta(text="555-1234"), Delta(finish_reason=LENGTH)])
    async with stream_structured(source, schema=Regex(r"\d{3}-\d{4}")) as s:
        assert await s.result() == "555-1234"
    assert s.attempts[0].finish_reason == LENGTH
