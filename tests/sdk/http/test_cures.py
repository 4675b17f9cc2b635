"""The retry's cures in the bodies each backend writes (the table of ``docs/retries.md``,
``sdk._http._cures``), each cured body held to the server's published request schema; and
hostile streams in each server's recorded shape (OpenAI ``json_object``, vLLM, Ollama) that run
away, abort at the bound, and retry with the cure in the next request."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import BaseModel

from sdk import Client, RepeatedOutput, Retry, RunawayWhitespace
from sdk._backend import CURES, GenerationRequest
from sdk._http._cures import FREQUENCY_PENALTY, INSTRUCTIONS, REPEAT_PENALTY
from sdk._http.anthropic._request import anthropic_body
from sdk._http.gemini._request import gemini_body
from sdk._http.ollama._request import ollama_body
from sdk._http.openai._chat_request import chat_body
from sdk._http.openai._responses_request import responses_body
from tests.sdk._http_support import Body
from tests.sdk.http.openai._openai_types import openai_errors

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}
MESSAGES = ({"role": "user", "content": "Name?"},)
BOTH = frozenset({"compact_whitespace", "less_repetition"})
"""The runaway cures (the reasoning ones, ``no_thinking`` and ``allow_thinking``, are tested in
``test_reasoning_misroute.py``)."""


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(**{"messages": MESSAGES, "schema": SCHEMA, "max_tokens": 50, **kw})


def added(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What ``after`` has that ``before`` has not, key by key (one level into dicts)."""
    out: dict[str, Any] = {}
    for key, value in after.items():
        if key not in before:
            out[key] = value
        elif value != before[key] and isinstance(value, dict):
            out[key] = {k: v for k, v in value.items() if before[key].get(k) != v}
        elif value != before[key]:
            out[key] = value
    return out


def cured(build: Any, **kw: Any) -> dict[str, Any]:
    """What the cures add to the body ``build`` writes for ``request(**kw)``."""
    return added(build(request(**kw)), build(request(cures=BOTH, **kw)))


def test_the_cures_named_are_the_ones_the_table_speaks_of() -> None:
    assert set(CURES) == {*BOTH, "no_thinking", "allow_thinking"}
    assert RunawayWhitespace.cure == "compact_whitespace"
    assert RepeatedOutput.cure == "less_repetition"


# --- the table, wire by wire ------------------------------------------------------------------


def test_vllm_chat_disables_free_whitespace_and_penalises_frequency() -> None:
    def build(r: GenerationRequest) -> dict[str, Any]:
        return chat_body(r, model="m", server="vllm")

    assert cured(build) == {
        "structured_outputs": {"disable_any_whitespace": True},
        "frequency_penalty": FREQUENCY_PENALTY,
    }
    # A constraint already in structured_outputs keeps it: the option goes beside it.
    given = {"structured_outputs": {"regex": "[a-z]+"}}
    body = build(request(cures=BOTH, mode="none", extra=given))
    assert body["structured_outputs"] == {"regex": "[a-z]+", "disable_any_whitespace": True}


