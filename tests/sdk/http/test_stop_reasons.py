"""Every provider's stop reasons, on the wire: each reason its API documents (and one it does
not), after an unfinished document and after a finished one, read by a real ``Client`` over an
``httpx.MockTransport``; the test asserts the error (its class, ``reason`` and message) and the
feedback the model would get for it (``default_feedback`` of the attempt).

The expected outcome of each reason is written here, by hand, once per provider (the tables of
``docs/errors.md``); each decoder's ``STOP_REASONS`` must have a row here for every word it
lists, so a word added there is tested here. The outcomes:

- ``OK``: a normal end; a finished document is the result, an unfinished one a
  ``TruncatedError`` with reason ``"eof"``.
- ``LENGTH``: the token limit; a finished document that closed itself is the result (and the
  record keeps ``"length"``), an unfinished one a ``TruncatedError`` with reason ``"length"``
  (feedback: shorter), and so is a root number (``12`` may have been cut from ``123``).
- ``FILTER``: a ``ContentFilteredError``, whatever the document.
- ``REFUSED``: a ``RefusedError``, whatever the document.
- ``MALFORMED``: the provider could not read the output; an unfinished document is an
  ``OutputSyntaxError`` naming the reason (feedback: not valid JSON, never shorter), a finished
  one the result.
- ``AS_IS``: a reason of the provider's own; an unfinished document is a ``TruncatedError``
  whose ``reason`` is that word (feedback names it, never shorter), a finished one the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sdk import (
    AttemptInfo,
    Client,
    ContentFilteredError,
    OutputSyntaxError,
    RefusedError,
    Retry,
    TruncatedError,
)
from sdk._feedback import default_feedback
from sdk._http.anthropic._decoder import STOP_REASONS as ANTHROPIC
from sdk._http.gemini._decoder import STOP_REASONS as GEMINI
from sdk._http.ollama._decoder import STOP_REASONS as OLLAMA
from sdk._http.openai._chat_decoder import STOP_REASONS as CHAT
from sdk._http.openai._responses_decoder import STOP_REASONS as RESPONSES

pytestmark = pytest.mark.anyio

OK, LENGTH, FILTER, REFUSED, MALFORMED, AS_IS = (
    "ok",
    "length",
    "filter",
    "refused",
    "malformed",
    "as_is",
)

MESSAGES = [{"role": "user", "content": "Which city?"}]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name"],
}
FINISHED = ['{"name": "Par', 'is", "population": 2', "100000}"]
UNFINISHED = ['{"name": "Par', 'is", "popul']
VALUE = {"name": "Paris", "population": 2100000}

# ---------------------------------------------------------------- each provider's wire


def sse(*records: Any) -> bytes:
    return b"".join(b"data: " + json.dumps(r).encode() + b"\n\n" for r in records)


def chat_wire(pieces: list[str], reason: str) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}

    body = sse(
        chunk({"role": "assistant", "content": ""}), *(chunk({"content": p}) for p in pieces)
    )
    return body + sse(chunk({}, reason)) + b"data: [DONE]\n\n"


def responses_wire(pieces: list[str], reason: str) -> bytes:
    response = {"id": "resp_1", "object": "response", "model": "m", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}}
    ]
    events += [
        {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "delta": p}
        for p in pieces
    ]
    if reason == "completed":
        events.append({"type": "response.completed", "response": {**response, "status": reason}})
    else:
        details = {"reason": reason} if reason else None
        incomplete = {**response, "status": "incomplete", "incomplete_details": details}
        events.append({"type": "response.incomplete", "response": incomplete})
    return sse(*events)


def anthropic_wire(pieces: list[str], reason: str) -> bytes:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "usage": {"input_tokens": 9}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    events += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in pieces
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]
    return sse(*events)


MALFORMED_MESSAGE = "Malformed function call: print(default_api.look(q=))"


def gemini_wire(pieces: list[str], reason: str) -> bytes:
    def record(text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": text}] if text else []},
            "index": 0,
        }
        if finish:
            candidate["finishReason"] = finish
            if TABLES[GEMINI_P].get(finish) == MALFORMED:
                candidate["finishMessage"] = MALFORMED_MESSAGE
        return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}

    return sse(*(record(p) for p in pieces[:-1]), record(pieces[-1], reason))


def ollama_wire(pieces: list[str], reason: str) -> bytes:
    def line(content: str, **more: Any) -> bytes:
        out = {"model": "m", "message": {"role": "assistant", "content": content}, "done": False}
        return (json.dumps({**out, **more}) + "\n").encode()

    last = line("", done=True, done_reason=reason, prompt_eval_count=9, eval_count=7)
    return b"".join(line(p) for p in pieces) + last


@dataclass(frozen=True, eq=False)
class Provider:
    name: str
    wire: Callable[[list[str], str], bytes]
    options: Mapping[str, Any]
    content_type: str = "text/event-stream"


CHAT_P = Provider("openai chat", chat_wire, {"provider": "openai"})
RESPONSES_P = Provider(
    "openai responses", responses_wire, {"provider": "openai", "api": "responses"}
)
ANTHROPIC_P = Provider("anthropic", anthropic_wire, {"provider": "anthropic"})
GEMINI_P = Provider("gemini", gemini_wire, {"provider": "gemini"})
OLLAMA_P = Provider("ollama", ollama_wire, {"provider": "ollama"}, "application/x-ndjson")

# ---------------------------------------------------------------- what each reason is, by hand

TABLES: dict[Provider, dict[str, str]] = {
    CHAT_P: {
        "stop": OK,
        "tool_calls": OK,
        "function_call": OK,
        "length": LENGTH,
        "model_length": LENGTH,
        "content_filter": FILTER,
        "error": AS_IS,  # Mistral's, not in the table: passed on as it came
    },
    RESPONSES_P: {
        "completed": OK,  # response.completed (no reason)
        "max_output_tokens": LENGTH,
        "content_filter": FILTER,
        "max_messages": AS_IS,
        "steered": AS_IS,
        "": AS_IS,  # incomplete, no reason given: "incomplete"
    },
    ANTHROPIC_P: {
        "end_turn": OK,
        "stop_sequence": OK,
        "tool_use": OK,
        "max_tokens": LENGTH,
        "model_context_window_exceeded": LENGTH,
        "refusal": REFUSED,
        "pause_turn": AS_IS,
        "some_new_reason": AS_IS,
    },
    GEMINI_P: {
        "STOP": OK,
        "MAX_TOKENS": LENGTH,
        "CONTINUATION": LENGTH,
        **dict.fromkeys(
            [
                "SAFETY",
                "RECITATION",
                "LANGUAGE",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "IMAGE_SAFETY",
                "IMAGE_PROHIBITED_CONTENT",
                "IMAGE_RECITATION",
                "MODEL_ARMOR",
                "ESCALATION",
                "PUP_LIMITED_DISABLED",
            ],
            FILTER,
        ),
        "MALFORMED_FUNCTION_CALL": MALFORMED,
        "UNEXPECTED_TOOL_CALL": MALFORMED,
        "MALFORMED_RESPONSE": MALFORMED,
        **dict.fromkeys(
            [
                "TOO_MANY_TOOL_CALLS",
                "MISSING_THOUGHT_SIGNATURE",
                "NO_IMAGE",
                "IMAGE_OTHER",
                "OTHER",
                "FINISH_REASON_UNSPECIFIED",
                "SOMETHING_NEW",
            ],
            AS_IS,
        ),
    },
    OLLAMA_P: {
        "stop": OK,
        "length": LENGTH,
        "load": AS_IS,
        "unload": AS_IS,
        "connection_closed": AS_IS,
    },
}
DECODER_TABLES = {
    CHAT_P: CHAT,
    RESPONSES_P: RESPONSES,
    ANTHROPIC_P: ANTHROPIC,
    GEMINI_P: GEMINI,
    OLLAMA_P: OLLAMA,
}
CASES = [
    pytest.param(provider, reason, outcome, id=f"{provider.name}-{reason or 'none'}")
    for provider, table in TABLES.items()
    for reason, outcome in table.items()
]


def test_every_word_a_decoder_lists_has_a_row_here() -> None:
    for provider, table in DECODER_TABLES.items():
        assert set(table) <= set(TABLES[provider]), provider.name
    # google-genai's own list: every FinishReason Gemini can send has a row.
    types = pytest.importorskip("google.genai.types")
    assert {m.value for m in types.FinishReason} <= set(TABLES[GEMINI_P])
    anthropic = pytest.importorskip("anthropic.types")
    assert set(anthropic.StopReason.__args__) <= set(TABLES[ANTHROPIC_P])


# ---------------------------------------------------------------- the stream over the wire


async def run(provider: Provider, pieces: list[str], reason: str, schema: Any = SCHEMA) -> Any:
    """The stream's result (or error) and its one attempt's record."""
    body = provider.wire(pieces, reason)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": provider.content_type}, content=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="http://x.test")
    options = {"api_key": "k", "model": "m", "http_client": http, **provider.options}
    async with (
        Client(**options) as client,
        client.stream(messages=MESSAGES, schema=schema, retry=Retry(max_attempts=1)) as s,
    ):
        try:
            outcome: Any = await s.result()
        except Exception as exc:  # the error under test
            outcome = exc
        (info,) = s.attempts
        return outcome, info


def feedback(info: AttemptInfo) -> str:
    *_, told = default_feedback(info)
    return str(told["content"])


@pytest.mark.parametrize(("provider", "reason", "outcome"), CASES)
async def test_an_unfinished_document(provider: Provider, reason: str, outcome: str) -> None:
    error, info = await run(provider, UNFINISHED, reason)
    if outcome == FILTER:
        assert isinstance(error, ContentFilteredError)
        if reason != "content_filter":
            assert repr(reason) in str(error)  # the provider's word, named
        return
    if outcome == REFUSED:
        assert isinstance(error, RefusedError)
        return
    told = feedback(info)
    if outcome == OK:
        assert type(error) is TruncatedError and error.reason == "eof"
    elif outcome == LENGTH:
        assert type(error) is TruncatedError and error.reason == "length"
        assert "token limit" in str(error) and "token limit" in told and "shorter" in told
        if reason != "length":
            assert repr(reason) in str(error)
    elif outcome == MALFORMED:
        assert type(error) is OutputSyntaxError
        assert repr(reason) in str(error) and MALFORMED_MESSAGE in str(error)
        assert "is not valid JSON" in told and repr(reason) in told
        assert "shorter" not in told and "cut off" not in told
    else:
        word = reason or "incomplete"
        assert type(error) is TruncatedError and error.reason == word
        assert repr(word) in str(error) and repr(word) in told
        assert "shorter" not in told and "cut off" not in told
    assert "Reply again with the whole JSON document, corrected" in told


@pytest.mark.parametrize(("provider", "reason", "outcome"), CASES)
async def test_a_finished_document(provider: Provider, reason: str, outcome: str) -> None:
    result, info = await run(provider, FINISHED, reason)
    if outcome == FILTER:
        assert isinstance(result, ContentFilteredError)
    elif outcome == REFUSED:
        assert isinstance(result, RefusedError)
    else:  # whatever else the provider said, a whole, valid document is the answer
        assert result == VALUE
        assert info.error is None
        if outcome == LENGTH:
            assert info.finish_reason == "length"  # kept in the record
        elif outcome == AS_IS:
            assert info.finish_reason == (reason or "incomplete")


LENGTHS = [
    (provider, next(r for r, o in table.items() if o == LENGTH))
    for provider, table in TABLES.items()
]


@pytest.mark.parametrize(("provider", "reason"), LENGTHS, ids=[p.name for p, _ in LENGTHS])
@pytest.mark.parametrize(
    ("pieces", "schema", "value"),
    [
        (["[1, ", "2]"], {"type": "array"}, [1, 2]),
        (['"ab', 'c"'], {"type": "string"}, "abc"),
        (["tr", "ue"], {"type": "boolean"}, True),
        (["nu", "ll"], {"type": "null"}, None),
        (["12", " "], {"type": "integer"}, 12),  # the space ended the number
    ],
    ids=["array", "string", "true", "null", "number-then-space"],
)
async def test_at_the_token_limit_a_document_that_closed_itself_is_the_answer(
    provider: Provider, reason: str, pieces: list[str], schema: Any, value: Any
) -> None:
    result, info = await run(provider, pieces, reason, schema)
    assert result == value and info.error is None and info.finish_reason == "length"


@pytest.mark.parametrize(("provider", "reason"), LENGTHS, ids=[p.name for p, _ in LENGTHS])
@pytest.mark.parametrize("pieces", [["1", "2"], ["-", "0.5"], ["1e", "3"]], ids=str)
async def test_at_the_token_limit_a_root_number_is_truncated(
    provider: Provider, reason: str, pieces: list[str]
) -> None:
    error, info = await run(provider, pieces, reason, {"type": "number"})
    assert type(error) is TruncatedError and error.reason == "length"
    assert "root number" in str(error)
    assert "token limit" in feedback(info)
    # The same number ended by the model is the answer.
    stop = next(r for r, o in TABLES[provider].items() if o == OK)
    result, _ = await run(provider, pieces, stop, {"type": "number"})
    assert result == json.loads("".join(pieces))
