"""The Gemini backend: request bodies checked against ``google-genai``'s own models (unknown
keys refused) and compared with the body that package sends for the same request; streams
read as that package reads the same bytes; finish reasons, errors, abort and early retry on
the wire."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import sdk
from sdk import Client, Retry
from sdk._backend import Delta, GenerationRequest
from sdk._constraints import Tool, tools_of
from sdk._errors import (
    BackendError,
    BadRequestError,
    ContentFilteredError,
    OutputSyntaxError,
    RateLimitError,
    SchemaViolation,
    StreamUsageError,
    TruncatedError,
    UnsupportedConstraint,
)
from sdk._http.gemini._backend import GeminiBackend
from sdk._http.gemini._messages import gemini_contents
from sdk._http.gemini._request import check_gemini_request, gemini_body
from sdk._http.gemini._schema import gemini_schema
from tests.sdk._http_support import Body

genai = pytest.importorskip("google.genai", reason="google-genai is a dev dependency")
from google.genai import types  # noqa: E402

pytestmark = pytest.mark.anyio

URL = "http://gemini.test"
MESSAGES = [{"role": "user", "content": "Where?"}]


class City(BaseModel):
    name: str
    population: int


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 9}, "n": {"type": "integer"}},
    "required": ["name"],
}
CHAT = (
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Which city?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"q": 1}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
)


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(**{"messages": CHAT, "schema": SCHEMA, **kw})


# ---------------------------------------------------------------- bodies


def genai_errors(body: dict[str, Any]) -> list[str]:
    """``body`` read by google-genai's REST models (camelCase, unknown keys forbidden)."""
    parts = {
        "contents": lambda v: [types.Content.model_validate(c) for c in v],
        "systemInstruction": types.Content.model_validate,
        "generationConfig": types.GenerationConfig.model_validate,
        "tools": lambda v: [types.Tool.model_validate(t) for t in v],
        "toolConfig": types.ToolConfig.model_validate,
    }
    errors = [f"body.{k}: unknown parameter" for k in body if k not in parts]
    for key, check in parts.items():
        if key in body:
            try:
                check(body[key])
            except Exception as exc:  # pydantic's ValidationError
                errors.append(f"body.{key}: {exc}")
    return errors


async def sent_by_genai(contents: Any, config: types.GenerateContentConfig) -> httpx.Request:
    """The request google-genai sends for ``contents`` and ``config``."""
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text="")

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = genai.Client(
        api_key="k", http_options=types.HttpOptions(api_version="v1beta", httpx_async_client=http)
    )
    async for _ in await client.aio.models.generate_content_stream(
        model="gemini-2.5-flash", contents=contents, config=config
    ):
        pass
    await http.aclose()
    return seen[0]


def as_rest(sent: httpx.Request) -> Any:
    """A body google-genai sent, with the two fields it writes in their proto names
    (``mime_type``, ``parameters_json_schema``) in the JSON names Gemini's REST reference uses
    (``mimeType``, ``parametersJsonSchema``); the API reads either."""
    text = sent.content.decode()
    text = text.replace('"mime_type"', '"mimeType"')
    return json.loads(text.replace('"parameters_json_schema"', '"parametersJsonSchema"'))


def tools() -> tuple[Tool, ...]:
    return tools_of(
        [
            Tool("look", {"type": "object", "properties": {"q": {"type": "integer"}}}),
            Tool("city", SCHEMA, description="A city."),
        ]
    )


