"""Client.from_openai: the caller's openai.AsyncOpenAI client, on a mock transport.

openai v3 sends through httpx2, which respx cannot intercept, so these tests give the SDK an
``httpx2.AsyncClient`` with a ``MockTransport`` — the SDK's documented way to inject one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

import httpx2
import openai
import pytest
from pydantic import BaseModel

import sdk
from sdk._backend import Usage
from sdk._client import Client
from sdk._errors import RefusedError, SchemaViolation, TransportError
from sdk._retry import Retry

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).resolve().parents[3] / "data" / "openai_sse"
MESSAGES = [{"role": "user", "content": "What's the weather like in SF?"}]


class Location(BaseModel):
    city: str
    temperature: float
    units: Literal["c", "f"]


class Body(httpx2.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts
        self.pulled = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            if self.closed:
                return
            self.pulled += 1
            yield part

    async def aclose(self) -> None:
        self.closed = True


Handler = Callable[[httpx2.Request], httpx2.Response]


class Recorder:
    """A MockTransport handler answering with the scripted responses, in order."""

    def __init__(self, *responses: Callable[[], httpx2.Response]) -> None:
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.responses.pop(0)()

    def body(self, i: int) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.requests[i].content)
        return result


def sse(parts: list[bytes]) -> Callable[[], httpx2.Response]:
    return lambda: httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, stream=Body(parts)
    )


def corpus(name: str) -> Callable[[], httpx2.Response]:
    return sse([(CORPUS / f"{name}.sse").read_bytes()])


def openai_client(handler: Recorder, **kw: Any) -> openai.AsyncOpenAI:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return openai.AsyncOpenAI(
        api_key="sk-user", base_url="http://oai.test/v1", http_client=http, **kw
    )


async def test_structured_output_through_the_users_client() -> None:
    handler = Recorder(corpus("test_parse_pydantic_model"))
    oai = openai_client(handler, default_headers={"X-User": "yes"})
    async with Client.from_openai(oai, model="gpt-4o") as client:
        async with client.stream(messages=MESSAGES, schema=Location, max_tokens=50) as s:
            assert await s.result() == Location(city="San Francisco", temperature=61, units="f")
    assert s.usage == Usage(79, 14, completion_tokens_details={"reasoning_tokens": 0})
    request = handler.requests[0]
    assert request.url == "http://oai.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-user"
    assert request.headers["x-user"] == "yes"
    body = handler.body(0)
    assert body["model"] == "gpt-4o"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 50
    assert body["response_format"]["json_schema"]["strict"] is True
    assert not oai.is_closed()  # the caller's client stays open


async def test_same_wire_body_as_the_httpx_backend() -> None:
    from sdk._backend import GenerationRequest
    from sdk._http.openai._chat_request import chat_body
    from sdk._schema_prompt import with_schema

    handler = Recorder(corpus("test_parse_pydantic_model"))
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    async with client.stream(
        messages=MESSAGES, schema=Location, seed=3, extra_body={"stop": ["x"]}
    ) as s:
        await s.result()
    request = GenerationRequest(
        # Not OpenAI's URL: a server said to show no schema, so the client shows it.
        messages=with_schema(MESSAGES, s.json_schema),
        schema=s.json_schema,
        schema_name="Location",
        seed=3,
        extra={"stop": ["x"]},
    )
    assert handler.body(0) == chat_body(request, model="gpt-4o")


async def test_refusal() -> None:
    handler = Recorder(corpus("test_parse_pydantic_model_refusal"))
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    with pytest.raises(RefusedError, match="can't assist"):
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()


async def test_parallel_tool_calls() -> None:
    class GetWeatherArgs(BaseModel):
        city: str
        country: str
        units: Literal["c", "f"] = "c"

    class GetStockPrice(BaseModel):
        ticker: str
        exchange: str

    handler = Recorder(corpus("test_parse_multiple_pydantic_tools"))
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    async with client.stream(
        messages=MESSAGES, schema=GetWeatherArgs | GetStockPrice, mode="tool"
    ) as s:
        results = await s.results()
    assert [type(r).__name__ for r in results] == ["GetWeatherArgs", "GetStockPrice"]


async def test_the_users_client_keeps_its_own_retries() -> None:
    # A 429 before the stream begins: the openai client the user configured retries it
    # itself (its max_retries, its wait: retry-after-ms), and the stream sees one attempt.
    handler = Recorder(
        lambda: httpx2.Response(
            429, headers={"retry-after-ms": "5"}, json={"error": {"message": "rate limited"}}
        ),
        corpus("test_parse_pydantic_model"),
    )
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    client = Client.from_openai(openai_client(handler, max_retries=2), model="gpt-4o")
    async with client.stream(
        messages=MESSAGES, schema=Location, retry=Retry(max_attempts=2, sleep=sleep)
    ) as s:
        await s.result()
    assert len(handler.requests) == 2
    assert delays == []  # the SDK waited, not the stream
    assert [a.error for a in s.attempts] == [None]


async def test_429_with_retry_after_then_success_when_the_sdk_does_not_retry() -> None:
    handler = Recorder(
        lambda: httpx2.Response(
            429, headers={"retry-after": "3"}, json={"error": {"message": "rate limited"}}
        ),
        corpus("test_parse_pydantic_model"),
    )
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    client = Client.from_openai(openai_client(handler, max_retries=0), model="gpt-4o")
    async with client.stream(
        messages=MESSAGES, schema=Location, max_retries=1, retry=Retry(max_attempts=1, sleep=sleep)
    ) as s:
        await s.result()
    assert delays == [3.0]
    assert len(handler.requests) == 2
    error = s.attempts[0].error
    assert isinstance(error, TransportError)
    assert (error.status, error.retryable, error.retry_after) == (429, True, 3.0)


async def test_400_is_not_retried() -> None:
    handler = Recorder(
        lambda: httpx2.Response(400, json={"error": {"message": "bad schema"}}),
        corpus("test_parse_pydantic_model"),
    )
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    with pytest.raises(TransportError) as info:
        async with client.stream(
            messages=MESSAGES, schema=Location, retry=Retry(max_attempts=3)
        ) as s:
            await s.result()
    assert (info.value.status, info.value.retryable) == (400, False)
    assert info.value.body == {"message": "bad schema"}  # as openai's error has it
    assert len(handler.requests) == 1


@pytest.mark.parametrize(
    ("status", "ours", "theirs"),
    [
        (400, sdk.BadRequestError, openai.BadRequestError),
        (401, sdk.AuthenticationError, openai.AuthenticationError),
        (403, sdk.PermissionDeniedError, openai.PermissionDeniedError),
        (404, sdk.NotFoundError, openai.NotFoundError),
        (409, sdk.ConflictError, openai.ConflictError),
        (422, sdk.UnprocessableEntityError, openai.UnprocessableEntityError),
        (429, sdk.RateLimitError, openai.RateLimitError),
        (500, sdk.InternalServerError, openai.InternalServerError),
    ],
)
async def test_openais_error_classes_keep_catching(
    status: int, ours: type[sdk.APIStatusError], theirs: type[openai.APIStatusError]
) -> None:
    handler = Recorder(
        lambda: httpx2.Response(
            status,
            headers={"x-request-id": "req_abc"},
            json={"error": {"message": "no", "code": "some_code"}},
        )
    )
    client = Client.from_openai(openai_client(handler, max_retries=0), model="gpt-4o")
    with pytest.raises(theirs) as info:  # the user's existing `except openai.RateLimitError`
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()
    error = info.value
    assert isinstance(error, ours) and isinstance(error, sdk.TransportError)
    assert isinstance(error, openai.APIStatusError)
    assert error.status_code == status == error.status
    assert error.request_id == "req_abc"
    assert error.body == {"message": "no", "code": "some_code"}
    assert error.code == "some_code"  # openai's own attributes are there too
    assert isinstance(error.response, httpx2.Response)
    assert isinstance(error.__cause__, theirs)


async def test_openais_connection_and_timeout_errors_keep_catching() -> None:
    def refuse() -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    def stall() -> httpx2.Response:
        raise httpx2.ReadTimeout("slow")

    client = Client.from_openai(openai_client(Recorder(refuse), max_retries=0), model="m")
    with pytest.raises(openai.APIConnectionError) as info:
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()
    assert isinstance(info.value, sdk.APIConnectionError)
    assert not isinstance(info.value, (sdk.APITimeoutError, openai.APITimeoutError))
    client = Client.from_openai(openai_client(Recorder(stall), max_retries=0), model="m")
    with pytest.raises(sdk.APITimeoutError) as timeout:
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()
    assert isinstance(timeout.value, openai.APITimeoutError)


async def test_connection_error() -> None:
    def refuse() -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    handler = Recorder(refuse)
    # The SDK's own retries off, so that its error reaches the stream at once.
    client = Client.from_openai(openai_client(handler, max_retries=0), model="gpt-4o")
    with pytest.raises(TransportError, match="connection failed") as info:
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()
    assert info.value.retryable and info.value.status is None


async def test_error_object_inside_the_stream() -> None:
    error = b'data: {"error": {"message": "server exploded", "code": 500}}\n\n'
    handler = Recorder(sse([error]))
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    with pytest.raises(TransportError, match="server exploded") as info:
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()
    assert (info.value.status, info.value.retryable) == (500, True)


async def test_a_violation_closes_the_sdk_stream_at_once() -> None:
    def chunk(text: str) -> bytes:
        payload = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    body = Body(
        [chunk('{"city": "SF", '), chunk('"temperature": "hot'), *[chunk(" ") for _ in range(100)]]
    )
    handler = Recorder(
        lambda: httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body)
    )
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    with pytest.raises(SchemaViolation):
        async with client.stream(messages=MESSAGES, schema=Location) as s:
            await s.result()
    assert body.closed
    assert body.pulled == 2


def test_a_synchronous_client_is_refused() -> None:
    with pytest.raises(TypeError, match="AsyncOpenAI"):
        Client.from_openai(openai.OpenAI(api_key="x"), model="m")


async def test_per_request_overrides_reach_the_users_client() -> None:
    handler = Recorder(corpus("test_parse_pydantic_model"))
    client = Client.from_openai(openai_client(handler), model="gpt-4o")
    async with client.stream(
        messages=MESSAGES,
        schema=Location,
        model="gpt-4o-mini",
        extra_headers={"X-Trace": "t1"},
        extra_query={"v": "2"},
        timeout=7.0,
    ) as s:
        await s.result()
    request = handler.requests[0]
    assert handler.body(0)["model"] == "gpt-4o-mini"
    assert request.headers["x-trace"] == "t1"
    assert request.url.params["v"] == "2"
