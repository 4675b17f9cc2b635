"""Prose under a constraint the server claims to mask, on every backend that claims one
(docs/reasoning.md's table): the OpenAI Responses API (llama.cpp's /responses ignores
``text.format``), the caller's own ``openai`` client (Chat and Responses), Anthropic
(``output_config.format``, where a refusal is prose too), Gemini (``responseMimeType``; with a
tool beside it, the call written as text: go-genai #488), each over httpx and over its vendor
SDK; and the local engine, whose mask is ours. Each stream is in its server's recorded shape,
whole and in random splits, on asyncio and trio; each checks what is raised, that a server with
no fix is not asked again, and that a mistake inside the document is still the model's."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import sdk
from sdk import Client, ConstraintIgnored, OutputSyntaxError, Retry
from sdk._backend import GenerationRequest, TextChunks
from sdk._http.anthropic._cures import REFUSAL, anthropic_policy
from sdk._http.anthropic._request import anthropic_body
from sdk._http.gemini._cures import TOOL_BESIDE, gemini_policy
from sdk._http.gemini._request import gemini_body
from sdk._http.openai._cures import IGNORED_FORMAT, openai_policy
from sdk._server_policy import ServerPolicy
from tests.sdk._http_support import DOC, MESSAGES, PARIS, Body, City, pieces

pytestmark = pytest.mark.anyio

RETRY = Retry(max_attempts=3, jitter=0, backoff=0)


@pytest.fixture(params=[None, 1, 2], ids=["whole", "split1", "split2"])
def split(request: pytest.FixtureRequest) -> int | None:
    value: int | None = request.param
    return value


class Server:
    """Answers each request with the next body (event-stream bytes), cut as ``split`` says;
    keeps each request's JSON."""

    def __init__(self, split: int | None, *answers: bytes) -> None:
        self.split = split
        self.answers = list(answers)
        self.sent: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(request.content))
        body = Body(pieces(self.answers.pop(0), self.split))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    def http(self, base: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=base)


def httpx2_client(server: Server) -> Any:
    """An ``httpx2.AsyncClient`` (the vendor SDKs' HTTP client) answered by ``server``."""
    httpx2 = pytest.importorskip("httpx2")

    async def handler(request: Any) -> Any:
        sent = httpx.Request(request.method, str(request.url), content=request.content)
        answer = server(sent)
        return httpx2.Response(
            answer.status_code, headers=dict(answer.headers), content=await answer.aread()
        )

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def run(client: Client, **options: Any) -> tuple[Any, list[sdk.AttemptInfo]]:
    """The result (or the error) and the attempts."""
    outcome: Any
    async with client:
        s = client.stream(messages=MESSAGES, schema=City, retry=RETRY, **options)
        try:
            async with s:
                outcome = await s.result()
        except sdk.StreamError as exc:
            outcome = exc
    return outcome, s.attempts


def ignored(error: object, server: str) -> ConstraintIgnored:
    """``error`` as a ConstraintIgnored of ``server``'s, not retried, its cause the parser's."""
    assert isinstance(error, ConstraintIgnored) and isinstance(error, OutputSyntaxError)
    assert (error.server, error.cure, error.retryable) == (server, None, False)
    assert "the server returned prose under a schema it claims to apply" in str(error)
    assert type(error.__cause__) is OutputSyntaxError
    return error


# ---------------------------------------------------------------- OpenAI's Responses API