BODIES = {
    "json_schema": request(max_tokens=9, temperature=0.5, top_p=0.9, seed=1),
    "json_object": request(mode="json_object"),
    "tool": request(mode="tool"),
    "tools": request(mode="tool", tools=tools()),
    "tools auto": request(mode="tool", tools=tools(), tool_choice="auto"),
    "tools none": request(mode="tool", tools=tools(), tool_choice="none"),
    "tools named": request(
        mode="tool", tools=tools(), tool_choice={"type": "function", "function": {"name": "city"}}
    ),
    "extra": request(extra={"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_bodies_are_genais_request_models(name: str) -> None:
    assert genai_errors(gemini_body(BODIES[name])) == []


def test_the_model_check_refuses_unknown_keys() -> None:
    body = gemini_body(request())
    assert genai_errors({**body, "response_format": {}}) == [
        "body.response_format: unknown parameter"
    ]
    bad = {**body, "generationConfig": {"responseSchemaJson": {}}}
    assert genai_errors(bad)


async def test_the_body_is_the_one_google_genai_sends() -> None:
    ours = gemini_body(BODIES["json_schema"])
    contents = [
        types.Content(
            role="user",
            parts=[
                types.Part(text="Which city?"),
                types.Part(
                    inline_data=types.Blob(
                        mime_type="image/png", data=base64.b64decode("iVBORw0KGgo=")
                    )
                ),
            ],
        ),
        types.Content(
            role="model",
            parts=[
                types.Part(text="Looking."),
                types.Part(function_call=types.FunctionCall(id="c1", name="look", args={"q": 1})),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="look", response={"result": "Paris"}
                    )
                )
            ],
        ),
    ]
    config = types.GenerateContentConfig(
        system_instruction="Be brief.",
        max_output_tokens=9,
        temperature=0.5,
        top_p=0.9,
        seed=1,
        response_mime_type="application/json",
        response_json_schema=gemini_schema(SCHEMA),
    )
    theirs = await sent_by_genai(contents, config)
    assert as_rest(theirs) == ours
    backend = GeminiBackend(api_key="k")
    assert backend.url_for("gemini-2.5-flash") == str(theirs.url)
    assert backend.headers["x-goog-api-key"] == theirs.headers["x-goog-api-key"]


async def test_a_forced_tool_is_the_one_google_genai_sends() -> None:
    ours = gemini_body(BODIES["tools named"])
    declarations = [
        types.FunctionDeclaration(
            name="look",
            parameters_json_schema={"type": "object", "properties": {"q": {"type": "integer"}}},
        ),
        types.FunctionDeclaration(
            name="city", description="A city.", parameters_json_schema=gemini_schema(SCHEMA)
        ),
    ]
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)],
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode="ANY", allowed_function_names=["city"]
            )
        ),
    )
    theirs = as_rest(await sent_by_genai("x", config))
    assert ours["tools"] == theirs["tools"]
    assert ours["toolConfig"] == theirs["toolConfig"]


def test_tool_choice() -> None:
    modes = {
        name: gemini_body(BODIES[name])["toolConfig"]["functionCallingConfig"]
        for name in ("tool", "tools", "tools auto", "tools none", "tools named")
    }
    assert modes == {
        "tool": {"mode": "ANY", "allowedFunctionNames": ["response"]},
        "tools": {"mode": "ANY"},
        "tools auto": {"mode": "AUTO"},
        "tools none": {"mode": "NONE"},
        "tools named": {"mode": "ANY", "allowedFunctionNames": ["city"]},
    }


def test_the_subset() -> None:
    assert gemini_schema(SCHEMA)["properties"]["name"] == {
        "type": "string",
        "description": "{maxLength: 9}",
    }
    assert gemini_schema({"oneOf": [{"type": "string", "format": "email"}]}) == {
        "anyOf": [{"type": "string", "description": "{format: 'email'}"}]
    }
    assert gemini_schema({"type": "integer", "minimum": 1, "maximum": 3}) == {
        "type": "integer",
        "minimum": 1,
        "maximum": 3,
    }
    assert gemini_schema({"enum": [1, "a", None]}) == {"description": "{enum: [1, 'a', None]}"}


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        ([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}], "after"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x"}}],
                }
            ],
            "data: URL",
        ),
        ([{"role": "tool", "tool_call_id": "nope", "content": "x"}], "earlier assistant turn"),
        ([{"role": "user", "name": "bob", "content": "x"}], "'name'"),
        ([{"role": "function", "content": "x"}], "role 'function'"),
    ],
)
def test_what_has_no_equivalent_is_refused(messages: list[dict[str, Any]], said: str) -> None:
    with pytest.raises(StreamUsageError, match=said):
        gemini_contents(messages)


def test_native_contents_pass_as_they_are() -> None:
    native = [
        {
            "role": "user",
            "parts": [{"fileData": {"fileUri": "gs://b/f.pdf", "mimeType": "application/pdf"}}],
        }
    ]
    assert gemini_contents(native) == (None, native)


# ---------------------------------------------------------------- streams


def record(
    *parts: dict[str, Any], finish: str | None = None, usage: bool = False, **more: Any
) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", **more}
    if usage:
        out["usageMetadata"] = {
            "promptTokenCount": 12,
            "candidatesTokenCount": 6,
            "thoughtsTokenCount": 4,
            "totalTokenCount": 22,
        }
    return b"data: " + json.dumps(out).encode() + b"\r\n\r\n"


