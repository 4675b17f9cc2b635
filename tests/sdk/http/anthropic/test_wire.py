"""The Anthropic backend on the wire (httpx mock transport): headers and credentials, every
stop reason and error event in hand-made streams, status errors as Anthropic's SDK gives them,
transport retries, abort, and early retries fed back as Anthropic's own turns."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import sdk
from sdk import Client, Retry
from sdk._errors import (
    BadRequestError,
    InternalServerError,
    RateLimitError,
    RefusedError,
    SchemaViolation,
    StreamUsageError,
    TransportError,
    TruncatedError,
    UnsupportedConstraint,
)
from sdk._http.anthropic import AnthropicBackend
from tests.sdk._http_support import Body

pytestmark = pytest.mark.anyio

URL = "http://anthropic.test"
SSE = {"content-type": "text/event-stream"}
MESSAGES = [{"role": "user", "content": "Where?"}]


class City(BaseModel):
    name: str
    population: int


def event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def start(**usage: int) -> bytes:
    return event(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1, **usage},
        },
    )


def text_block(index: int, *pieces: str) -> list[bytes]:
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        event("ping"),
        *(
            event("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
            for p in pieces
        ),
        event("content_block_stop", index=index),
    ]


def tool_block(index: int, name: str, call_id: str, *pieces: str) -> list[bytes]:
    return [
        event(
            "content_block_start",
            index=index,
            content_block={"type": "tool_use", "id": call_id, "name": name, "input": {}},
        ),
        *(
            event(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": p},
            )
            for p in pieces
        ),
        event("content_block_stop", index=index),
    ]


def stop(reason: str, output: int = 7, **delta: Any) -> list[bytes]:
    return [
        event(
            "message_delta",
            delta={"stop_reason": reason, "stop_sequence": None, **delta},
            usage={"output_tokens": output},
        ),
        event("message_stop"),
    ]


CITY = ['{"name": "Par', 'is", "population": 2', "100000}"]


def stream(*parts: bytes | list[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for part in parts:
        out.extend(part if isinstance(part, list) else [part])
    return out


class Server:
    """Answers each request with the next of ``answers`` (parts of an event stream, or a
    response), recording the requests and the bodies served."""

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
        return httpx.Response(200, headers={**SSE, "request-id": "req_ok"}, stream=body)

    def sent(self, n: int = -1) -> dict[str, Any]:
        return json.loads(self.requests[n].content)

    def client(self, **options: Any) -> Client:
        http = httpx.AsyncClient(transport=httpx.MockTransport(self), base_url=URL)
        return Client(provider="anthropic", model="claude-test", http_client=http, **options)


async def result(server: Server, schema: Any = City, **kw: Any) -> Any:
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=schema, **kw) as s,
    ):
        return await s.result()


# ---------------------------------------------------------------- request, headers, credentials


async def test_headers_url_and_body() -> None:
    server = Server(stream(start(), text_block(0, *CITY), stop("end_turn")))
    http = httpx.AsyncClient(transport=httpx.MockTransport(server))
    async with Client(
        provider="anthropic",
        base_url=URL + "/",
        api_key="sk-ant-test",
        model="claude-test",
        http_client=http,
        headers={"anthropic-beta": "x"},
    ) as client:
        async with client.stream(messages=MESSAGES, schema=City, max_tokens=99) as s:
            assert await s.result() == City(name="Paris", population=2100000)
    await http.aclose()
    request = server.requests[0]
    assert str(request.url) == URL + "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["anthropic-beta"] == "x"
    assert "authorization" not in request.headers
    body = server.sent()
    assert body["model"] == "claude-test" and body["max_tokens"] == 99 and body["stream"] is True
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert s.usage.prompt_tokens == 10 and s.usage.completion_tokens == 7


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicBackend(model="claude-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    backend = AnthropicBackend(model="claude-test")
    assert backend.url == "https://api.anthropic.com/v1/messages"
    assert backend.headers["x-api-key"] == "from-env"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.test/")
    assert AnthropicBackend().url == "http://proxy.test/v1/messages"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok")
    assert AnthropicBackend().headers["Authorization"] == "Bearer tok"


def test_construction_is_checked() -> None:
    with pytest.raises(TypeError, match="organization"):
        Client(provider="anthropic", api_key="k", organization="org")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="provider must be one of"):
        Client(provider="antropic", api_key="k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="api='responses'"):
        Client(provider="anthropic", api_key="k", api="responses")
    with pytest.raises(TypeError, match="timeout"):
        Client(provider="anthropic", api_key="k", timeout="soon")  # type: ignore[arg-type]


async def test_what_the_api_cannot_be_sent_is_refused_before_sending() -> None:
    server = Server()
    for options, what in (
        ({"seed": 1}, "seed"),
        ({"temperature": 0.5}, "temperature"),
        ({"schema": sdk.Regex("[a-z]+")}, "Regex"),
    ):
        kw: dict[str, Any] = {"schema": City, **options}
        with pytest.raises(UnsupportedConstraint, match=what):
            await result(server, **kw)
    with pytest.raises(StreamUsageError, match=r"messages\[1\] is a system turn after"):
        async with (
            server.client() as client,
            client.stream(
                messages=[*MESSAGES, {"role": "system", "content": "late"}], schema=City
            ) as s,
        ):
            await s.result()
    assert server.requests == []


# ---------------------------------------------------------------- every stop reason


async def test_end_turn_and_stop_sequence() -> None:
    for reason in ("end_turn", "stop_sequence"):
        server = Server(stream(start(), text_block(0, *CITY), stop(reason)))
        assert await result(server) == City(name="Paris", population=2100000)


@pytest.mark.parametrize("reason", ["max_tokens", "model_context_window_exceeded"])
async def test_token_limits_are_truncation(reason: str) -> None:
    server = Server(stream(start(), text_block(0, *CITY[:2]), stop(reason)))
    with pytest.raises(TruncatedError) as info:
        await result(server)
    assert info.value.reason == "length"
    assert info.value.snapshot == {"name": "Paris"}  # 2 is not final: more digits may come


async def test_pause_turn_leaves_the_document_unfinished() -> None:
    server = Server(stream(start(), text_block(0, *CITY[:1]), stop("pause_turn")))
    with pytest.raises(TruncatedError) as info:
        await result(server)
    assert info.value.reason == "pause_turn"  # the provider's word, not a limit


async def test_refusal_raises_refused_with_the_explanation() -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "Not this."}
    server = Server(stream(start(), text_block(0, '{"name'), stop("refusal", stop_details=details)))
    with pytest.raises(RefusedError, match=r"Not this\."):
        await result(server)


async def test_tool_use_streams_the_input_as_fields() -> None:
    server = Server(
        stream(
            start(), text_block(0, "\n"), tool_block(1, "City", "toolu_1", *CITY), stop("tool_use")
        )
    )
    seen: list[tuple[Any, ...]] = []
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, mode="tool") as s,
    ):
        seen.extend(
            [
                (ev.path, ev.value, ev.tool_call_id)
                async for ev in s
                if isinstance(ev, sdk.FieldEvent)
            ]
        )
        assert await s.result() == City(name="Paris", population=2100000)
    assert seen == [
        (("name",), "Paris", "toolu_1"),
        (("population",), 2100000, "toolu_1"),
        ((), {"name": "Paris", "population": 2100000}, "toolu_1"),
    ]
    body = server.sent()
    assert body["tool_choice"] == {"type": "tool", "name": "City"}
    assert body["tools"][0]["strict"] is True


async def test_thinking_is_reasoning_and_cache_tokens_are_prompt() -> None:
    thinking = [
        event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
        event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "Hm"}),
        event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "s"}),
        event("content_block_stop", index=0),
    ]
    server = Server(
        stream(
            start(cache_creation_input_tokens=5, cache_read_input_tokens=100),
            thinking,
            text_block(1, *CITY),
            stop("end_turn"),
        )
    )
    thoughts = []
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, reasoning=True) as s,
    ):
        thoughts.extend([ev.text async for ev in s if isinstance(ev, sdk.ReasoningDelta)])
    assert thoughts == ["Hm"]
    assert (s.usage.prompt_tokens, s.usage.completion_tokens) == (115, 7)
    assert s.usage.cached_tokens == 100
    assert s.usage.prompt_tokens_details == {"cached_tokens": 100, "cache_creation_tokens": 5}


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kind", "cls", "status", "retryable"),
    [
        ("overloaded_error", InternalServerError, 529, True),
        ("api_error", InternalServerError, 500, True),
        ("rate_limit_error", RateLimitError, 429, True),
        ("invalid_request_error", BadRequestError, 400, False),
    ],
)
async def test_an_error_event_mid_stream(
    kind: str, cls: type[TransportError], status: int, retryable: bool
) -> None:
    error = event("error", error={"type": kind, "message": "Overloaded"})
    server = Server(stream(start(), text_block(0, CITY[0])[:-1], error))
    with pytest.raises(cls) as info:
        await result(server, max_retries=0)
    assert (info.value.status, info.value.retryable) == (status, retryable)
    assert str(info.value) == f"{kind}: Overloaded"


async def test_529_overloaded_is_retried_after_retry_after_and_keeps_the_request_id() -> None:
    overloaded = httpx.Response(
        529,
        headers={"retry-after": "2", "request-id": "req_011"},
        json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    server = Server(overloaded, stream(start(), text_block(0, *CITY), stop("end_turn")))
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    async with (
        server.client() as client,
        client.stream(
            messages=MESSAGES, schema=City, max_retries=1, retry=Retry(max_attempts=1, sleep=sleep)
        ) as s,
    ):
        assert await s.result() == City(name="Paris", population=2100000)
    assert delays == [2.0]
    error = s.attempts[0].error
    assert isinstance(error, InternalServerError)
    assert (error.status, error.retryable, error.request_id) == (529, True, "req_011")
    assert str(error) == "HTTP 529: overloaded_error: Overloaded"


async def test_400_is_not_retried_and_says_what() -> None:
    bad = httpx.Response(
        400,
        headers={"request-id": "req_bad"},
        json={
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "schema too complex"},
        },
    )
    server = Server(bad)
    with pytest.raises(BadRequestError) as info:
        await result(server)
    assert info.value.request_id == "req_bad"
    assert "invalid_request_error: schema too complex" in str(info.value)
    assert len(server.requests) == 1


# ---------------------------------------------------------------- abort and early retry


async def test_a_violation_closes_the_connection_and_the_retry_is_an_anthropic_turn() -> None:
    bad = stream(
        start(), text_block(0, '{"name": 3', ', "population": 1}', " " * 10), stop("end_turn")
    )
    good = stream(start(), text_block(0, *CITY), stop("end_turn"))
    server = Server(bad, good)
    async with (
        server.client() as client,
        client.stream(messages=MESSAGES, schema=City, retry=Retry(max_attempts=2)) as s,
    ):
        assert await s.result() == City(name="Paris", population=2100000)
    first = server.bodies[0]
    assert first.closed and first.pulled < len(bad)  # aborted at the violation
    assert isinstance(s.attempts[0].error, SchemaViolation)
    turns = server.sent(1)["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [{"type": "text", "text": '{"name": 3'}]
    assert turns[2]["content"][0]["type"] == "text"
    assert "name" in turns[2]["content"][0]["text"]


def test_sync_client_speaks_anthropic_too() -> None:
    server = Server(stream(start(), text_block(0, *CITY), stop("end_turn")))
    http = httpx.AsyncClient(transport=httpx.MockTransport(server), base_url=URL)
    with sdk.SyncClient(provider="anthropic", model="claude-test", http_client=http) as client:
        with client.stream(messages=MESSAGES, schema=City) as s:
            paths = [ev.path for ev in s if isinstance(ev, sdk.FieldEvent)]
            assert s.result() == City(name="Paris", population=2100000)
    assert paths == [("name",), ("population",), ()]
    assert server.sent()["output_config"]["format"]["type"] == "json_schema"


async def test_a_batch_runs_over_anthropic() -> None:
    server = Server(*(stream(start(), text_block(0, *CITY), stop("end_turn")) for _ in range(3)))
    requests = [{"id": i, "prompt": "Where?"} for i in range(3)]
    async with server.client() as client:
        async with client.batch(requests, schema=City, concurrency=2) as done:
            results = [r async for r in done]
    assert sorted(r.id for r in results) == [0, 1, 2]  # type: ignore[type-var]
    assert [r.value for r in results] == [City(name="Paris", population=2100000)] * 3
    assert len(server.requests) == 3


# ---------------------------------------------------------------- Client.from_anthropic


def anthropic_client(server: Server, **options: Any) -> Any:
    """An ``anthropic.AsyncAnthropic`` whose HTTP client (httpx2, as the SDK's) is answered by
    ``server``."""
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")

    async def handler(request: Any) -> Any:
        sent = httpx.Request(
            request.method, str(request.url), headers=dict(request.headers), content=request.content
        )
        answer = server(sent)
        return httpx2.Response(
            answer.status_code, headers=dict(answer.headers), content=await answer.aread()
        )

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=URL, http_client=http, **options
    )


async def test_from_anthropic_streams_through_the_callers_client() -> None:
    server = Server(stream(start(), text_block(0, *CITY), stop("end_turn")))
    client = Client.from_anthropic(anthropic_client(server), model="claude-test")
    async with client.stream(messages=MESSAGES, schema=City, max_tokens=99) as s:
        paths = [ev.path async for ev in s if isinstance(ev, sdk.FieldEvent)]
        assert await s.result() == City(name="Paris", population=2100000)
    assert paths == [("name",), ("population",), ()]
    body = server.sent()
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert (body["model"], body["max_tokens"], body["stream"]) == ("claude-test", 99, True)
    # The caller's client authenticates as it does (anthropic 2.x: a bearer token).
    assert server.requests[0].headers["authorization"] == "Bearer sk-ant-test"


async def test_from_anthropic_errors_are_both_ours_and_anthropics() -> None:
    anthropic = pytest.importorskip("anthropic")
    overloaded = httpx.Response(
        529,
        headers={"request-id": "req_9"},
        json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    server = Server(overloaded)
    client = Client.from_anthropic(anthropic_client(server, max_retries=0), model="claude-test")
    with pytest.raises(anthropic.APIStatusError) as info:
        async with client.stream(messages=MESSAGES, schema=City) as s:
            await s.result()
    error = info.value
    assert isinstance(error, InternalServerError) and isinstance(error, TransportError)
    assert (error.status, error.retryable, error.request_id) == (529, True, "req_9")
    with pytest.raises(TypeError, match=r"anthropic\.AsyncAnthropic"):
        Client.from_anthropic(object(), model="claude-test")


def test_sync_from_anthropic_copies_a_sync_client() -> None:
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    server = Server(stream(start(), text_block(0, *CITY), stop("end_turn")))
    sync_client = anthropic.Anthropic(
        api_key="sk-ant-sync", base_url=URL, default_headers={"x-team": "a"}, max_retries=0
    )
    with sdk.SyncClient.from_anthropic(sync_client, model="claude-test") as client:
        copied = client.backend._client  # type: ignore[attr-defined]
        assert isinstance(copied, anthropic.AsyncAnthropic)
        assert (copied.api_key, str(copied.base_url).rstrip("/")) == ("sk-ant-sync", URL)
        # The copy's HTTP client answered by the server (its own would go to the network).
        copied._client = httpx2.AsyncClient(
            transport=httpx2.MockTransport(anthropic_client(server)._client._transport.handler)
        )
        with client.stream(messages=MESSAGES, schema=City) as s:
            assert s.result() == City(name="Paris", population=2100000)
    assert server.requests[0].headers["x-team"] == "a"


# ---------------------------------------------------------------- a tool loop of several turns


async def test_a_tool_loop_appends_the_assistant_turn_and_anthropic_reads_it() -> None:
    """The reply of a tool turn (``assistant_message()``, Chat shape) and the tool's result are
    appended as they are; the next request carries them as Anthropic's ``tool_use`` and
    ``tool_result`` blocks, and every turn's body is what anthropic's request type accepts."""
    from tests.sdk.http.openai._openai_types import openai_errors

    streaming = pytest.importorskip(
        "anthropic.types.message_create_params"
    ).MessageCreateParamsStreaming

    class Look(BaseModel):
        q: str

    server = Server(
        stream(start(), tool_block(0, "look", "toolu_1", '{"q": "Par', 'is"}'), stop("tool_use")),
        stream(start(), text_block(0, "Paris is in France."), stop("end_turn")),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Where is Paris?"}]
    tools = [sdk.Tool("look", Look)]
    async with server.client() as client:
        for _ in range(3):
            async with client.stream(messages=messages, tools=tools, tool_choice="auto") as s:
                values = await s.results()
            messages.append(s.assistant_message())
            if not s.called_tools:
                break
            for call, value in zip(messages[-1]["tool_calls"], values, strict=True):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "France"})
                assert value == Look(q="Paris")
    assert values == ["Paris is in France."]
    assert messages[1]["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "look", "arguments": '{"q": "Paris"}'},
        }
    ]
    second = server.sent(1)
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {"q": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "France"}],
        },
    ]
    for n in (0, 1):
        assert openai_errors(server.sent(n), streaming) == []
