"""OpenAIBackend on the wire (respx): the event-stream format, HTTP errors, faults, abort."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest
import respx

import sdk
from sdk._backend import Delta, GenerationRequest, Usage
from sdk._errors import BackendError, StreamUsageError, TransportError
from sdk._http._read_loop import Opened, stream_deltas
from sdk._http._status import parse_retry_after
from sdk._http.openai._backend import OpenAIBackend
from sdk._http.openai._chat_decoder import ChunkDecoder
from tests.sdk._http_support import Body

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
SSE = {"content-type": "text/event-stream"}


def data(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> bytes:
    chunk: dict[str, Any] = {"object": "chat.completion.chunk", "choices": []}
    if delta is not None or finish is not None:
        chunk["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        chunk["usage"] = usage
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


DOC_EVENTS = [
    data({"role": "assistant", "content": ""}),
    data({"content": '{"a"'}),
    data({"content": ": 1}"}),
    data(finish="stop"),
    data(usage={"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}),
    b"data: [DONE]\n\n",
]
DOC_DELTAS = [
    Delta(text='{"a"'),
    Delta(text=": 1}"),
    Delta(finish_reason="stop", usage=Usage(4, 2)),
]


def request(**kw: Any) -> GenerationRequest:
    return GenerationRequest(messages=({"role": "user", "content": "hi"},), schema=SCHEMA, **kw)


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


async def collect(backend: OpenAIBackend, req: GenerationRequest | None = None) -> list[Delta]:
    return [d async for d in backend.generate(req or request())]


async def test_request_body_and_headers(mock: respx.MockRouter) -> None:
    route = mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS))
    )
    backend = OpenAIBackend(
        base_url=BASE + "/", api_key="sk-test", model="m", headers={"X-Trace": "1"}
    )
    assert await collect(backend, request(max_tokens=9)) == DOC_DELTAS
    await backend.aclose()
    sent = route.calls.last.request
    assert sent.url == BASE + "/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.headers["x-trace"] == "1"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["content-length"] == str(len(sent.content))
    assert b": " not in sent.content  # compact, as httpx's json= writes it
    body = json.loads(sent.content)
    assert body["model"] == "m"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 9
    assert body["response_format"]["json_schema"]["strict"] is True


async def test_the_body_is_utf8_json_and_a_caller_may_set_its_content_type(
    mock: respx.MockRouter,
) -> None:
    route = mock.post("/chat/completions").mock(
        side_effect=lambda _: httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS))
    )
    messages = ({"role": "user", "content": "Zoë 東京 \u2028"},)
    req = GenerationRequest(messages=messages, schema=SCHEMA)
    backend = OpenAIBackend(base_url=BASE, headers={"Content-Type": "application/json; v=2"})
    assert await collect(backend, req) == DOC_DELTAS
    sent = route.calls.last.request
    assert "Zoë 東京".encode() in sent.content  # not \u-escaped
    assert json.loads(sent.content)["messages"] == [dict(m) for m in messages]
    assert sent.headers["content-type"] == "application/json; v=2"


def test_a_body_json_cannot_hold_is_refused_before_any_request(mock: respx.MockRouter) -> None:
    route = mock.post("/chat/completions")
    backend = OpenAIBackend(base_url=BASE)
    with pytest.raises(ValueError, match="JSON compliant"):
        backend.generate(request(temperature=float("nan")))
    with pytest.raises(TypeError, match="not JSON serializable"):
        backend.generate(request(extra={"when": object()}))
    assert not route.called


async def test_api_key_from_environment_or_none(
    mock: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = mock.post("/chat/completions").mock(
        side_effect=lambda _: httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS))
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    await collect(OpenAIBackend(base_url=BASE))
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    await collect(OpenAIBackend(base_url=BASE))
    assert "authorization" not in route.calls.last.request.headers


async def test_user_http_client_with_its_base_url_is_not_closed(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS))
    )
    async with httpx.AsyncClient(base_url=BASE + "/") as http:
        backend = OpenAIBackend(http_client=http)
        assert await collect(backend) == DOC_DELTAS
        await backend.aclose()
        assert not http.is_closed


def test_the_base_url_defaults_like_openai_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIBackend(api_key="sk").url == "https://api.openai.com/v1/chat/completions"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.test/v1/")
    assert OpenAIBackend().url == "http://proxy.test/v1/chat/completions"
    assert (
        OpenAIBackend(base_url="http://mine.test/v1").url == "http://mine.test/v1/chat/completions"
    )


def test_no_key_for_openais_url_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"Missing credentials.*OPENAI_API_KEY"):
        sdk.Client()
    sdk.Client(base_url="http://127.0.0.1:8080/v1")  # a local server needs none


async def test_organization_project_default_headers_and_query(
    mock: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-env")
    route = mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers={"content-type": "text/event-stream"}, text="")
    )
    await collect(
        OpenAIBackend(
            base_url=BASE, default_headers={"X-App": "a"}, default_query={"api-version": "1"}
        )
    )
    sent = route.calls.last.request
    assert sent.headers["OpenAI-Organization"] == "org-env"
    assert sent.headers["OpenAI-Project"] == "proj-env"
    assert sent.headers["X-App"] == "a"
    assert sent.url.params["api-version"] == "1"
    await collect(OpenAIBackend(base_url=BASE, organization="org-arg", project="proj-arg"))
    sent = route.calls.last.request
    assert (sent.headers["OpenAI-Organization"], sent.headers["OpenAI-Project"]) == (
        "org-arg",
        "proj-arg",
    )


async def test_per_request_overrides_and_with_options(mock: respx.MockRouter) -> None:
    route = mock.post("/chat/completions").mock(
        return_value=httpx.Response(
            200, headers={"content-type": "text/event-stream"}, text='data: {"choices": []}\n\n'
        )
    )
    client = sdk.Client(base_url=BASE, model="base-model", default_query={"q": "0"})
    narrow = client.with_options(model="other", extra_headers={"X-A": "1"}, max_retries=0)
    async with narrow.stream(
        messages=[{"role": "user", "content": "hi"}],
        schema={"type": "object"},
        extra_headers={"X-B": "2"},
        extra_query={"q": "1"},
        timeout=3.5,
        mode="none",
    ) as s:
        with pytest.raises(sdk.TruncatedError):
            await s.result()
    sent = route.calls.last.request
    assert json.loads(sent.content)["model"] == "other"
    assert (sent.headers["X-A"], sent.headers["X-B"]) == ("1", "2")
    assert sent.url.params["q"] == "1"
    assert sent.extensions["timeout"]["read"] == 3.5
    await narrow.aclose()  # the copy closes nothing: the original still works
    async with client.stream(
        messages=[{"role": "user", "content": "hi"}], schema={"type": "object"}, mode="none"
    ) as s:
        with pytest.raises(sdk.TruncatedError):
            await s.result()
    assert json.loads(route.calls.last.request.content)["model"] == "base-model"
    await client.aclose()


def test_an_unknown_argument_names_the_public_call() -> None:
    with pytest.raises(TypeError, match=r"^Client\(\) got unexpected argument\(s\) 'organisation'"):
        sdk.Client(base_url=BASE, organisation="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timeout must be"):
        sdk.Client(base_url=BASE).with_options(timeout="soon")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"base_url": 8000}, TypeError, "base_url must be a str"),
        ({"base_url": "localhost:8000/v1"}, ValueError, "http"),
        ({"api_key": b"k"}, TypeError, "api_key"),
        ({"http_client": object()}, TypeError, "httpx.AsyncClient"),
        ({"timeout": "10"}, TypeError, "timeout"),
        ({"headers": ["a"]}, TypeError, "headers"),
        ({"strict": "yes"}, TypeError, "strict"),
    ],
)
def test_bad_arguments_are_named(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        OpenAIBackend(**kwargs)


@pytest.mark.parametrize(
    "body",
    [
        # comment lines (keep-alives) anywhere
        b": ping\n\n"
        + b"".join(DOC_EVENTS[:2])
        + b": ping\n: another\n\n"
        + b"".join(DOC_EVENTS[2:]),
        # CRLF and lone CR line endings
        b"".join(DOC_EVENTS).replace(b"\n", b"\r\n"),
        b"".join(DOC_EVENTS).replace(b"\n", b"\r"),
        # an id field, a retry field, an explicit message event and unknown fields
        b"".join(b"id: 7\nretry: 100\nevent: message\nx-unknown: 1\n" + e for e in DOC_EVENTS),
        # "data:" without the optional space
        b"".join(DOC_EVENTS).replace(b"data: ", b"data:"),
        # a UTF-8 byte-order mark first (split across reads when split=1)
        b"\xef\xbb\xbf" + b"".join(DOC_EVENTS).replace(b"\n", b"\r\n"),
    ],
    ids=["comments", "crlf", "cr", "fields", "no-space", "bom"],
)
@pytest.mark.parametrize("split", [None, 1, 7])
async def test_event_stream_format(mock: respx.MockRouter, body: bytes, split: int | None) -> None:
    parts = [body] if split is None else [body[i : i + split] for i in range(0, len(body), split)]
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, stream=Body(parts))
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == DOC_DELTAS


async def test_multi_line_data_is_joined_with_newlines(mock: respx.MockRouter) -> None:
    # One JSON chunk spread over three data lines (the newlines are JSON whitespace).
    chunk = {"choices": [{"index": 0, "delta": {"content": "{}"}, "finish_reason": "stop"}]}
    text = json.dumps(chunk, indent=1).split("\n")
    event = "".join(f"data: {line}\n" for line in text).encode() + b"\n"
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=event + b"data: [DONE]\n\n")
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == [
        Delta(text="{}"),
        Delta(finish_reason="stop"),
    ]


async def test_events_after_done_are_ignored(mock: respx.MockRouter) -> None:
    # The rest of the body is read (so the connection could be reused) but not interpreted.
    body = Body([*DOC_EVENTS, data({"content": "garbage"}), b"data: {not json\n\n"])
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    assert await collect(OpenAIBackend(base_url=BASE)) == DOC_DELTAS
    assert body.closed


async def test_end_without_done_and_without_finish_reason(mock: respx.MockRouter) -> None:
    # Not an error here: the stream layer sees the source end and judges the document.
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS[:2]))
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == [Delta(text='{"a"')]


async def test_an_event_cut_off_by_the_end_of_the_body_is_not_dispatched(
    mock: respx.MockRouter,
) -> None:
    body = b"".join(DOC_EVENTS[:2]) + data({"content": ": 1}"}).rstrip(b"\n")
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, content=body))
    assert await collect(OpenAIBackend(base_url=BASE)) == [Delta(text='{"a"')]


async def test_finish_reason_without_done_still_ends_the_stream(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS[:4]))
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == [
        Delta(text='{"a"'),
        Delta(text=": 1}"),
        Delta(finish_reason="stop"),
    ]


async def test_error_event_mid_stream(mock: respx.MockRouter) -> None:
    body = DOC_EVENTS[1] + b'event: error\ndata: {"error": {"message": "model crashed"}}\n\n'
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, content=body))
    seen: list[Delta] = []
    with pytest.raises(TransportError, match="model crashed") as info:
        async for d in OpenAIBackend(base_url=BASE).generate(request()):
            seen.append(d)  # noqa: PERF401 - the loop raises midway
    assert seen == [Delta(text='{"a"')]
    assert info.value.retryable


async def test_error_object_in_a_chunk(mock: respx.MockRouter) -> None:
    body = b'data: {"error": {"message": "context too long", "code": 400}}\n\n'
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, content=body))
    with pytest.raises(TransportError, match="context too long") as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert (info.value.status, info.value.retryable) == (400, False)


async def test_malformed_chunk(mock: respx.MockRouter) -> None:
    body = DOC_EVENTS[1] + b'data: {"choices": [\n\n'
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, content=body))
    with pytest.raises(TransportError, match="malformed"):
        await collect(OpenAIBackend(base_url=BASE))


async def test_several_choices_are_refused(mock: respx.MockRouter) -> None:
    second = data({"content": "{"}).replace(b'"index": 0', b'"index": 1')
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=SSE, content=DOC_EVENTS[1] + second)
    )
    with pytest.raises(BackendError, match="choice 1"):
        await collect(OpenAIBackend(base_url=BASE))


async def test_n_greater_than_one_is_refused_before_sending(mock: respx.MockRouter) -> None:
    route = mock.post("/chat/completions")
    with pytest.raises(StreamUsageError):
        await collect(OpenAIBackend(base_url=BASE), request(extra={"n": 3}))
    assert not route.called


async def test_not_an_event_stream(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, json={"choices": []}))
    with pytest.raises(TransportError, match="expected an event stream") as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert not info.value.retryable


@pytest.mark.parametrize(
    ("status", "retryable", "kind"),
    [
        (400, False, sdk.BadRequestError),
        (401, False, sdk.AuthenticationError),
        (403, False, sdk.PermissionDeniedError),
        (404, False, sdk.NotFoundError),
        (409, True, sdk.ConflictError),
        (422, False, sdk.UnprocessableEntityError),
        (429, True, sdk.RateLimitError),
        (402, False, sdk.APIStatusError),
        (408, True, sdk.APIStatusError),
        (500, True, sdk.InternalServerError),
        (502, True, sdk.InternalServerError),
        (503, True, sdk.InternalServerError),
    ],
)
async def test_http_status_errors(
    mock: respx.MockRouter, status: int, retryable: bool, kind: type[sdk.APIStatusError]
) -> None:
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(
            status,
            json={"error": {"message": "nope", "code": status}},
            headers={"x-request-id": "req_123"},
        )
    )
    with pytest.raises(TransportError) as info:
        await collect(OpenAIBackend(base_url=BASE))
    err = info.value
    assert type(err) is kind
    assert (err.status, err.retryable, err.retry_after) == (status, retryable, None)
    assert isinstance(err, sdk.APIStatusError) and err.status_code == status
    assert err.body == {"message": "nope", "code": status}  # the error object, as openai's
    assert err.request_id == "req_123"
    assert isinstance(err.response, httpx.Response) and err.response.status_code == status
    assert f"HTTP {status}" in str(err)


async def test_a_status_error_with_a_text_body(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(return_value=httpx.Response(503, text="overloaded"))
    with pytest.raises(sdk.InternalServerError) as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert info.value.body == "overloaded"
    assert info.value.request_id is None


@pytest.mark.parametrize(("said", "retryable"), [("true", True), ("false", False)])
async def test_x_should_retry_is_obeyed(mock: respx.MockRouter, said: str, retryable: bool) -> None:
    status = 400 if retryable else 503
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(status, headers={"x-should-retry": said}, text="x")
    )
    with pytest.raises(TransportError) as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert info.value.retryable is retryable


async def test_connection_and_timeout_errors_have_classes_of_their_own(
    mock: respx.MockRouter,
) -> None:
    mock.post("/chat/completions").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(sdk.APIConnectionError) as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert not isinstance(info.value, sdk.APITimeoutError)
    assert info.value.status is None and info.value.retryable
    mock.post("/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(sdk.APITimeoutError):
        await collect(OpenAIBackend(base_url=BASE))


async def test_retry_after_seconds(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(429, headers={"Retry-After": "7"}, text="slow down")
    )
    with pytest.raises(TransportError) as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert info.value.retry_after == 7.0


async def test_retry_after_http_date(mock: respx.MockRouter) -> None:
    import time

    when = formatdate(time.time() + 120, usegmt=True)
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(503, headers={"Retry-After": when})
    )
    with pytest.raises(TransportError) as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert info.value.retry_after is not None
    assert 100 < info.value.retry_after <= 120


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
        ("0", 0.0),
        ("2.5", 2.5),
        ("-3", 0.0),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 60.0),
        ("Wed, 21 Oct 2015 07:26:00 GMT", 0.0),  # in the past
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 60.0),  # obsolete RFC 850 form
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    now = 1445412420.0  # Wed, 21 Oct 2015 07:27:00 GMT
    assert parse_retry_after(value, now=now) == expected


async def test_connection_drop_mid_stream(mock: respx.MockRouter) -> None:
    body = Body(DOC_EVENTS[:2], error=httpx.RemoteProtocolError("peer closed connection"))
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    seen: list[Delta] = []
    with pytest.raises(TransportError, match="mid-stream") as info:
        async for d in OpenAIBackend(base_url=BASE).generate(request()):
            seen.append(d)  # noqa: PERF401 - the loop raises midway
    assert seen == [Delta(text='{"a"')]
    assert info.value.retryable and info.value.status is None
    assert body.closed


async def test_connection_refused(mock: respx.MockRouter) -> None:
    mock.post("/chat/completions").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(TransportError, match="before the stream began") as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert info.value.retryable and info.value.status is None


async def test_closing_the_generator_closes_the_response_at_once(mock: respx.MockRouter) -> None:
    body = Body([*DOC_EVENTS[:2], *[data({"content": " "}) for _ in range(50)], DOC_EVENTS[-1]])
    mock.post("/chat/completions").mock(return_value=httpx.Response(200, headers=SSE, stream=body))
    gen = OpenAIBackend(base_url=BASE).generate(request())
    assert await gen.__anext__() == Delta(text='{"a"')
    assert not body.closed
    await gen.aclose()  # type: ignore[attr-defined]
    assert body.closed
    assert body.pulled == 2  # nothing read after the delta that was taken


async def test_a_stale_keep_alive_connection_is_resent_once(mock: respx.MockRouter) -> None:
    stale = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    route = mock.post("/chat/completions").mock(
        side_effect=[stale, httpx.Response(200, headers=SSE, content=b"".join(DOC_EVENTS))]
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == DOC_DELTAS
    assert route.call_count == 2


async def test_a_second_stale_connection_is_an_error(mock: respx.MockRouter) -> None:
    stale = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    route = mock.post("/chat/completions").mock(side_effect=[stale, stale])
    with pytest.raises(TransportError, match="before the stream began") as info:
        await collect(OpenAIBackend(base_url=BASE))
    assert info.value.retryable
    assert route.call_count == 2


@pytest.mark.parametrize("split", [None, 5])
async def test_a_compressed_event_stream_is_decoded(
    mock: respx.MockRouter, split: int | None
) -> None:
    packed = gzip.compress(b"".join(DOC_EVENTS))
    parts = (
        [packed] if split is None else [packed[i : i + split] for i in range(0, len(packed), split)]
    )
    headers = {**SSE, "content-encoding": "gzip"}
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=headers, stream=Body(parts))
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == DOC_DELTAS


async def test_the_content_type_is_read_without_case_or_parameters(mock: respx.MockRouter) -> None:
    headers = {"content-type": "Text/Event-Stream; charset=utf-8"}
    mock.post("/chat/completions").mock(
        return_value=httpx.Response(200, headers=headers, content=b"".join(DOC_EVENTS))
    )
    assert await collect(OpenAIBackend(base_url=BASE)) == DOC_DELTAS


@pytest.mark.parametrize(
    "parts",
    [
        [DOC_EVENTS[1], b"data: " + b"x" * 200],  # a line that never ends
        [DOC_EVENTS[1], b"data: " + b"x" * 150 + b"\n", b"data: " + b"x" * 150 + b"\n\n"],
    ],
    ids=["line", "event"],
)
async def test_an_event_over_the_size_limit_is_a_transport_error(parts: list[bytes]) -> None:
    body = Body([*parts, b"x" * 10_000, b"never read\n\n"])
    response = httpx.Response(200, headers=SSE, stream=body)
    released = []

    async def open_response() -> Opened:
        async def release() -> None:
            released.append(True)

        return response, release

    seen = []
    with pytest.raises(TransportError, match=r"malformed event stream.*over 256 bytes") as info:
        async for delta in stream_deltas(open_response, ChunkDecoder(), max_size=256):
            seen.append(delta)  # noqa: PERF401 - the loop raises midway
    assert seen == [Delta(text='{"a"')]
    assert not info.value.retryable
    assert body.closed and released == [True]
    assert body.pulled < len(body.parts)  # it stopped reading at the limit