CITY = ['{"name": "Par', 'is", "population": 2', "100000}"]
GOOD = [record({"text": p}) for p in CITY[:-1]] + [
    record({"text": CITY[-1]}, finish="STOP", usage=True)
]


class Server:
    def __init__(self, *answers: list[bytes] | httpx.Response) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.bodies: list[Body] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, httpx.Response):
            return answer
        body = Body(answer)
        self.bodies.append(body)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    def client(self) -> Client:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=URL)
        return Client(provider="gemini", model="gemini-2.5-flash", http_client=http)


async def result(server: Server, **kw: Any) -> Any:
    async with server.client() as client, client.stream(messages=MESSAGES, schema=City, **kw) as s:
        return await s.result()


async def genai_reads(parts: list[bytes]) -> tuple[str, list[tuple[str | None, Any]], str | None]:
    """What google-genai makes of a stream's bytes: the text, the function calls, the last
    finish reason."""

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=b"".join(parts)
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = genai.Client(api_key="k", http_options=types.HttpOptions(httpx_async_client=http))
    texts, calls, finish = [], [], None
    async for chunk in await client.aio.models.generate_content_stream(
        model="gemini-2.5-flash", contents="x"
    ):
        for part in chunk.candidates[0].content.parts or []:
            if part.text and not part.thought:
                texts.append(part.text)
            if part.function_call:
                calls.append((part.function_call.name, part.function_call.args))
        if chunk.candidates[0].finish_reason:
            finish = chunk.candidates[0].finish_reason.value
    await http.aclose()
    return "".join(texts), calls, finish


async def our_reading(parts: list[bytes]) -> list[Delta]:
    http = httpx.AsyncClient(
        transport=httpx.MockTransport(
            lambda r: httpx.Response(
                200, headers={"content-type": "text/event-stream"}, stream=Body(parts)
            )
        )
    )
    backend = GeminiBackend(base_url=URL, api_key="k", model="gemini-2.5-flash", http_client=http)
    req = GenerationRequest(messages=tuple(MESSAGES), schema={"type": "object"})
    out = [d if isinstance(d, Delta) else Delta(text=d) async for d in backend.generate(req)]
    await http.aclose()
    return out


STREAMS = {
    "text": GOOD,
    "thought and text": [record({"text": "Hm", "thought": True}), *GOOD],
    "function calls": [
        record({"functionCall": {"name": "look", "args": {"q": 1}}}),
        record(
            {"functionCall": {"name": "city", "args": {"name": "Paris"}}}, finish="STOP", usage=True
        ),
    ],
    "max tokens": [record({"text": CITY[0]}, finish="MAX_TOKENS", usage=True)],
}


@pytest.mark.parametrize("name", sorted(STREAMS))
async def test_streams_read_as_google_genai_reads_them(name: str) -> None:
    parts = STREAMS[name]
    text, calls, finish = await genai_reads(parts)
    # One byte at a time, as well as whole.
    for chunking in (parts, [bytes([b]) for b in b"".join(parts)]):
        deltas = await our_reading(chunking)
        assert "".join(d.text for d in deltas if d.tool_call is None) == text
        assert [
            (d.tool_name, json.loads(d.text)) for d in deltas if d.tool_call is not None
        ] == calls
        last = deltas[-1]
        expected = {"STOP": "tool_calls" if calls else "stop", "MAX_TOKENS": "length"}[finish]
        assert last.finish_reason == expected
        assert last.usage is not None and (
            last.usage.prompt_tokens,
            last.usage.completion_tokens,
        ) == (12, 10)


async def test_a_stream_end_to_end_with_reasoning() -> None:
    server = Server([record({"text": "Hm", "thought": True}), *GOOD])
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, reasoning=True) as s,
    ):
        thoughts = [ev.text async for ev in s if isinstance(ev, sdk.ReasoningDelta)]
        assert await s.result() == City(name="Paris", population=2100000)
    assert thoughts == ["Hm"]
    assert (s.usage.completion_tokens, s.usage.reasoning_tokens) == (10, 4)
    request = server.requests[0]
    assert str(request.url) == URL + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert json.loads(request.content)["generationConfig"]["responseMimeType"] == "application/json"


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "SPII"])
async def test_filters_are_content_filtered(reason: str) -> None:
    server = Server([record({"text": CITY[0]}, finish=reason)])
    with pytest.raises(ContentFilteredError):
        await result(server)


