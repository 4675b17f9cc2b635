"""The server's faults with reasoning models, from the bytes the issues show, through the real
decoders (whole and in random splits): the answer in the reasoning channel (llama.cpp #20345,
vLLM #16182), and the constraint dropped (Ollama #14645, #15260: prose under ``format`` with
``think: false``; ollama-python #523: a stray ``{``). Each checks what is raised, what the retry
sends, and that a server with no fix is not asked again."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import sdk
from sdk import AnswerInReasoning, Client, ConstraintIgnored, OutputSyntaxError, Retry
from tests.sdk._http_support import DOC, MESSAGES, PARIS, Body, City, pieces

pytestmark = pytest.mark.anyio

URL = "http://server.test"


@pytest.fixture(params=[None, 1, 2, 3], ids=["whole", "split1", "split2", "split3"])
def split(request: pytest.FixtureRequest) -> int | None:
    value: int | None = request.param
    return value


class Server:
    """Answers each request with the next body, cut as ``split`` says; keeps the requests."""

    def __init__(self, kind: str, split: int | None, *answers: bytes) -> None:
        self.kind = kind
        self.split = split
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(request.content))
        content_type = "text/event-stream" if self.kind != "ollama" else "application/x-ndjson"
        body = Body(pieces(self.answers.pop(0), self.split))
        return httpx.Response(200, headers={"content-type": content_type}, stream=body)

    def client(self) -> Client:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=URL)
        if self.kind == "ollama":
            return Client(provider="ollama", model="qwen3.5", http_client=http)
        server: Any = None if self.kind == "unknown" else self.kind
        return Client(base_url=URL, api_key="k", model="qwen3", server=server, http_client=http)


async def run(server: Server, **options: Any) -> tuple[Any, list[sdk.AttemptInfo]]:
    """The result (or the error) and the attempts."""
    async with server.client() as client:
        s = client.stream(messages=MESSAGES, schema=City, **options)
        try:
            async with s:
                return await s.result(), s.attempts
        except sdk.StreamError as exc:
            return exc, s.attempts


# ---------------------------------------------------------------------------- Chat Completions


def sse(*deltas: dict[str, Any], finish: str = "stop") -> bytes:
    """A Chat Completions stream as llama.cpp's server writes it."""
    out = []
    for delta in deltas:
        chunk: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "model": "qwen3"}
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
        out.append(f"data: {json.dumps(chunk)}\n\n")
    last: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "model": "qwen3"}
    last["choices"] = [{"index": 0, "delta": {}, "finish_reason": finish}]
    out.append(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n")
    return "".join(out).encode()


# llama.cpp #20345: the grammar ran inside the thinking; content never came (or came null).
IN_REASONING = sse(
    {"role": "assistant", "content": None},
    {"reasoning_content": '{"name": "Par'},
    {"reasoning_content": 'is", "population": 2'},
    {"reasoning_content": "100000}"},
)
ANSWERED = sse({"role": "assistant", "content": ""}, *({"content": p} for p in DOC.split(" ")))


async def test_llamacpp_answer_in_reasoning_retries_with_thinking_off(split: int | None) -> None:
    server = Server("llamacpp", split, IN_REASONING, ANSWERED)
    value, attempts = await run(server, retry=Retry(max_attempts=3))
    assert value == PARIS
    first = attempts[0].error
    assert isinstance(first, AnswerInReasoning)
    assert (first.cure, first.server, first.retryable) == ("no_thinking", "llama.cpp", True)
    assert json.loads(first.reasoning) == PARIS.model_dump()
    assert "chat_template_kwargs" not in server.sent[0]
    assert server.sent[1]["chat_template_kwargs"] == {"enable_thinking": False}
    told = server.sent[1]["messages"][-1]["content"]
    assert "Your reply was empty: the JSON document came in your reasoning" in told


async def test_reasoning_fallback_reads_the_document_from_the_reasoning(split: int | None) -> None:
    server = Server("llamacpp", split, IN_REASONING)
    value, attempts = await run(server, reasoning_fallback=True)
    assert value == PARIS
    assert len(server.sent) == 1
    assert json.loads(attempts[0].reasoning) == PARIS.model_dump()


async def test_the_cure_asked_for_once_and_failed_again_stops(split: int | None) -> None:
    server = Server("vllm", split, IN_REASONING, IN_REASONING, ANSWERED)
    error, attempts = await run(server, retry=Retry(max_attempts=3))
    assert isinstance(error, AnswerInReasoning) and not error.retryable
    assert "already asked for the fix ('no_thinking')" in str(error)
    assert len(server.sent) == 2 and len(attempts) == 2


async def test_a_server_with_no_fix_is_not_asked_again(split: int | None) -> None:
    server = Server("unknown", split, IN_REASONING, ANSWERED)
    error, _ = await run(server, retry=Retry(max_attempts=3))
    assert isinstance(error, AnswerInReasoning)
    assert (error.cure, error.retryable) == (None, False)
    assert "reasoning_fallback=True" in str(error)
    assert len(server.sent) == 1


async def test_the_cure_keeps_the_callers_chat_template_kwargs() -> None:
    server = Server("llamacpp", None, IN_REASONING, ANSWERED)
    kwargs = {"chat_template_kwargs": {"reasoning_budget": 5}}
    value, _ = await run(server, retry=Retry(max_attempts=2), extra_body=kwargs)
    assert value == PARIS
    assert server.sent[0]["chat_template_kwargs"] == {"reasoning_budget": 5}
    assert server.sent[1]["chat_template_kwargs"] == {
        "reasoning_budget": 5,
        "enable_thinking": False,
    }


async def test_a_thought_that_is_no_document_is_the_usual_truncation() -> None:
    thought = sse({"reasoning_content": 'I will answer {"name": ...} soon'})
    error, _ = await run(Server("llamacpp", None, thought))
    assert type(error) is sdk.TruncatedError


async def test_prose_under_json_schema_on_vllm_is_the_servers_fault_and_stops(
    split: int | None,
) -> None:
    prose = sse({"content": "Sure! Here is the city: "}, {"content": DOC})
    server = Server("vllm", split, prose, ANSWERED)
    error, _ = await run(server, retry=Retry(max_attempts=3))
    assert isinstance(error, ConstraintIgnored) and isinstance(error, OutputSyntaxError)
    assert (error.server, error.cure, error.retryable) == ("vLLM", None, False)
    assert "the server returned prose under a schema it claims to apply" in str(error)
    assert isinstance(error.__cause__, OutputSyntaxError)
    assert len(server.sent) == 1


async def test_a_mistake_inside_the_document_is_the_models_and_retried(split: int | None) -> None:
    broken = sse({"content": '{"name": "Paris",, '})
    server = Server("vllm", split, broken, ANSWERED)
    value, attempts = await run(server, retry=Retry(max_attempts=2))
    assert value == PARIS
    assert type(attempts[0].error) is OutputSyntaxError


async def test_prose_when_no_constraint_was_sent_is_the_models() -> None:
    prose = sse({"content": "Sure! " + DOC})
    error, _ = await run(Server("vllm", None, prose), mode="none")
    assert type(error) is OutputSyntaxError


# ---------------------------------------------------------------------------- Ollama


def line(content: str = "", **message: Any) -> bytes:
    out: dict[str, Any] = {"model": "qwen3.5", "created_at": "2026-03-05T00:00:00Z", "done": False}
    out["message"] = {"role": "assistant", "content": content, **message}
    return (json.dumps(out) + "\n").encode()


def ollama(*lines: bytes) -> bytes:
    last: dict[str, Any] = {"model": "qwen3.5", "created_at": "2026-03-05T00:00:01Z", "done": True}
    last.update(message={"role": "assistant", "content": ""}, done_reason="stop")
    last.update(prompt_eval_count=20, eval_count=30)
    return b"".join(lines) + (json.dumps(last) + "\n").encode()


# ollama #14645 / #15260: think=false and format: the format is ignored, plain text comes.
PLAIN = ollama(line("Hello"), line("! Paris has about "), line("2.1 million people."))
OLLAMA_ANSWERED = ollama(*(line(p) for p in DOC.split(" ")))


async def test_ollama_prose_under_think_false_retries_with_thinking_allowed(
    split: int | None,
) -> None:
    server = Server("ollama", split, PLAIN, OLLAMA_ANSWERED)
    value, attempts = await run(server, retry=Retry(max_attempts=3), reasoning_effort="none")
    assert value == PARIS
    first = attempts[0].error
    assert isinstance(first, ConstraintIgnored)
    assert (first.server, first.cure) == ("Ollama", "allow_thinking")
    assert "format sent with think=false" in str(first) and "('Hello')" in first.cause
    assert server.sent[0]["think"] is False and "format" in server.sent[0]
    assert "think" not in server.sent[1] and "format" in server.sent[1]


async def test_ollama_prose_with_thinking_on_has_no_fix(split: int | None) -> None:
    server = Server("ollama", split, PLAIN, OLLAMA_ANSWERED)
    error, _ = await run(server, retry=Retry(max_attempts=3))
    assert isinstance(error, ConstraintIgnored) and not error.retryable
    assert len(server.sent) == 1


# ollama-python #523: think=True and format: the content begins with a stray "{".
STRAY = ollama(
    line("{\n\n"), line('{\n\n"name": "Paris",\n'), line('"population": 2100000\n}\n\n  ')
)


async def test_ollama_stray_brace_is_the_servers(split: int | None) -> None:
    server = Server("ollama", split, STRAY)
    error, _ = await run(server, retry=Retry(max_attempts=3), reasoning_effort="high")
    assert isinstance(error, ConstraintIgnored)
    assert "stray '{'" in error.cause and error.offset == 3
    assert len(server.sent) == 1


# hindsight #1099: the whole answer in "thinking", "content" empty.
THOUGHT = ollama(line(thinking='{"name": "Paris", '), line(thinking='"population": 2100000}'))


async def test_ollama_answer_in_thinking_retries_with_think_false(split: int | None) -> None:
    server = Server("ollama", split, THOUGHT, OLLAMA_ANSWERED)
    value, attempts = await run(server, retry=Retry(max_attempts=2))
    assert value == PARIS
    assert isinstance(attempts[0].error, AnswerInReasoning)
    assert "think" not in server.sent[0] and server.sent[1]["think"] is False


async def test_both_cures_asked_for_allow_thinking_wins() -> None:
    # think=false ignored the format, then (thinking allowed) the answer came as a thought:
    # the third request may not turn thinking off again, and the stream stops there.
    server = Server("ollama", None, PLAIN, THOUGHT, OLLAMA_ANSWERED)
    error, attempts = await run(server, retry=Retry(max_attempts=4), reasoning_effort="none")
    assert [type(a.error) for a in attempts] == [ConstraintIgnored, AnswerInReasoning, type(None)]
    assert error == PARIS
    assert "think" not in server.sent[2]


# ---------------------------------------------------------------------------- the heuristics


@pytest.mark.parametrize(
    ("reasoning", "document"),
    [
        (' \n{"a": 1}\n', '{"a": 1}'),
        ("[1, 2]", "[1, 2]"),
        ('Let me think. {"a": 1}', None),  # a thought that quotes JSON
        ('{"a": 1} is my answer', None),
        ('{"a": 1', None),  # cut short: not a document
        ("42", None),  # a number alone is too likely a thought
        ("", None),
    ],
)
def test_what_counts_as_a_document_in_the_reasoning(reasoning: str, document: str | None) -> None:
    from sdk._stream._misroute import document_in_reasoning

    assert document_in_reasoning(reasoning) == document


@pytest.mark.parametrize(
    ("text", "offset", "server_fault"),
    [
        ("Hello", 0, True),
        ("  The answer", 3, True),  # 't' began "true"; 'h' broke it
        ("1. First", 2, True),
        ('{\n\n{"a"', 3, True),  # the stray brace
        ('{"a": 1,, ', 8, False),  # inside the document: the model's
        ('{"a": {{', 7, False),
        ('"a" b', 4, False),  # a string root, then junk: the model's
        ("", 0, False),
        ("Hello", None, False),
    ],
)
def test_what_no_mask_can_have_let_through(
    text: str, offset: int | None, server_fault: bool
) -> None:
    from sdk._stream._misroute import ignored_constraint

    assert (ignored_constraint(text, offset) is not None) == server_fault


def test_reasoning_fallback_is_a_bool() -> None:
    with pytest.raises(TypeError, match="reasoning_fallback must be True or False"):
        sdk.stream_structured(lambda a: None, schema=City, reasoning_fallback="yes")  # type: ignore[call-overload]


# ---------------------------------------------------------------------------- the bodies


@pytest.mark.parametrize(
    ("server", "sent"),
    [("llamacpp", {"enable_thinking": False}), ("vllm", {"enable_thinking": False})],
)
def test_no_thinking_is_sent_where_the_template_takes_it(server: Any, sent: Any) -> None:
    from sdk._backend import GenerationRequest
    from sdk._http.openai._chat_request import chat_body

    request = GenerationRequest(messages=(), schema=City.model_json_schema())
    cured = GenerationRequest(
        messages=(), schema=City.model_json_schema(), cures=frozenset({"no_thinking"})
    )
    assert "chat_template_kwargs" not in chat_body(request, model="m", server=server)
    assert chat_body(cured, model="m", server=server)["chat_template_kwargs"] == sent


@pytest.mark.parametrize("server", ["openai", None])
def test_no_thinking_is_not_sent_to_openai_or_an_unknown_server(server: Any) -> None:
    from sdk._backend import GenerationRequest
    from sdk._http.openai._chat_request import chat_body

    cured = GenerationRequest(
        messages=(), schema=City.model_json_schema(), cures=frozenset({"no_thinking"})
    )
    assert "chat_template_kwargs" not in chat_body(cured, model="m", server=server)


@pytest.mark.parametrize(
    ("cures", "think", "expected"),
    [
        ({"no_thinking"}, None, False),
        ({"no_thinking"}, "high", False),
        ({"allow_thinking"}, "none", None),  # no think=false
        ({"allow_thinking"}, "high", "high"),  # only a false is dropped
        ({"no_thinking", "allow_thinking"}, None, None),  # the constraint wins
    ],
)
def test_ollama_cures(cures: set[str], think: str | None, expected: Any) -> None:
    from sdk._backend import GenerationRequest
    from sdk._http.ollama._request import ollama_body

    parameters = {} if think is None else {"reasoning_effort": think}
    request = GenerationRequest(
        messages=(),
        schema=City.model_json_schema(),
        parameters=parameters,
        cures=frozenset(cures),
    )
    assert ollama_body(request, model="m").get("think", None) == expected