def responses(*texts: str) -> bytes:
    """A Responses API stream whose output text is ``texts`` (as llama.cpp's /responses
    streams it: no sequence numbers, no output index)."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "r1"}}]
    events += [{"type": "response.output_text.delta", "delta": t} for t in texts]
    events.append({"type": "response.completed", "response": {"status": "completed"}})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


# llama.cpp's /responses turns the body into a chat request and ignores text.format (issue 20).
IGNORED_TEXT_FORMAT = responses("The capital of France is Paris, ", "home to 2.1 million people.")
ANSWERED = responses(*DOC.split(" "))


def responses_client(replay: Server, **options: Any) -> Client:
    url = "http://llm.test/v1"
    http = replay.http(url)
    return Client(
        base_url=url, api="responses", model="m", api_key="k", http_client=http, **options
    )


async def test_responses_prose_on_a_server_not_named_says_the_format_was_ignored(
    split: int | None,
) -> None:
    server = Server(split, IGNORED_TEXT_FORMAT, ANSWERED)
    error, _ = await run(responses_client(server))
    error = ignored(error, "the server")
    assert IGNORED_FORMAT in str(error) and "server='llamacpp'" in str(error)
    assert error.offset == 0 and "('The capital of France" in error.cause
    assert len(server.sent) == 1  # not asked again: it would ignore it again


@pytest.mark.parametrize("server_name", ["openai", "vllm"])
async def test_responses_prose_on_a_named_server_is_its_fault(
    split: int | None, server_name: str
) -> None:
    server = Server(split, IGNORED_TEXT_FORMAT, ANSWERED)
    error, _ = await run(responses_client(server, server=server_name))
    error = ignored(error, {"openai": "OpenAI", "vllm": "vLLM"}[server_name])
    assert IGNORED_FORMAT not in str(error)
    assert server.sent[0]["text"]["format"]["type"] == "json_schema"
    assert len(server.sent) == 1


async def test_responses_a_mistake_inside_the_document_is_the_models(split: int | None) -> None:
    server = Server(split, responses('{"name": "Paris",, '), ANSWERED)
    value, attempts = await run(responses_client(server, server="openai"))
    assert value == PARIS
    assert type(attempts[0].error) is OutputSyntaxError and len(server.sent) == 2


async def test_responses_prose_when_the_caller_sent_their_own_format_is_the_models() -> None:
    server = Server(None, IGNORED_TEXT_FORMAT, ANSWERED)
    client = responses_client(server, server="openai")
    value, attempts = await run(client, extra_body={"text": {"format": {"type": "text"}}})
    assert value == PARIS and type(attempts[0].error) is OutputSyntaxError


def test_the_openai_policy_by_api_and_server() -> None:
    def policy(api: Any, server: Any = None, **kw: Any) -> ServerPolicy:
        request = GenerationRequest(messages=tuple(MESSAGES), schema={"type": "object"}, **kw)
        return openai_policy(request, server, api)

    assert policy("responses").masked and policy("responses").detail == IGNORED_FORMAT
    assert policy("responses", mode="json_object").masked
    assert not policy("responses", mode="tool").masked
    assert not policy("responses", mode="none").masked
    assert policy("responses", "llamacpp").detail == ""
    assert not policy("responses", "llamacpp", extra={"response_format": {}}).masked
    assert policy("responses", "llamacpp", extra={"text": {}}).masked  # llama.cpp ignores it
    assert policy("chat").masked and policy("chat").detail == ""
    assert [policy("chat", s).server for s in ("sglang", "tgi", None)] == [
        "SGLang",
        "TGI",
        "the server",
    ]
    assert not policy("chat", extra={"response_format": {"type": "text"}}).masked
    # The reasoning cure is Chat Completions' (chat_template_kwargs).
    assert policy("chat", "vllm").reasoning_cure == "no_thinking"
    assert policy("responses", "vllm").reasoning_cure is None


# ---------------------------------------------------------------- the caller's openai client


def chat(*deltas: dict[str, Any]) -> bytes:
    """A Chat Completions stream as vLLM writes it."""
    out = []
    for delta in [{"role": "assistant", "content": ""}, *deltas]:
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
        out.append(f"data: {json.dumps(chunk)}\n\n")
    last = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    last["choices"] = [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    out.append(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n")
    return "".join(out).encode()


CHAT_PROSE = chat({"content": "Sure! Here is the city: "}, {"content": DOC})
CHAT_ANSWERED = chat(*({"content": p} for p in DOC.split(" ")))


def from_openai(replay: Server, **options: Any) -> Client:
    openai = pytest.importorskip("openai")
    caller = openai.AsyncOpenAI(
        api_key="sk-user", base_url="http://oai.test/v1", http_client=httpx2_client(replay)
    )
    return Client.from_openai(caller, model="m", **options)


async def test_from_openai_chat_prose_is_the_servers(split: int | None) -> None:
    server = Server(split, CHAT_PROSE, CHAT_ANSWERED)
    error, _ = await run(from_openai(server, server="vllm"))
    ignored(error, "vLLM")
    assert len(server.sent) == 1


async def test_from_openai_chat_answer_in_reasoning_retries_with_thinking_off(
    split: int | None,
) -> None:
    # llama.cpp #20345, through the caller's client: the policy names the server's fix.
    thought = chat(
        {"reasoning_content": '{"name": "Paris", '}, {"reasoning_content": '"population": 2100000}'}
    )
    server = Server(split, thought, CHAT_ANSWERED)
    value, attempts = await run(from_openai(server, server="llamacpp"))
    assert value == PARIS
    assert isinstance(attempts[0].error, sdk.AnswerInReasoning)
    assert server.sent[1]["chat_template_kwargs"] == {"enable_thinking": False}


async def test_from_openai_responses_prose_says_the_format_was_ignored(split: int | None) -> None:
    server = Server(split, IGNORED_TEXT_FORMAT, ANSWERED)
    error, _ = await run(from_openai(server, api="responses"))
    assert IGNORED_FORMAT in str(ignored(error, "the server"))
    assert len(server.sent) == 1


async def test_from_openai_a_mistake_inside_the_document_is_the_models() -> None:
    server = Server(None, chat({"content": '{"name": "Paris",, '}), CHAT_ANSWERED)
    value, attempts = await run(from_openai(server, server="vllm"))
    assert value == PARIS and type(attempts[0].error) is OutputSyntaxError


# ---------------------------------------------------------------- Anthropic


def anthropic_stream(*texts: str, stop_reason: str = "end_turn", **delta: Any) -> bytes:
    """A Messages API stream of one text block (``texts``), stopping for ``stop_reason``."""

    def event(kind: str, **fields: Any) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()

    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant"}
    message.update(content=[], model="claude-test", stop_reason=None, usage={"input_tokens": 10})
    out = [
        event("message_start", message=message),
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        *(
            event("content_block_delta", index=0, delta={"type": "text_delta", "text": t})
            for t in texts
        ),
        event("content_block_stop", index=0),
        event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None, **delta},
            usage={"output_tokens": 12},
        ),
        event("message_stop"),
    ]
    return b"".join(out)


# A streaming refusal (Anthropic's "handle streaming refusals" guide): the refusal is text, and
# its stop_reason comes only at the end. Under output_config.format the same prose is what a
# format not applied would write: the client cannot wait for the end to tell them apart.
REFUSED = anthropic_stream("I can't help with", " that request.", stop_reason="refusal")
CLAUDE_ANSWERED = anthropic_stream(*DOC.split(" "))


def anthropic_client(server: Server) -> Client:
    url = "http://anthropic.test"
    return Client(
        provider="anthropic", model="claude-test", api_key="k", http_client=server.http(url)
    )


def anthropic_on_vertex(server: Server) -> Client:
    return Client(
        provider="anthropic",
        platform="vertex",
        region="us-east5",
        project_id="my-project",
        access_token="ya29.token",
        model="claude-sonnet-4-5@20250929",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
    )


def from_anthropic(server: Server) -> Client:
    anthropic = pytest.importorskip("anthropic")
    caller = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url="http://anthropic.test", http_client=httpx2_client(server)
    )
    return Client.from_anthropic(caller, model="claude-test")


@pytest.mark.parametrize(
    "make", [anthropic_client, from_anthropic, anthropic_on_vertex], ids=["httpx", "sdk", "vertex"]
)
async def test_anthropic_prose_under_output_config_is_the_servers_or_a_refusal(
    split: int | None, make: Any
) -> None:
    server = Server(split, REFUSED, CLAUDE_ANSWERED)
    error, _ = await run(make(server))
    error = ignored(error, "Anthropic")
    assert REFUSAL in str(error) and "I can't help with" in error.cause
    assert server.sent[0]["output_config"]["format"]["type"] == "json_schema"
    assert len(server.sent) == 1  # neither a refusal nor a dropped format is asked again


@pytest.mark.parametrize("make", [anthropic_client, from_anthropic], ids=["httpx", "sdk"])
async def test_anthropic_prose_without_a_format_is_the_models_and_retried(make: Any) -> None:
    server = Server(None, anthropic_stream("Sure! ", DOC), CLAUDE_ANSWERED)
    value, attempts = await run(make(server), mode="json_object")  # no format: nothing masks
    assert value == PARIS and type(attempts[0].error) is OutputSyntaxError
    assert "output_config" not in server.sent[0]


@pytest.mark.parametrize(
    "make", [anthropic_client, from_anthropic, anthropic_on_vertex], ids=["httpx", "sdk", "vertex"]
)
async def test_anthropic_a_loop_is_retried_with_the_instruction_in_the_system_prompt(
    make: Any,
) -> None:
    from sdk._http._cures import INSTRUCTIONS

    loop = anthropic_stream('{"name": "Bacon', *([" and bacon"] * 200), stop_reason="max_tokens")
    server = Server(None, loop, CLAUDE_ANSWERED)
    value, attempts = await run(make(server))
    assert value == PARIS and isinstance(attempts[0].error, sdk.RepeatedOutput)
    first, second = server.sent
    assert "system" not in first
    assert second["system"] == [{"type": "text", "text": INSTRUCTIONS["less_repetition"]}]
    assert {k: v for k, v in second.items() if k not in ("system", "messages")} == {
        k: v for k, v in first.items() if k != "messages"
    }


async def test_anthropic_a_mistake_inside_the_document_is_the_models() -> None:
    server = Server(None, anthropic_stream('{"name": "Paris",, '), CLAUDE_ANSWERED)
    value, attempts = await run(anthropic_client(server))
    assert value == PARIS and type(attempts[0].error) is OutputSyntaxError


def test_the_anthropic_policy() -> None:
    def policy(**kw: Any) -> ServerPolicy:
        schema: dict[str, Any] = kw.pop("schema", City.model_json_schema())
        request = GenerationRequest(messages=tuple(MESSAGES), schema=schema, **kw)
        return anthropic_policy(anthropic_body(request, model="c"), request)

    assert policy().masked and policy().detail == REFUSAL
    assert not policy(mode="tool").masked  # a strict tool's input: a call, not diagnosed
    assert not policy(mode="json_object").masked and not policy(mode="none").masked
    assert not policy(extra={"output_config": {}}).masked  # the caller's own: no format
    # A schema outside the subset is sent without output_config: nothing masks it.
    assert not policy(schema={"type": "object", "patternProperties": {"^a": {}}}).masked


# ---------------------------------------------------------------- Gemini


def gemini_stream(*texts: str) -> bytes:
    """A streamGenerateContent stream (``alt=sse``) of ``texts``, the last finishing."""

    def record(text: str, last: bool) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        candidate["index"] = 0
        if last:
            candidate["finishReason"] = "STOP"
        out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
        if last:
            out["usageMetadata"] = {"promptTokenCount": 9, "candidatesTokenCount": 20}
        return b"data: " + json.dumps(out).encode() + b"\r\n\r\n"

    return b"".join(record(t, i == len(texts) - 1) for i, t in enumerate(texts))


# go-genai #488: responseSchema beside the google_search tool; the text is the tool's call.
SEARCH_CALL = gemini_stream("<ctrl42>call:google_search.search{queries:\n  [\n    ]\n}", "<ctrl43>")
GEMINI_ANSWERED = gemini_stream(*DOC.split(" "))
SEARCH: dict[str, Any] = {"tools": [{"googleSearch": {}}]}


def gemini_client(server: Server) -> Client:
    http = server.http("http://gemini.test")
    return Client(provider="gemini", model="gemini-2.5-flash", api_key="k", http_client=http)


def from_genai(server: Server) -> Client:
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")

    async def handler(request: httpx.Request) -> httpx.Response:
        answer = server(request)
        return httpx.Response(
            answer.status_code, headers=dict(answer.headers), content=await answer.aread()
        )

    options = types.HttpOptions(
        api_version="v1beta",
        base_url="http://gemini.test",
        httpx_async_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    caller = genai.Client(api_key="k", http_options=options)
    return Client.from_genai(caller, model="gemini-2.5-flash")


@pytest.mark.parametrize("make", [gemini_client, from_genai], ids=["httpx", "sdk"])
async def test_gemini_a_tool_beside_the_schema_writes_its_call_as_text(
    split: int | None, make: Any
) -> None:
    server = Server(split, SEARCH_CALL, GEMINI_ANSWERED)
    error, _ = await run(make(server), extra_body=SEARCH)
    error = ignored(error, "Gemini")
    assert TOOL_BESIDE in str(error) and "('<ctrl42>call:google_search" in error.cause
    assert server.sent[0]["generationConfig"]["responseMimeType"] == "application/json"
    assert server.sent[0]["tools"] == [{"googleSearch": {}}]
    assert len(server.sent) == 1


@pytest.mark.parametrize("make", [gemini_client, from_genai], ids=["httpx", "sdk"])
async def test_gemini_prose_under_the_schema_is_the_servers(make: Any) -> None:
    server = Server(None, gemini_stream("Paris is the capital", " of France."), GEMINI_ANSWERED)
    error, _ = await run(make(server))
    assert ignored(error, "Gemini").cause.startswith("prose at the start")
    assert TOOL_BESIDE not in str(error) and len(server.sent) == 1


async def test_gemini_prose_without_a_mime_type_is_the_models() -> None:
    server = Server(None, gemini_stream("Sure! ", DOC), GEMINI_ANSWERED)
    value, attempts = await run(gemini_client(server), mode="none")
    assert value == PARIS and type(attempts[0].error) is OutputSyntaxError


def test_the_gemini_policy() -> None:
    def body(**kw: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"a": {"type": "string"}}}
        return gemini_body(GenerationRequest(messages=tuple(MESSAGES), schema=schema, **kw))

    assert gemini_policy(body()).masked and gemini_policy(body()).detail == ""
    assert gemini_policy(body(mode="json_object")).masked
    assert not gemini_policy(body(mode="tool")).masked  # our functionDeclarations: a call
    assert not gemini_policy(body(mode="none")).masked
    assert gemini_policy(body(extra=SEARCH)).detail == TOOL_BESIDE
    flat = {**body()["generationConfig"], **SEARCH}  # google-genai's config, as sent
    assert gemini_policy(flat).masked and gemini_policy(flat).detail == TOOL_BESIDE


# ---------------------------------------------------------------- the local engine


def test_the_local_engine_claims_its_own_mask() -> None:
    pytest.importorskip("numpy")
    from sdk._local._backend import LOCAL_ENGINE, OWN_MASK, LocalBackend, local_policy

    def request(**kw: Any) -> GenerationRequest:
        return GenerationRequest(messages=tuple(MESSAGES), schema={"type": "object"}, **kw)

    assert local_policy(request()) == ServerPolicy(LOCAL_ENGINE, True, detail=OWN_MASK)
    assert local_policy(request(mode="json_object")).masked
    assert not local_policy(request(mode="none")).masked
    assert not local_policy(request(constraint=sdk.Regex("[a-z]+"))).masked
    generation = LocalBackend().generate(request())  # nothing is loaded before the first read
    assert getattr(generation, "server_policy", None) == local_policy(request())


class ProseUnderOurMask:
    """A backend whose generation says what the local engine says of its mask, and writes
    prose: what only a bug in the engine's mask could let through."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, request: GenerationRequest) -> TextChunks:
        from sdk._local._backend import local_policy

        self.calls += 1

        async def chunks() -> Any:
            yield "Sure, here is "
            yield DOC

        out = TextChunks(chunks())
        out.server_policy = local_policy(request)
        return out

    async def aclose(self) -> None:
        pass


async def test_prose_under_the_local_engines_mask_is_named_a_bug_of_ours() -> None:
    pytest.importorskip("numpy")
    from sdk._local._backend import LOCAL_ENGINE, OWN_MASK

    backend = ProseUnderOurMask()
    error, _ = await run(Client.from_backend(backend))
    error = ignored(error, LOCAL_ENGINE)
    assert OWN_MASK in str(error) and "a bug of fieldstream's" in str(error)
    assert backend.calls == 1