async def test_a_blocked_prompt_is_content_filtered() -> None:
    blocked = b'data: {"promptFeedback": {"blockReason": "SAFETY"}}\r\n\r\n'
    with pytest.raises(ContentFilteredError):
        await result(Server([blocked]))


async def test_max_tokens_is_truncation_and_a_malformed_call_is_not_json() -> None:
    with pytest.raises(TruncatedError) as info:
        await result(Server([record({"text": CITY[0]}, finish="MAX_TOKENS")]))
    assert info.value.reason == "length"
    with pytest.raises(OutputSyntaxError, match="'MALFORMED_FUNCTION_CALL'"):
        await result(Server([record({"text": CITY[0]}, finish="MALFORMED_FUNCTION_CALL")]))


async def test_errors() -> None:
    exhausted = httpx.Response(
        429,
        headers={"retry-after": "0"},
        json={"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}},
    )
    server = Server(exhausted)
    with pytest.raises(RateLimitError) as info:
        await result(server, max_retries=0)
    assert info.value.retryable and "Quota exceeded" in str(info.value)
    mid = b'data: {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}\r\n\r\n'
    with pytest.raises(BadRequestError, match="INVALID_ARGUMENT: bad"):
        await result(Server([record({"text": CITY[0]}), mid]))
    two = b'data: {"candidates": [{"index": 1, "content": {"parts": [{"text": "x"}]}}]}\r\n\r\n'
    with pytest.raises(BackendError, match="candidate 1"):
        await result(Server([two]))


def test_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        GeminiBackend(model="gemini-2.5-flash")
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    assert GeminiBackend().headers["x-goog-api-key"] == "g"
    monkeypatch.setenv("GOOGLE_API_KEY", "first")
    assert GeminiBackend().headers["x-goog-api-key"] == "first"


async def test_regex_is_refused_before_sending() -> None:
    server = Server()
    with pytest.raises(UnsupportedConstraint, match="Regex"):
        async with (
            server.client() as client,
            client.stream(messages=MESSAGES, schema=sdk.Regex("[a-z]+")) as s,
        ):
            await s.result()
    assert server.requests == []


async def test_a_violation_closes_the_connection_and_the_retry_is_a_model_turn() -> None:
    bad = [record({"text": '{"name": 3'}), *(record({"text": " "}) for _ in range(6))]
    server = Server(bad, GOOD)
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, retry=Retry(max_attempts=2)) as s,
    ):
        assert await s.result() == City(name="Paris", population=2100000)
    assert server.bodies[0].closed and server.bodies[0].pulled < len(bad)
    assert isinstance(s.attempts[0].error, SchemaViolation)
    contents = json.loads(server.requests[1].content)["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [{"text": '{"name": 3'}]


def test_named_parameters_in_geminis_words() -> None:
    given = {
        "max_completion_tokens": 50,
        "stop": ["END", "STOP"],
        "frequency_penalty": 0.5,
        "presence_penalty": 0.1,
        "logprobs": True,
        "top_logprobs": 2,
        "stream_options": {"include_usage": True},
    }
    body = gemini_body(request(parameters=given))
    assert genai_errors(body) == []
    config = body["generationConfig"]
    assert {
        k: config[k] for k in config if k not in ("responseMimeType", "responseJsonSchema")
    } == {
        "maxOutputTokens": 50,
        "stopSequences": ["END", "STOP"],
        "frequencyPenalty": 0.5,
        "presencePenalty": 0.1,
        "responseLogprobs": True,
        "logprobs": 2,
    }


@pytest.mark.parametrize("given", [{"user": "u"}, {"reasoning_effort": "low"}, {"store": True}])
def test_named_parameters_it_has_no_equivalent_for_are_refused(given: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedConstraint, match="has no equivalent in Gemini"):
        check_gemini_request(request(parameters=given))


# ---------------------------------------------------------------- Client.from_genai


def genai_client(server: Server) -> Any:
    """A ``google.genai.Client`` whose HTTP client is answered by ``server``."""

    async def handler(request: httpx.Request) -> httpx.Response:
        answer = server(request)
        return httpx.Response(
            answer.status_code, headers=dict(answer.headers), content=await answer.aread()
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    options = types.HttpOptions(
        api_version="v1beta",
        httpx_async_client=http,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key="k", http_options=options)


async def test_from_genai_streams_through_the_callers_client() -> None:
    server = Server([record({"text": "Hm", "thought": True}), *GOOD])
    client = Client.from_genai(genai_client(server), model="gemini-2.5-flash")
    async with client.stream(messages=list(CHAT), schema=City, reasoning=True, max_tokens=50) as s:
        events = [ev async for ev in s]
        assert await s.result() == City(name="Paris", population=2100000)
    assert [ev.path for ev in events if isinstance(ev, sdk.FieldEvent)] == [
        ("name",),
        ("population",),
        (),
    ]
    assert [ev.text for ev in events if isinstance(ev, sdk.ReasoningDelta)] == ["Hm"]
    assert (s.usage.prompt_tokens, s.usage.completion_tokens) == (12, 10)
    # What the caller's client sent is the body the httpx backend sends.
    sent = as_rest(server.requests[0])
    assert sent == gemini_body(
        GenerationRequest(messages=CHAT, schema=City.model_json_schema(), max_tokens=50)
    )


async def test_from_genai_errors_are_both_ours_and_genais() -> None:
    from google.genai import errors

    exhausted = httpx.Response(
        429,
        json={"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}},
    )
    client = Client.from_genai(genai_client(Server(exhausted)), model="gemini-2.5-flash")
    with pytest.raises(errors.ClientError) as info:
        async with client.stream(messages=MESSAGES, schema=City) as s:
            await s.result()
    error = info.value
    assert isinstance(error, RateLimitError) and error.retryable
    assert "RESOURCE_EXHAUSTED: Quota exceeded" in str(error)
    with pytest.raises(TypeError, match=r"google\.genai\.Client"):
        Client.from_genai(object(), model="gemini-2.5-flash")


async def test_from_genai_closes_the_stream_at_a_violation() -> None:
    bad = [record({"text": '{"name": 3'}), *(record({"text": " "}) for _ in range(6))]
    server = Server(bad)
    client = Client.from_genai(genai_client(server), model="gemini-2.5-flash")
    with pytest.raises(SchemaViolation):
        async with client.stream(messages=MESSAGES, schema=City) as s:
            await s.result()


def test_sync_from_genai() -> None:
    server = Server(GOOD)
    with sdk.SyncClient.from_genai(genai_client(server), model="gemini-2.5-flash") as client:
        with client.stream(messages=MESSAGES, schema=City) as s:
            assert s.result() == City(name="Paris", population=2100000)
    assert len(server.requests) == 1


# ---------------------------------------------------------------- a tool loop of several turns


async def test_a_tool_loop_appends_the_assistant_turn_and_gemini_reads_it() -> None:
    """The reply of a tool turn (``assistant_message()``, Chat shape) and the tool's result are
    appended as they are; the next request carries them as Gemini's ``functionCall`` and
    ``functionResponse`` parts, and every turn's body is what google-genai's models accept."""

    class Look(BaseModel):
        q: str

    server = Server(
        [record({"functionCall": {"name": "look", "args": {"q": "Paris"}}}, finish="STOP")],
        [record({"text": "Paris is in France."}, finish="STOP", usage=True)],
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Where is Paris?"}]
    tools = [Tool("look", Look)]
    async with server.client() as client:
        for _ in range(3):
            async with client.stream(messages=messages, tools=tools, tool_choice="auto") as s:
                values = await s.results()
            messages.append(s.assistant_message())
            if not s.called_tools:
                break
            for call, value in zip(messages[-1]["tool_calls"], values, strict=True):
                assert value == Look(q="Paris")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "France"})
    assert values == ["Paris is in France."]
    [call] = messages[1]["tool_calls"]
    assert call["function"] == {"name": "look", "arguments": '{"q": "Paris"}'}
    second = json.loads(server.requests[1].content)
    # The call's id (made for it: Gemini sent none) goes back with the call and its response.
    assert second["contents"][1:] == [
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "look", "args": {"q": "Paris"}, "id": call["id"]}}],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": call["id"],
                        "name": "look",
                        "response": {"result": "France"},
                    }
                }
            ],
        },
    ]
    for request in server.requests:
        assert genai_errors(json.loads(request.content)) == []