def test_llamacpp_swaps_a_user_grammar_for_its_bounded_schema_grammar() -> None:
    free = 'root ::= "{" ws "\\"name\\"" ws ":" ws "\\"x\\"" ws "}"\nws ::= [ \\t\\n]*'

    def build(r: GenerationRequest) -> dict[str, Any]:
        return chat_body(r, model="m", server="llamacpp")

    body = build(request(cures=BOTH, mode="none", extra={"grammar": free}))
    assert "grammar" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": SCHEMA},
    }
    assert body["frequency_penalty"] == FREQUENCY_PENALTY
    # The schema sent by the client is bounded by llama.cpp's converter already.
    assert cured(build) == {"frequency_penalty": FREQUENCY_PENALTY}
    # On /responses (llama.cpp turns it into a chat request) the same.
    body = responses_body(
        request(cures=BOTH, mode="none", extra={"grammar": free}), model="m", server="llamacpp"
    )
    assert "grammar" not in body and body["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("server", ["openai", None])
def test_openai_and_an_unnamed_server_get_a_frequency_penalty_on_chat_only(
    server: str | None,
) -> None:
    def chat(r: GenerationRequest) -> dict[str, Any]:
        return chat_body(r, model="m", server=server)  # type: ignore[arg-type]

    def responses(r: GenerationRequest) -> dict[str, Any]:
        return responses_body(r, model="m", server=server)  # type: ignore[arg-type]

    assert cured(chat) == {"frequency_penalty": FREQUENCY_PENALTY}
    assert cured(chat, mode="json_object") == {"frequency_penalty": FREQUENCY_PENALTY}
    assert cured(responses) == {}  # the Responses API has no frequency_penalty


def test_vllm_responses_gets_nothing() -> None:
    assert cured(lambda r: responses_body(r, model="m", server="vllm")) == {}


def test_gemini_ollama_and_anthropic() -> None:
    assert cured(gemini_body) == {"generationConfig": {"frequencyPenalty": FREQUENCY_PENALTY}}
    assert cured(lambda r: ollama_body(r, model="q")) == {
        "options": {"repeat_penalty": REPEAT_PENALTY}
    }
    # No setting of either: the instructions, in the system prompt.
    assert cured(lambda r: anthropic_body(r, model="c")) == {
        "system": [
            {
                "type": "text",
                "text": f"{INSTRUCTIONS['compact_whitespace']} {INSTRUCTIONS['less_repetition']}",
            }
        ]
    }


@pytest.mark.parametrize("cure", sorted(BOTH))
def test_anthropic_appends_each_instruction_after_the_callers_system_prompt(cure: str) -> None:
    messages = ({"role": "system", "content": "Be brief."}, *MESSAGES)
    plain = anthropic_body(request(messages=messages), model="c")
    body = anthropic_body(request(messages=messages, cures=frozenset({cure})), model="c")
    assert body["system"] == [*plain["system"], {"type": "text", "text": INSTRUCTIONS[cure]}]
    assert {k: v for k, v in body.items() if k != "system"} == {
        k: v for k, v in plain.items() if k != "system"
    }
    # The caller's own system (a string in extra=) is kept, first.
    given = anthropic_body(
        request(cures=frozenset({cure}), extra={"system": "Be brief."}), model="c"
    )
    assert given["system"] == [
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": INSTRUCTIONS[cure]},
    ]
    # The reasoning cures have no equivalent on Anthropic: nothing changes.
    for other in ("no_thinking", "allow_thinking"):
        assert anthropic_body(request(cures=frozenset({other})), model="c") == anthropic_body(
            request(), model="c"
        )


@pytest.mark.parametrize("mode", ["json_schema", "tool", "json_object"])
def test_cured_anthropic_bodies_are_anthropics_request_type(mode: str) -> None:
    anthropic_types = pytest.importorskip("anthropic.types.message_create_params")
    messages = ({"role": "system", "content": "Be brief."}, *MESSAGES)
    body = anthropic_body(request(messages=messages, mode=mode, cures=BOTH), model="c")
    assert len(body["system"]) == 2
    assert openai_errors(body, anthropic_types.MessageCreateParamsStreaming) == []


def test_a_value_the_caller_set_is_kept() -> None:
    r = request(cures=BOTH, extra={"frequency_penalty": 0.1})
    assert chat_body(r, model="m", server="vllm")["frequency_penalty"] == 0.1
    r = request(cures=BOTH, extra={"options": {"repeat_penalty": 1.05}})
    assert ollama_body(r, model="q")["options"]["repeat_penalty"] == 1.05
    r = request(cures=BOTH, extra={"generationConfig": {"frequencyPenalty": 0.2}})
    assert gemini_body(r)["generationConfig"]["frequencyPenalty"] == 0.2
    r = request(cures=BOTH, extra={"structured_outputs": {"disable_any_whitespace": False}})
    assert chat_body(r, model="m", server="vllm")["structured_outputs"] == {
        "disable_any_whitespace": False
    }


def test_no_cure_changes_nothing() -> None:
    for build in (
        lambda r: chat_body(r, model="m", server="vllm"),
        lambda r: chat_body(r, model="m", server="llamacpp"),
        gemini_body,
        lambda r: ollama_body(r, model="q"),
        lambda r: anthropic_body(r, model="c"),
    ):
        assert build(request()) == build(request(cures=frozenset()))


# --- held to what each server reads -----------------------------------------------------------

# vLLM's StructuredOutputsParams (vllm/sampling_params.py): the options beside the constraint.
VLLM_STRUCTURED_OUTPUTS = {
    "json",
    "regex",
    "choice",
    "grammar",
    "json_object",
    "structural_tag",
    "disable_fallback",
    "disable_any_whitespace",
    "disable_additional_properties",
    "whitespace_pattern",
}


@pytest.mark.parametrize("server", ["openai", "vllm", "llamacpp", None])
def test_cured_chat_bodies_are_openais_format_once_extensions_are_set_apart(
    server: str | None,
) -> None:
    body = copy.deepcopy(chat_body(request(cures=BOTH), model="m", server=server))  # type: ignore[arg-type]
    if server == "vllm":
        assert set(body.pop("structured_outputs")) <= VLLM_STRUCTURED_OUTPUTS
    assert openai_errors(body, CompletionCreateParamsStreaming) == []


def test_cured_gemini_and_ollama_bodies_are_their_servers_models() -> None:
    from tests.sdk.http.gemini.test_gemini import genai_errors
    from tests.sdk.http.ollama.test_ollama import model_errors, ollama_types

    assert genai_errors(gemini_body(request(cures=BOTH))) == []
    assert model_errors(ollama_body(request(cures=BOTH), model="q"), ollama_types.ChatRequest) == []


# --- hostile streams, each server's shape -----------------------------------------------------


class Person(BaseModel):
    name: str


class Replay:
    """A mock server: each request gets the next body; records each request's JSON."""

    def __init__(self, content_type: str, *answers: list[bytes]) -> None:
        self.content_type = content_type
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []
        self.bodies: list[Body] = []

    def __call__(self, req: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(req.content))
        body = Body(self.answers.pop(0))
        self.bodies.append(body)
        return httpx.Response(200, headers={"content-type": self.content_type}, stream=body)

    def http(self, base: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=base)


def sse(*pieces: str, finish: str = "stop") -> list[bytes]:
    """Chat Completions chunks as OpenAI streams them: a role chunk, one content chunk per
    piece, the finish chunk, ``[DONE]``."""

    def event(delta: dict[str, Any], reason: str | None = None) -> bytes:
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    return [
        event({"role": "assistant", "content": ""}),
        *(event({"content": p}) for p in pieces),
        event({}, finish),
        b"data: [DONE]\n\n",
    ]


NEWLINES = ["{", *["\n"] * 4000]  # json_object mode's "unending stream of whitespace"
GOOD = ['{"name":', '"Ada"}']


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("server", "mode", "expected"),
    [
        (None, "json_object", {}),  # OpenAI json_object: no setting, the feedback asks
        ("vllm", "json_schema", {"structured_outputs": {"disable_any_whitespace": True}}),
    ],
)
async def test_a_whitespace_runaway_aborts_and_the_retry_sends_the_cure(
    server: str | None, mode: str, expected: dict[str, Any]
) -> None:
    replay = Replay("text/event-stream", sse(*NEWLINES, finish="length"), sse(*GOOD))
    options: dict[str, Any] = {} if server is None else {"server": server}
    client = Client(
        base_url="http://s.test/v1",
        model="m",
        http_client=replay.http("http://s.test/v1"),
        **options,
    )
    async with (
        client,
        client.stream(
            messages=list(MESSAGES), schema=Person, mode=mode, retry=Retry(max_attempts=2, jitter=0)
        ) as s,
    ):
        assert await s.result() == Person(name="Ada")
    error = s.attempts[0].error
    assert isinstance(error, RunawayWhitespace) and error.length == 41  # depth 1: 32 + 8 allowed
    first, second = replay.sent
    assert replay.bodies[0].closed and replay.bodies[0].pulled < 60  # of 4004 events
    assert added(first, second).get("structured_outputs") == expected.get("structured_outputs")
    assert "whitespace without end" in second["messages"][-1]["content"]


