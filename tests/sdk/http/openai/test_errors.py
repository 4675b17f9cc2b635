"""Errors on the native client as openai-python's have them: ``code``, ``type``, ``param``,
``request``; a message without the URL; ``body`` the error object whether it came as a status's
body or inside the stream; a failure midway carries the response's ``x-request-id``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

import sdk
from sdk import Client, TransportError
from tests.sdk._http_support import Body

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
MESSAGES = [{"role": "user", "content": "hi"}]
QUOTA = {
    "message": "You exceeded your current quota.",
    "type": "insufficient_quota",
    "param": None,
    "code": "insufficient_quota",
}
BAD_PARAM = {
    "message": "Unsupported parameter: 'max_tokens'.",
    "type": "invalid_request_error",
    "param": "max_tokens",
    "code": "unsupported_parameter",
}


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


async def run(**kw: Any) -> Any:
    client = Client(base_url=BASE, model="m", max_retries=0, **kw)
    async with client, client.stream(messages=MESSAGES, schema=SCHEMA) as stream:
        return await stream.result()


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [(429, QUOTA, sdk.RateLimitError), (400, BAD_PARAM, sdk.BadRequestError)],
)
async def test_a_status_error_has_openais_attributes(
    mock: respx.MockRouter, status: int, error: dict[str, Any], kind: type[Exception]
) -> None:
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(status, json={"error": error}, headers={"x-request-id": "r1"})
    )
    with pytest.raises(kind) as info:
        await run()
    err = info.value
    assert isinstance(err, TransportError)
    assert (err.code, err.type, err.param) == (error["code"], error["type"], error["param"])
    assert err.body == error
    assert isinstance(err.request, httpx.Request)
    assert str(err.request.url) == f"{BASE}/chat/completions"
    assert err.message == f"HTTP {status}: {error['message']}"
    assert "llm.test" not in err.message and "llm.test" not in str(err)


async def test_a_text_body_has_no_code_and_its_text_as_message(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(return_value=httpx.Response(502, text="Bad gateway\n"))
    with pytest.raises(sdk.InternalServerError) as info:
        await run()
    assert (info.value.code, info.value.type, info.value.param) == (None, None, None)
    assert info.value.message == "HTTP 502: Bad gateway"


async def test_an_error_inside_the_stream_has_the_same_body_as_a_status_error(
    mock: respx.MockRouter,
) -> None:
    events = [
        b'data: {"choices":[{"index":0,"delta":{"content":"{\\"a\\""}}]}\n\n',
        b"data: " + json.dumps({"error": QUOTA}).encode() + b"\n\n",
    ]
    mock.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(
                200,
                headers={"content-type": "text/event-stream", "x-request-id": "req_mid"},
                stream=Body(events),
            ),
            httpx.Response(429, json={"error": QUOTA}, headers={"x-request-id": "req_status"}),
        ]
    )
    with pytest.raises(TransportError) as midway:
        await run()
    with pytest.raises(TransportError) as status:
        await run()
    assert midway.value.body == status.value.body == QUOTA  # one shape: the error object
    assert midway.value.code == status.value.code == "insufficient_quota"
    assert midway.value.request_id == "req_mid"
    assert status.value.request_id == "req_status"
    assert isinstance(midway.value.request, httpx.Request)


async def test_a_connection_dropped_midway_carries_the_request_id(mock: respx.MockRouter) -> None:
    body = Body(
        [b'data: {"choices":[{"index":0,"delta":{"content":"{"}}]}\n\n'],
        error=httpx.RemoteProtocolError("peer closed connection"),
    )
    headers = {"content-type": "text/event-stream", "x-request-id": "req_drop"}
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=headers, stream=body)
    )
    with pytest.raises(sdk.APIConnectionError, match="mid-stream") as info:
        await run()
    assert info.value.request_id == "req_drop"
    assert isinstance(info.value.request, httpx.Request)


async def test_a_refused_connection_has_its_request(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(sdk.APIConnectionError) as info:
        await run()
    assert info.value.request is not None
    assert str(info.value.request.url) == f"{BASE}/chat/completions"
    assert (info.value.code, info.value.request_id) == (None, None)


async def test_a_responses_error_event_has_the_error_object_as_body(mock: respx.MockRouter) -> None:
    event = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}
    mock.post("/responses").mock(
        return_value=httpx.Response(
            200,
            headers={"content-type": "text/event-stream", "x-request-id": "req_r"},
            stream=Body([b"event: error\ndata: " + json.dumps(event).encode() + b"\n\n"]),
        )
    )
    with pytest.raises(TransportError) as info:
        await run(api="responses")
    assert info.value.body == {"code": "rate_limit_exceeded", "message": "slow down", "param": None}
    assert info.value.code == "rate_limit_exceeded"
    assert info.value.request_id == "req_r"