@pytest.mark.anyio
async def test_an_ollama_loop_aborts_and_the_retry_asks_for_a_repeat_penalty() -> None:
    def line(content: str = "", done: bool = False) -> bytes:
        message = {"role": "assistant", "content": content}
        fields: dict[str, Any] = {"model": "q", "message": message, "done": done}
        if done:
            fields.update(done_reason="length", prompt_eval_count=5, eval_count=400)
        return (json.dumps(fields) + "\n").encode()

    loop = [line('{"name": "Bacon'), *(line(" and bacon") for _ in range(400)), line(done=True)]
    replay = Replay("application/x-ndjson", loop, [line(p) for p in GOOD] + [line(done=True)])
    client = Client(provider="ollama", model="q", http_client=replay.http("http://o.test"))
    async with (
        client,
        client.stream(
            messages=list(MESSAGES), schema=Person, retry=Retry(max_attempts=2, jitter=0)
        ) as s,
    ):
        assert await s.result() == Person(name="Ada")
    error = s.attempts[0].error
    assert isinstance(error, RepeatedOutput) and error.pointer == "/name"
    assert replay.bodies[0].closed and replay.bodies[0].pulled < 40  # of 402 lines
    first, second = replay.sent
    assert "options" not in first or "repeat_penalty" not in first["options"]
    assert second["options"]["repeat_penalty"] == REPEAT_PENALTY
